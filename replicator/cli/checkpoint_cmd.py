"""``mirrorflow checkpoint``: translate the source's consumer-group offsets to the target, per route."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from replicator.cli.commands import Command, Option
from replicator.cli.common import CONFIG, config_of, every_route, routes_of
from replicator.cli.output import as_json, table


def run_checkpoint(args: argparse.Namespace) -> int:
    """Read and translate every route first (a bad name changes nothing), then write; exit 1 on any failure."""
    from replicator.errors import ClusterError, ConfigError
    from replicator.runbooks.checkpoints.read import prepare
    from replicator.runbooks.checkpoints.run import apply

    config = config_of(args)
    routes = routes_of(config, dict.fromkeys(args.route or ()))
    if not routes:
        raise ConfigError("the config has no routes to checkpoint")
    prepared, failed = [], False
    for route in routes:
        try:
            prepared.append(prepare(config, route.name, args.group))
        except ClusterError as exc:  # this route cannot be read; the others still can
            sys.stderr.write(f"mirrorflow: error: {exc}\n")
            failed = True
    summaries = []
    for item in prepared:
        run = apply(item, dry_run=args.dry_run)
        summaries.append(run.summary())
        if not args.json:
            print(render(run))
        if run.error or run.failed_groups:
            failed = True
            problems = ([run.error] if run.error else []) + [f"group {g}: {e}" for g, e in run.failed_groups.items()]
            sys.stderr.write(f"mirrorflow: error: route {run.route}: " + "\n".join(problems) + "\n")
    if args.json:
        print(as_json(summaries))
    return 1 if failed else 0


def render(run: Any) -> str:
    """A run as a heading and a table (``run`` is a CheckpointRun)."""
    heading = (f"route {run.route}: {run.source} -> {run.target}{' (dry run)' if run.dry_run else ''}: "
               f"{len(run.groups)} group{'s' if len(run.groups) != 1 else ''}, "
               f"{len(run.checkpoints)} checkpoint{'s' if len(run.checkpoints) != 1 else ''}")
    if not run.checkpoints:
        return f"{heading}\n(no selected group has committed offsets on this route's topics)\n"
    outcomes = run.target_offsets_by_key()
    rows = []
    for c in run.checkpoints:
        entry = outcomes.get((c.group, c.topic, c.partition))
        rows.append([c.group, c.topic, c.partition, c.source_offset, "->", c.target_topic, c.target_offset,
                     c.describe(), entry.describe() if entry else "-"])
    lines = [heading, table(["group", "topic", "partition", "source offset", "", "target topic", "target offset",
                             "translation", f"group on {run.target}"], rows)]
    lines += [f"group {g} left as it is on {run.target}: it has active members there"
              for g in sorted(run.skipped_groups)]
    return "\n".join(lines) + "\n"


CHECKPOINT = Command(
    "checkpoint", run_checkpoint,
    help="translate consumer-group offsets through the offset syncs; store them, optionally commit them",
    description="""
        For each route: read the committed offsets of the source's consumer groups that match
        routes[].checkpoints (groups, exclude_groups), translate each through the route's offset syncs, write
        them to the topic mirrorflow-checkpoints.<route>.internal on the target and to the state DB, and, with
        checkpoints.write_target_groups, commit them into the target's groups that have no active member (never
        moving one backwards). Prints, per group and partition, source offset -> target offset and whether it is
        exact or how many records may repeat. Exit 0 when done, 1 when a cluster could not be read or a write
        failed, 2 for a bad config, an unknown route or group (nothing changed).
    """,
    options=(
        CONFIG,
        every_route("checkpoint"),
        Option("--group", action="append", metavar="GROUP",
               help="only this consumer group (repeatable; it must exist on the source and pass the route's group "
               "filters)"),
        Option("--dry-run", action="store_true", help="translate and print, write nothing"),
        Option("--json", action="store_true", help="print each run's summary as JSON"),
    ),
)
