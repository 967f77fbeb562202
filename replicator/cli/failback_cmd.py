"""``mirrorflow failback``: bring a failed-over route's applications home, step by step."""

from __future__ import annotations

import argparse
from typing import Any

from replicator.cli.commands import Command, Option
from replicator.cli.common import CONFIG, config_of
from replicator.cli.output import table
from replicator.cli.runbook_cmd import fence_options, outcome, point_row, run_and_print, run_options


def run_failback(args: argparse.Namespace) -> int:
    """Run (or resume) the failback, printing a line per step; exit 1 when a step failed."""
    from replicator.runbooks.failback.run import failback_route, request_of, summary

    config = config_of(args)
    config.route(args.route)
    request = request_of(args.route, args.mode, args.group, args.drain_timeout, args.accept_loss, args.dry_run,
                         args.fence, args.accept_bypass, args.topic)
    return run_and_print(args, lambda progress: failback_route(config, request, args.restart, progress), summary,
                         render)


def render(run: Any) -> str:
    """Where each group resumes on the old primary, then what to do next (``run`` is a FailbackRun)."""
    from replicator.domain.failback import next_steps

    rows = [point_row(c.point, outcome(c)) for c in run.commits]
    topics = f" (topic(s) {', '.join(run.request.topics)})" if run.request.topics else ""
    heading = (f"failback{'' if run.run_id is None else f' run {run.run_id}'} of route {run.request.route}{topics} "
               f"({run.request.mode.value}): {run.backup} -> {run.primary}: {run.status.value}")
    lines = [heading]
    if rows:
        lines.append(table(["group", "topic", "partition", "offset", "", "topic", "offset", "resume",
                            f"group on {run.primary}"], rows))
    lines += [f"note: {n}" for n in run.notes]
    return "\n".join([*lines, "", next_steps(run)]) + "\n"


FAILBACK = Command(
    "failback", run_failback,
    help="after a failover, copy back what was written on the target and move the groups home",
    description="""
        For a failed-over route (source = the old primary, target = where the applications run now), with both
        clusters up and the route's workers stopped. Mode incremental (default): a reverse route copies to the
        old primary only what was written on the target since the failover; records of the old primary that
        never reached the target stay where they are. Mode resync: the old primary's topics are deleted and
        created again, and every record of the replicas is copied back (refused when records of the old primary
        never reached the target, unless --accept-loss). Then the planned switch: copy until nothing is left
        (stop the producers on the target first; up to --drain-timeout), translate each group's position, commit
        it into the old primary's groups that have no active member, read it back, and release the route so
        `mirrorflow run` copies the old primary again. Each step is printed and stored in the state DB; a run
        that fails midway resumes at the failed step when run again. A route failed over by topic
        (`failover --topic`) comes back the same way with --topic: only those topics and their groups, while the
        route's workers copy its other topics on, and copy these again once released. Exit 0 when done, 1 when
        a step failed, 2 for a bad config, an unknown route or bad options.
    """,
    options=(
        CONFIG,
        Option("--route", required=True, metavar="NAME", help="the failed-over route to bring back"),
        Option("--mode", choices=("incremental", "resync"), default="incremental",
               help="incremental: only what was written since the failover (default); resync: recreate the old "
               "primary's topics and copy everything back"),
        Option("--group", action="append", metavar="GROUP",
               help="only this consumer group (repeatable; default: every group the route's checkpoint filter "
               "selects on the target)"),
        Option("--topic", action="append", metavar="TOPIC",
               help="only this topic, failed over by topic (repeatable; mode incremental): the route's workers "
               "keep running and copy it again once it is back"),
        Option("--drain-timeout", default="60", metavar="SECONDS",
               help="copy at most this long for the last records before the switch (default 60)"),
        Option("--accept-loss", action="store_true",
               help="mode resync: go on although records of the old primary never reached the target (they are "
               "deleted with its topics)"),
        *fence_options("the backup's topics the reverse route copies", "when the route is released"),
        *run_options("failback"),
    ),
)
