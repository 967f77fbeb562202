"""``mirrorflow dev up|down|status`` and ``mirrorflow demo``: the local environment."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime as dt
import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from replicator.cli.commands import Command, Group, Option
from replicator.cli.common import HOME, JSON, dev_ports
from replicator.cli.output import as_json, say, table
from replicator.config import CONFIG_ENV, Config, RouteConfig, load_config
from replicator.dev.airflow_local import (
    DEFAULT_PORT,
    PORT_ENV,
    AdminLogin,
    AirflowStatus,
    LocalAirflow,
    parse_port,
)
from replicator.dev.airflow_rest import DagReport
from replicator.dev.demo import prepare_state, seed_demo_topics
from replicator.dev.devenv import (
    SCRAM_USER,
    dev_clusters,
    dev_config_path,
    dev_down,
    dev_status,
    dev_up,
    secure_listener,
    write_dev_config,
)
from replicator.dev.localcluster import ClusterStatus
from replicator.errors import ClusterError

if TYPE_CHECKING:
    from replicator.kafka.route_status import PartitionStatus


def _print_status(statuses: list[ClusterStatus]) -> None:
    rows = [
        [s.name, s.bootstrap_servers, s.cluster_id, s.pid, "running" if s.running else "stopped",
         ", ".join(s.topics) or "-"]
        for s in statuses
    ]
    say(table(["cluster", "bootstrap.servers", "cluster id", "pid", "state", "topics"], rows))


def _local_airflow(home: Path, starting: bool = False) -> LocalAirflow:
    """The Airflow of the dev home: where it runs, else on $MIRRORFLOW_AIRFLOW_PORT."""
    port = parse_port(os.environ.get(PORT_ENV))
    airflow = LocalAirflow.of_home(home, port)
    if starting and airflow.spec.port != port:
        say(f"airflow runs on port {airflow.spec.port}; {PORT_ENV}={port} applies after `dev down`")
    return airflow


def _remove_airflow(airflow: LocalAirflow) -> None:
    airflow.stop(progress=say)
    if airflow.is_set_up():
        shutil.rmtree(airflow.spec.airflow_home)
        say("deleted airflow's metadata DB, logs and login")


def _say_login(login: AdminLogin) -> None:
    if login.new_password is not None:
        say(f"  login: {login.user} / {login.new_password}   <- shown this once; "
            f"kept in {login.password_file}")
    else:
        say(f"  login: {login.user}, password in {login.password_file}")


@contextlib.contextmanager
def _login_shown_on_failure(login: AdminLogin | None) -> Iterator[None]:
    """A new admin password is shown even when the command fails after creating it."""
    try:
        yield
    except BaseException:
        if login is not None and login.new_password is not None:
            _say_login(login)
        raise


def _start_airflow(
    home: Path, ports: dict[str, int], clean: bool
) -> tuple[LocalAirflow, AdminLogin]:
    """Launch Airflow first, so that it boots while the clusters start."""
    if clean:
        _remove_airflow(_local_airflow(home))
    airflow = _local_airflow(home, starting=True)
    write_dev_config(home, ports)  # what its tasks read as $MIRRORFLOW_CONFIG
    return airflow, airflow.launch(progress=say)


def _print_airflow(airflow: LocalAirflow, login: AdminLogin, report: DagReport) -> None:
    spec = airflow.spec
    say(f"\nairflow: {spec.url}   (UI and REST API; logs {spec.airflow_home}/*.log)")
    _say_login(login)
    if report.dags:
        say(table(["DAG", "schedule", "state", "file"],
                  [[d.dag_id, d.schedule, "paused" if d.paused else "active", d.file]
                   for d in report.dags]))
    for file, error in report.import_errors:
        say(f"  import error in dags/{file}: {error}")
    for file in report.unregistered:
        say(f"  dags/{file}: no DAG registered yet; see {spec.log_file('dag-processor')}")


def up_cmd(args: argparse.Namespace) -> int:
    """Start both clusters (and Airflow with --airflow) and print where they are."""
    ports = dev_ports()
    secure: bool | None = getattr(args, "secure", None)  # --secure, --plaintext, or as last time
    if args.clean:
        from replicator.dev.demo_worker import stop_worker

        if stop_worker(args.home):  # it would copy into clusters whose data is about to go
            say("stopped the demo's replication worker")
    if not args.airflow:
        if args.clean:
            _remove_airflow(_local_airflow(args.home))
        _print_status(dev_up(args.home, ports, clean=args.clean, progress=say, secure=secure))
    else:
        airflow, login = _start_airflow(args.home, ports, args.clean)
        with _login_shown_on_failure(login):
            statuses = dev_up(args.home, ports, clean=args.clean, progress=say, secure=secure)
            report = airflow.wait_ready(progress=say)
        _print_status(statuses)
        _print_airflow(airflow, login, report)
    _print_security(args.home, ports)
    path = dev_config_path(args.home).resolve()
    say(f"\nconfig for these clusters: {path}\n  export {CONFIG_ENV}={path}")
    return 0


def _print_security(home: Path, ports: dict[str, int]) -> None:
    """Where the TLS listeners are and what a client needs (never the password itself)."""
    clusters = dev_clusters(home, ports)
    listeners = [f"{c.spec.name} {secure_listener(c)}" for c in clusters if secure_listener(c)]
    if listeners:
        say(f"\nTLS listeners (SASL_SSL, SCRAM-SHA-256/512): {', '.join(listeners)}\n"
            f"  user {SCRAM_USER}, password in {(home / 'dev' / 'secrets' / 'scram.password').resolve()}; "
            f"CA {(home / 'dev' / 'tls' / 'ca.pem').resolve()}\n"
            "  the config below uses them (`mirrorflow dev up --plaintext` turns them off)")


def down_cmd(args: argparse.Namespace) -> int:
    """Stop both clusters."""
    from replicator.dev.demo_worker import stop_worker

    if stop_worker(args.home):
        say("stopped the demo's replication worker")
    airflow = _local_airflow(args.home)
    if args.clean:
        _remove_airflow(airflow)
    else:
        airflow.stop(progress=say)
    stopped = dev_down(args.home, dev_ports(), clean=args.clean, progress=say)
    if not stopped:
        say("no local cluster was running")
    return 0


def start_worker_cmd(args: argparse.Namespace) -> int:
    """Start the demo's replication worker in the background (after a failover drill or an SLA drill stopped it)."""
    from replicator.dev.demo_worker import start_worker, worker_log, worker_pid
    from replicator.errors import UsageError

    config = dev_config_path(args.home)
    if not config.is_file():
        raise UsageError(f"no local environment under {args.home} ({config} is missing): run `mirrorflow dev up` "
                         "or `mirrorflow demo` first")
    running = worker_pid(args.home)
    pid = start_worker(args.home, config)
    say(f"the demo's replication worker {'was already running' if running else 'started'} "
        f"(pid {pid}, log {worker_log(args.home).resolve()})")
    return 0


