"""Run RouteWorkers in threads over the fakes of ``replicator.testing`` (no brokers)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from replicator.config import parse_config
from replicator.state.store import StateStore
from replicator.testing import FakeKafka
from replicator.worker.route_worker import RouteWorker
from replicator.worker.timeouts import WorkerTimeouts

FAST = WorkerTimeouts(handover=2.0, shutdown=2.0, retry=0.05, backpressure_report=0.2, refresh=0.1, rejoin=0.05,
                      stalled=1.0, close=0.5, outage_hold=0.5, lag=0.3, assignment=0.3,
                      client_still=1.0, quiet=0.5)  # quiet: every test's idle partitions go alone again


def route_config(kafka: FakeKafka, topics: str = "[orders]", **route: str):  # type: ignore[no-untyped-def]
    """A config with one route ``r`` from ``source`` to ``target`` over ``topics`` (options as YAML)."""
    options = "".join(f", {key}: {value}" for key, value in route.items())
    return parse_config(kafka.config_yaml(
        f"  - {{name: r, source: source, target: target, topics: {topics}, sla: {{heartbeats: false}}{options}}}\n"))


STARTED: list[WorkerThread] = []  # ended by ``end_leftovers`` after each test


class WorkerThread:
    """A RouteWorker running in a thread; ``error`` holds what ended it."""

    def __init__(self, kafka: FakeKafka, process: str, config, timeouts: WorkerTimeouts = FAST,  # type: ignore[no-untyped-def]
                 worker_id: str | None = None, kind: type[RouteWorker] = RouteWorker,
                 store: StateStore | None = None) -> None:
        self.stop = threading.Event()
        self.kafka, self.process = kafka, process
        self.worker = kind(config, config.routes[0], store, batch_size=100, worker_id=worker_id,
                           clients=kafka.clients(process), timeouts=timeouts)
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name=f"worker-{process}", daemon=True)
        self.thread.start()
        STARTED.append(self)

    def _run(self) -> None:
        try:
            self.worker.run(self.stop)
        except BaseException as exc:  # noqa: BLE001 - the test looks at it
            self.error = exc

    def finish(self, timeout: float = 30) -> BaseException | None:
        """Stop it (as SIGTERM does) and wait; returns the error that ended it, if any."""
        self.stop.set()
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "worker did not stop"
        return self.error


def end_leftovers() -> None:
    """Kill the fake process of every worker a test left running (it failed before ``finish``): a worker left
    behind would go on publishing to the process-wide metrics the next test reads (seen in CI: a test that timed
    out left a worker owning 2 partitions, and the next test counted its gauges)."""
    while STARTED:
        left = STARTED.pop()
        if left.thread.is_alive():
            left.kafka.kill(left.process)
            left.stop.set()
            left.thread.join(10)
            for helper in threading.enumerate():  # its bounded closes meet the kill too
                if helper.name == "close-client":
                    helper.join(2)


def wait_until(condition: Callable[[], bool], timeout: float = 30, what: str = "condition",
               alive: tuple[WorkerThread, ...] = ()) -> None:
    """Poll ``condition`` until it holds (an event, not a fixed sleep); fail at once when one of
    the ``alive`` workers ended."""
    deadline = time.monotonic() + timeout
    while not condition():
        for worker in alive:
            assert worker.thread.is_alive(), f"worker ended while waiting for {what}: {worker.error!r}"
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def topic_found_while_the_id_is_held(kafka: FakeKafka, held: WorkerThread, holder: str) -> list[bytes]:
    """Once ``held`` is refused its worker id (process ``holder`` was killed and still holds it), a topic of the
    route's pattern (``orders.late``, 20 records) appears and ``held``'s refresh finds it; then the id is released.
    The new topic's values."""
    wait_until(lambda: held.worker.id_held_since is not None, what="the id refused", alive=(held,))
    values = [f"late-{n}".encode() for n in range(20)]
    kafka["source"].create_topic("orders.late", 1)
    for value in values:
        kafka["source"].append("orders.late", 0, None, value)
    wait_until(lambda: "orders.late" in held.worker.subscription.partitions, what="the new topic subscribed",
               alive=(held,))
    kafka.expire(holder)
    return values
