"""``mirrorflow status``: a table per route, topic and partition."""

from __future__ import annotations

import argparse
import dataclasses

from replicator.cli.commands import Command, Option
from replicator.cli.common import CONFIG, JSON, config_of, routes_of
from replicator.cli.output import as_json, table


def show_status(args: argparse.Namespace) -> int:
    """Print the routes' partitions; exit 0 even when lagging (it is a report, not a check)."""
    from replicator.kafka.route_status import route_status

    config = config_of(args)
    routes = routes_of(config, args.route)
    rows = [s for route in routes for s in route_status(config, route)]
    if args.json:
        print(as_json([{**dataclasses.asdict(s), "lag": s.lag} for s in rows]))
        return 0
    print(table(
        ["route", "guarantee", "topic", "partition", "source end", "committed", "lag", "last replicated (UTC)"],
        [[s.route, s.guarantee, s.topic, s.partition, s.end_offset, s.committed, s.lag,
          s.last_replicated.strftime("%Y-%m-%d %H:%M:%S") if s.last_replicated else None] for s in rows],
    ))
    return 0


STATUS = Command(
    "status", show_status,
    help="per route and partition: guarantee, end offset, committed, lag, last copy",
    options=(
        CONFIG,
        Option("--route", action="append", metavar="NAME", help="only this route (repeatable)"),
        JSON,
    ),
)
