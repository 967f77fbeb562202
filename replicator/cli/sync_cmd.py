"""``mirrorflow sync``: plan, then apply, what brings each route's target in step with its source."""

from __future__ import annotations

import argparse
import sys

from replicator.cli.commands import Command, Option
from replicator.cli.common import CONFIG, config_of, every_route, routes_of
from replicator.cli.output import as_json, table


def run_sync(args: argparse.Namespace) -> int:
    """Sync the routes one after the other; exit 1 if any action (or a whole route) failed."""
    from replicator.errors import ClusterError, ConfigError
    from replicator.runbooks.sync.run import execute, prepare

    config = config_of(args)
    routes = routes_of(config, args.route)
    if not routes:
        raise ConfigError("the config has no routes to sync")
    summaries, failed = [], False
    for route in routes:
        try:
            prepared = prepare(config, route.name)
        except ClusterError as exc:  # this route cannot be planned; the others still can
            sys.stderr.write(f"mirrorflow: error: {exc}\n")
            failed = True
            continue
        if not args.json:
            print(f"route {route.name}: {route.source} -> {route.target}{' (dry run)' if args.dry_run else ''}")
            print(prepared.plan.render())
        run = execute(prepared, dry_run=args.dry_run)
        summaries.append(run.summary())
        if not args.json and (run.failures or (run.changes and not args.dry_run)):
            print()
            print(table(["action", "resource", "outcome", "error"],
                        [[c.kind, c.resource, c.outcome, c.error] for c in run.changes]))
        if not args.json:
            print()
        if run.failures:
            failed = True
            rest = " (the others were applied)" if len(run.failures) < len(run.changes) else ""
            sys.stderr.write(f"mirrorflow: error: route {route.name}: {len(run.failures)} of {len(run.changes)}"
                             f" sync actions failed{rest}:\n{run.failure_report()}\n")
    if args.json:
        print(as_json(summaries))
    return 1 if failed else 0


SYNC = Command(
    "sync", run_sync,
    help="create missing target topics, grow partitions, copy topic configs and ACLs (plan, then apply)",
    description="""
        For each route: print the plan as a table, apply it (unless --dry-run), print each action's outcome and
        record the run in the state DB. Exit 0 when everything applied, 1 when an action failed (the others are
        still applied), 2 for a bad config.
    """,
    options=(
        CONFIG,
        every_route("sync"),
        Option("--dry-run", action="store_true", help="print the plan, change nothing"),
        Option("--json", action="store_true", help="print each run's summary as JSON instead of tables"),
    ),
)
