"""``mirrorflow failover``: move a route's consumer groups to its target, step by step, or release a route."""

from __future__ import annotations

import argparse
from typing import Any

from replicator.cli.commands import Command, Option
from replicator.cli.common import CONFIG, config_of
from replicator.cli.output import table
from replicator.cli.runbook_cmd import fence_options, outcome, point_row, run_and_print, run_options


def run_failover(args: argparse.Namespace) -> int:
    """Run (or resume) the failover, printing a line per step; exit 1 when a step failed."""
    from replicator.runbooks.failover.run import failover_route, release_route, request_of, summary

    config = config_of(args)
    if args.release:
        config.route(args.route)
        held = release_route(config, args.route, print)
        print(f"route {args.route}: released from failover run(s) {', '.join(map(str, held))}; `mirrorflow run` "
              "starts it again" if held else f"route {args.route}: not held by any failover run")
        return 0
    request = request_of(args.route, args.group, args.mode, args.at, args.margin, args.drain_timeout,
                         args.stop_timeout, args.dry_run, args.fence, args.accept_bypass, args.topic)
    return run_and_print(args, lambda progress: failover_route(config, request, args.restart, progress), summary,
                         render)


def render(run: Any) -> str:
    """The resume points and what became of them, then what to do next (``run`` is a FailoverRun)."""
    from replicator.domain.failover_run import next_steps

    rows = [point_row(c.point, outcome(c)) for c in run.commits]
    if not rows:
        rows = [point_row(p, "-") for p in run.points]
    heading = (f"failover{'' if run.run_id is None else f' run {run.run_id}'} of route {run.request.route}: "
               f"{run.source} -> {run.target}: {run.status.value}")
    lines = [heading]
    if rows:
        lines.append(table(["group", "topic", "partition", "source offset", "", "target topic", "target offset",
                            "resume", f"group on {run.target}"], rows))
    return "\n".join([*lines, "", next_steps(run)]) + "\n"


FAILOVER = Command(
    "failover", run_failover,
    help="fail a route over to its target: drain, stop it, commit translated offsets into the target's groups",
    description="""
        Steps, each printed as it runs and stored in the state DB: check the source (reachable: it drains below;
        unreachable: go on, the RPO is counted from the last checkpoint); with --fence, deny writes on its topics
        (ACLs: the source needs an authorizer, this client DESCRIBE and ALTER on the cluster) and watch that
        none gets past; wait for the route's lag to drain, up to --drain-timeout; stop the route (marked failed
        over, so `mirrorflow run` refuses it, then wait until its group has no member); take a final checkpoint
        (mode checkpoint) or look up offsets for --at minus --margin (mode timestamp, for groups never
        checkpointed); commit the offsets into the target's groups
        that have no active member (never backwards); read them back; record RPO and RTO and print what the
        applications do next. A run that fails midway resumes at the failed step when run again with the same
        options. Exit 0 when done, 1 when a step failed (records written past the fence included: the fence is
        then lifted, the route left copying), 2 for a bad config, an unknown route or group, bad options, or a
        source that cannot be fenced (nothing changed).
    """,
    options=(
        CONFIG,
        Option("--route", required=True, metavar="NAME", help="the route to fail over"),
        Option("--group", action="append", metavar="GROUP",
               help="only this consumer group (repeatable; default: every group with a checkpoint)"),
        Option("--topic", action="append", metavar="TOPIC",
               help="only this source topic and its groups' positions on it (repeatable): the route copies its "
               "other topics on; the topic stays held (failed over) until a failback or --release"),
        Option("--mode", choices=("checkpoint", "timestamp"), default="checkpoint",
               help="checkpoint: resume where the latest checkpoints say (default); timestamp: at the first "
               "record at or after --at minus --margin"),
        Option("--at", metavar="ISO",
               help="mode timestamp: the instant the groups had consumed up to (2026-11-01T12:00:00Z; no zone: UTC)"),
        Option("--margin", default="60s", metavar="DURATION",
               help="mode timestamp: resume this much before --at (60, 60s, 5m, 1h; default 60s)"),
        Option("--drain-timeout", default="60", metavar="SECONDS",
               help="wait at most this long for the route's lag to drain (default 60)"),
        Option("--stop-timeout", default="30", metavar="SECONDS",
               help="wait at most this long for the route's workers to leave its group (default 30)"),
        *fence_options("the route's source topics", "by a failback or --release"),
        *run_options("failover"),
        Option("--release", action="store_true",
               help="only let the failed-over route run again (after a drill) and lift its fence; changes "
               "nothing else"),
    ),
)
