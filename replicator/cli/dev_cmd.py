"""``mirrorflow dev up|down|status`` and ``mirrorflow demo``: the local environment."""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

from replicator.cli.common import add_home_arg, dev_ports
from replicator.cli.output import as_json, say, table
from replicator.config import CONFIG_ENV, load_config
from replicator.demo import seed_demo_topics
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
    """The local demo: clusters up, demo topics with records, state DB ready, status."""
    say("== 1/3 local clusters")
    ports = dev_ports()
    dev_up(args.home, ports, progress=say)
    config = load_config(dev_config_path(args.home), {})
    say("== 2/3 demo topics on primary")
    seed_demo_topics(config.cluster("primary").client_properties(), progress=say)
    say("== 3/3 state database")
    from replicator.state.repository import register_routes  # SQLAlchemy: only when needed
    from replicator.state.store import StateStore

    store = StateStore(config.state.url)
    try:
        with store.session() as session:
            routes = register_routes(session, config.routes)
    finally:
        store.close()
    say(f"routes registered: {', '.join(routes)} ({config.state.url})")
    say("")
    _print_status(dev_status(args.home, ports))
    path = dev_config_path(args.home).resolve()
    say(f"\nconfig: {path}\nstop with: mirrorflow dev down --home {args.home}")
    return 0
