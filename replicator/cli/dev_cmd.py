"""``mirrorflow dev up|down|status`` and ``mirrorflow demo``: the local environment."""

from __future__ import annotations

import argparse
import dataclasses
import time
from typing import Any

from replicator.cli.common import add_home_arg, dev_ports
from replicator.cli.output import as_json, say, table
from replicator.config import CONFIG_ENV, load_config
from replicator.demo import seed_demo_topics
from replicator.errors import ClusterError
from replicator.devenv import dev_config_path, dev_down, dev_status, dev_up
from replicator.localcluster import ClusterStatus


def register(commands: Any) -> None:
    """Add the ``dev`` command group and ``demo``."""
    dev = commands.add_parser("dev", help="local Kafka clusters primary and backup on loopback")
    sub = dev.add_subparsers(dest="action", metavar="ACTION", required=True)

    up = sub.add_parser("up", help="start both clusters (harmless when running); writes mirrorflow.yaml")
    add_home_arg(up)
    up.add_argument("--clean", action="store_true", help="delete their data first")
    up.set_defaults(handler=up_cmd)

    down = sub.add_parser("down", help="stop both clusters; data is kept unless --clean")
    add_home_arg(down)
    down.add_argument("--clean", action="store_true", help="also delete their data")
    down.set_defaults(handler=down_cmd)

    status = sub.add_parser("status", help="cluster id, address, pid and topics of each cluster")
    add_home_arg(status)
    status.add_argument("--json", action="store_true", help="machine-readable output")
    status.set_defaults(handler=status_cmd)

    demo = commands.add_parser(
        "demo", help="start the local clusters, seed demo topics, prepare the state DB, show status"
    )
    add_home_arg(demo)
    demo.set_defaults(handler=demo_cmd)


def _print_status(statuses: list[ClusterStatus]) -> None:
    rows = [
        [s.name, s.bootstrap_servers, s.cluster_id, s.pid, "running" if s.running else "stopped",
         ", ".join(s.topics) or "-"]
        for s in statuses
    ]
    say(table(["cluster", "bootstrap.servers", "cluster id", "pid", "state", "topics"], rows))


def up_cmd(args: argparse.Namespace) -> int:
    """Start both clusters and print where they are."""
    statuses = dev_up(args.home, dev_ports(), clean=args.clean, progress=say)
    _print_status(statuses)
    path = dev_config_path(args.home).resolve()
    say(f"\nconfig for these clusters: {path}\n  export {CONFIG_ENV}={path}")
    return 0


def down_cmd(args: argparse.Namespace) -> int:
    """Stop both clusters."""
    from replicator.demo_worker import stop_worker

    if stop_worker(args.home):
        say("stopped the demo's replication worker")
    stopped = dev_down(args.home, dev_ports(), clean=args.clean, progress=say)
    if not stopped:
        say("no local cluster was running")
    return 0


def status_cmd(args: argparse.Namespace) -> int:
    """Show both clusters; exit 1 when either is not running (for scripts)."""
    statuses = dev_status(args.home, dev_ports())
    if args.json:
        print(as_json([dataclasses.asdict(s) for s in statuses]))
    else:
        _print_status(statuses)
    return 0 if all(s.running for s in statuses) else 1


def demo_cmd(args: argparse.Namespace) -> int:
    """The local demo: clusters up, demo topics with records, replication running, status."""
    from replicator.control.status import route_status
    from replicator.demo_worker import start_worker, worker_log

    say("== 1/4 local clusters")
    ports = dev_ports()
    dev_up(args.home, ports, progress=say)
    config_path = dev_config_path(args.home)
    config = load_config(config_path, {})
    say("== 2/4 demo topics on primary")
    seed_demo_topics(config.cluster("primary").client_properties(), progress=say)
    say("== 3/4 replication primary -> backup")
    pid = start_worker(args.home, config_path)
    say(f"mirrorflow run started in the background (pid {pid}, log {worker_log(args.home).resolve()})")
    route = config.routes[0]
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
            break
        if time.monotonic() > deadline:
            raise ClusterError(f"the demo route did not catch up in 90 s; see {worker_log(args.home)}")
        time.sleep(2)
    say("== 4/4 status")
    _print_status(dev_status(args.home, ports))
    say("")
    say(table(["route", "topic", "partition", "source end", "committed", "lag"],
              [[r.route, r.topic, r.partition, r.end_offset, r.committed, r.lag] for r in rows]))
    say(f"\nconfig: {config_path.resolve()}\n"
        f"more:   mirrorflow status --config {config_path.resolve()}\n"
        f"stop:   mirrorflow dev down --home {args.home}   (stops the worker and both clusters)")
    return 0
