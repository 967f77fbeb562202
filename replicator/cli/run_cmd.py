"""``mirrorflow run``: replicate routes in the foreground until SIGTERM or Ctrl-C."""

from __future__ import annotations

import argparse
import logging
import re
import signal
import sys
import threading
from typing import TYPE_CHECKING

from replicator.cli.commands import Command, Option
from replicator.cli.common import CONFIG, config_of, every_route, routes_of
from replicator.domain.secrets import redact

if TYPE_CHECKING:
    from replicator.config import Config, RouteConfig
    from replicator.state.store import StateStore
    from replicator.worker.route_worker import RouteWorker
    from replicator.worker.timeouts import WorkerTimeouts

log = logging.getLogger(__name__)

WORKER_ID_ENV = "MIRRORFLOW_WORKER_ID"
_WORKER_ID = re.compile(r"^[A-Za-z0-9._-]{1,200}$")


def worker_id_of(args: argparse.Namespace) -> str | None:
    """The ``--worker-id`` (static group membership), checked; None when not given."""
    from replicator.errors import UsageError

    if args.worker_id is None:
        return None
    if not _WORKER_ID.match(args.worker_id):
        raise UsageError(f"--worker-id {args.worker_id!r}: use 1 to 200 letters, digits, '.', '_' or '-'")
    return str(args.worker_id)


def run_routes(args: argparse.Namespace) -> int:
    """Start a worker thread per route; a stop signal drains and commits every one of them."""
    from replicator.worker import metrics
    from replicator.worker.interpreter import freeze_startup_heap, share_the_gil_finely

    config = config_of(args)
    worker_id = worker_id_of(args)
    routes = routes_of(config, args.route)
    if not routes:
        from replicator.errors import ConfigError

        raise ConfigError("the config has no routes to run")
    share_the_gil_finely()
    stop = threading.Event()
    started = _start(config, routes, stop)
    if started is None:
        return 0  # stopped while the state database or a cluster was away: nothing started
    store, timeouts = started
    if args.metrics_port:
        metrics.serve(args.metrics_port)
    errors: list[BaseException] = []

    def work(worker: RouteWorker) -> None:
        try:
            worker.run(stop)
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)
            stop.set()

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    workers = [worker_for(r)(config, r, store, worker_id=worker_id, timeouts=timeouts[r.name]) for r in routes]
    freeze_startup_heap()  # after the last of start-up's imports and objects, before any copy
    threads = [threading.Thread(target=work, args=(worker,), name=f"route-{worker.route.name}") for worker in workers]
    for thread in threads:
        thread.start()
    while any(t.is_alive() for t in threads):
        for thread in threads:
            thread.join(timeout=0.2)
    store.close()
    if errors:
        raise as_route_failure(errors[0])
    return 0


def worker_for(route: RouteConfig) -> type[RouteWorker]:
    """The worker class of ``route``'s guarantee."""
    from replicator.worker.exactly_once import ExactlyOnceWorker
    from replicator.worker.route_worker import RouteWorker

    return ExactlyOnceWorker if route.guarantee == "exactly-once" else RouteWorker


def _start(config: Config, routes: list[RouteConfig],
           stop: threading.Event) -> tuple[StateStore, dict[str, WorkerTimeouts]] | None:
    """The state DB first, then each route's clusters, each waited for while it does not answer: the store and
    each route's worker's timeouts (read from its target); None when a stop signal came meanwhile (nothing
    started)."""
    from replicator.worker.startup import open_state

    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGTERM, signal.SIGINT)}
    timeouts = None
    try:
        store = open_state(config, routes, stop)  # migrated once, before the threads share it
        if store is not None:
            timeouts = _clusters_answer(config, routes, store, stop)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if store is None or timeouts is None:
        log.warning("stopped before starting: a stop came while the state database or a cluster did not answer "
                    "routes=%s", ",".join(r.name for r in routes))
        return None
    for route in routes:
        sys.stderr.write(
            f"mirrorflow run: route {route.name}: {route.source} -> {route.target}, topics "
            f"{list(route.topics)}, policy {route.policy}, "
            f"source {redact(config.cluster(route.source).properties)}, "
            f"target {redact(config.cluster(route.target).properties)}\n"
        )
    return store, timeouts


def _clusters_answer(config: Config, routes: list[RouteConfig], store: StateStore,
                     stop: threading.Event) -> dict[str, WorkerTimeouts] | None:
    """Each route's worker's timeouts once every route's clusters answered; None (the store closed) when a stop
    came first, and the store closed on an error."""
    from replicator.worker.preflight import wait_for_clusters

    timeouts: dict[str, WorkerTimeouts] = {}
    try:
        for route in routes:
            answered = wait_for_clusters(config, route, stop)
            if answered is None:
                break
            timeouts[route.name] = answered
        else:
            return timeouts
    except BaseException:
        store.close()
        raise
    store.close()
    return None


def as_route_failure(exc: BaseException) -> BaseException:
    """A worker thread's error as the one line the CLI prints: ours as they are, anything else
    (a bug) named by its type, with the traceback kept for ``--log-level debug``."""
    from replicator.errors import MirrorFlowError
    from replicator.worker.route_worker import RouteFailed

    if isinstance(exc, (MirrorFlowError, KeyboardInterrupt)):
        return exc
    log.debug("worker thread failed", exc_info=exc)
    return RouteFailed(f"worker stopped on an internal error: {type(exc).__name__}: {exc}")


RUN = Command(
    "run", run_routes,
    help="replicate routes continuously (foreground; SIGTERM to stop)",
    options=(
        CONFIG,
        every_route("run"),
        Option("--metrics-port", type=int, metavar="P", help="serve Prometheus metrics on this port"),
        Option("--worker-id", metavar="ID", env=WORKER_ID_ENV,
               help=f"a stable identity for this worker (env {WORKER_ID_ENV}): a worker restarted under the same "
               "id (systemd, a Kubernetes StatefulSet) takes its partitions back at once instead of after the "
               "group's session timeout; two running workers of a route must never share one"),
    ),
)