def stop_worker_cmd(args: argparse.Namespace) -> int:
    """Stop the demo's replication worker (SIGTERM: it commits what the target acknowledged, then exits)."""
    from replicator.dev.demo_worker import stop_worker

    say("stopped the demo's replication worker" if stop_worker(args.home) else "no demo worker was running")
    return 0


def _airflow_state(status: AirflowStatus) -> str:
    stopped = [name for name, pid in status.pids.items() if pid is None]
    if len(stopped) == len(status.pids):
        return "stopped"
    if stopped:
        return f"partly running ({', '.join(stopped)} stopped)"
    unhealthy = [name for name, state in status.health.items() if state != "healthy"]
    if not status.health:
        return "running, API not answering"
    return f"running, {', '.join(unhealthy)} unhealthy" if unhealthy else "running, healthy"


def status_cmd(args: argparse.Namespace) -> int:
    """Show both clusters (and Airflow once set up); exit 1 when something is down (for scripts).

    Airflow is optional: stopped is fine, running but not healthy is not.
    """
    statuses = dev_status(args.home, dev_ports())
    airflow = _local_airflow(args.home)
    shown = airflow.status() if airflow.is_set_up() else None
    if args.json:
        entries: list[Any] = [dataclasses.asdict(s) for s in statuses]
        print(as_json(entries + ([dataclasses.asdict(shown)] if shown else [])))
    else:
        _print_status(statuses)
        if shown:
            pids = ", ".join(f"{name} {pid or '-'}" for name, pid in shown.pids.items())
            rows = [[shown.url, _airflow_state(shown), pids]]
            say("\n" + table(["airflow", "state", "pids"], rows))
    airflow_ok = shown is None or _airflow_state(shown) in ("stopped", "running, healthy")
    return 0 if all(s.running for s in statuses) and airflow_ok else 1


def _wait_caught_up(config: Config, route: RouteConfig, home: Path) -> list[PartitionStatus]:
    """Poll the route's status until nothing is left to copy (90 s at most)."""
    from replicator.dev.demo_worker import worker_log
    from replicator.kafka.route_status import route_status

    deadline = time.monotonic() + 90
    while True:
        try:
            rows = route_status(config, route)
        except ClusterError as exc:
            if not exc.retriable or time.monotonic() > deadline:
                raise
            say("  waiting for the group coordinator of the new cluster ...")
            time.sleep(2)
            continue
        lag = sum(r.lag for r in rows)
        say(f"  {route.name}: {len(rows)} partitions, {lag} records still to copy")
        if rows and lag == 0:
            return rows
        if time.monotonic() > deadline:
            raise ClusterError(f"the demo route did not catch up in 90 s; see {worker_log(home)}")
        time.sleep(2)


def demo_cmd(args: argparse.Namespace) -> int:
    """The local demo: clusters (and Airflow) up, demo topics, replication running, status.

    Airflow boots while the clusters start, the topics fill and the route catches up,
    so it adds little wall time; ``--no-airflow`` leaves it out.
    """
    from replicator.dev.demo_worker import start_worker, worker_log

    total, ports = (5 if args.airflow else 4), dev_ports()
    say(f"== 1/{total} local clusters" + (" and Airflow" if args.airflow else ""))
    airflow, login = _start_airflow(args.home, ports, clean=False) if args.airflow else (None, None)
    with _login_shown_on_failure(login):
        dev_up(args.home, ports, progress=say)
        config_path = dev_config_path(args.home)
        config = load_config(config_path, {})
        say(f"== 2/{total} demo topics on primary")
        seeded = dt.datetime.now(dt.UTC).replace(second=0, microsecond=0)
        seed_demo_topics(config.cluster("primary").client_properties(), progress=say)
        say(f"== 3/{total} replication primary -> backup")
        prepare_state(config)
        pid = start_worker(args.home, config_path)
        say(f"mirrorflow run started in the background "
            f"(pid {pid}, log {worker_log(args.home).resolve()})")
        rows = _wait_caught_up(config, config.routes[0], args.home)
        if airflow is not None:
            say(f"== 4/{total} Airflow")
            report = airflow.wait_ready(progress=say)
    say(f"== {total}/{total} status")
    _print_status(dev_status(args.home, ports))
    say("")
    say(table(["route", "topic", "partition", "source end", "committed", "lag"],
              [[r.route, r.topic, r.partition, r.end_offset, r.committed, r.lag] for r in rows]))
    if airflow is not None and login is not None:
        _print_airflow(airflow, login, report)
    say(f"\nconfig: {config_path.resolve()}\n"
        f"more:   mirrorflow status --config {config_path.resolve()}\n"
        f"audit:  mirrorflow audit --config {config_path.resolve()} --route {config.routes[0].name} "
        f"--from {seeded.isoformat()} --to now\n"
        f"        (Spark local[2]; on a Spark cluster of yours add --master spark://HOST:7077, yarn or k8s://...: "
        f"docs/operations.md#the-audits-and-backfills-on-a-spark-cluster)\n"
        f"stop:   mirrorflow dev down --home {args.home}   "
        f"(stops the worker{', Airflow' if airflow else ''} and both clusters)")
    return 0


DEV = Group("dev", help="local Kafka clusters primary and backup on loopback", commands=(
    Command("up", up_cmd, help="start both clusters (harmless when running); writes mirrorflow.yaml", options=(
        HOME,
        Option("--clean", action="store_true", help="delete their data (and Airflow's) first"),
        Option("--airflow", action="store_true",
               help=f"also run Airflow 3 with the repo's dags/ on 127.0.0.1 (env {PORT_ENV}, default {DEFAULT_PORT})"),
        Option("--secure", action="store_true", default=argparse.SUPPRESS,
               help="also a TLS listener (SASL_SSL, SCRAM) on each cluster's port + 2, with a throwaway CA and a "
                    "generated password; the written config uses it (kept for later `dev up` until --plaintext)"),
        Option("--plaintext", dest="secure", action="store_false", default=argparse.SUPPRESS,
               help="drop the TLS listeners of --secure (restarts running clusters)"),
    )),
    Command("down", down_cmd, help="stop both clusters and Airflow; data is kept unless --clean", options=(
        HOME,
        Option("--clean", action="store_true", help="also delete their data and Airflow's"),
    )),
    Command("status", status_cmd, help="cluster id, address, pid and topics of each cluster; Airflow's URL and state",
            options=(HOME, JSON)),
    Command("start-worker", start_worker_cmd,
            help="run the demo's replication worker in the background again (after a failover or SLA drill)",
            options=(HOME,)),
    Command("stop-worker", stop_worker_cmd, help="stop the demo's replication worker (clusters keep running)",
            options=(HOME,)),
))

DEMO = Command(
    "demo", demo_cmd,
    help="start the local clusters, seed demo topics, prepare the state DB, show status",
    options=(
        HOME,
        Option("--no-airflow", dest="airflow", action="store_false",
               help=f"skip the local Airflow (saves about 0.7 GB of memory; port: env {PORT_ENV})"),
    ),
)
