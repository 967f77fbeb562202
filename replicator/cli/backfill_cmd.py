"""``mirrorflow backfill``: copy a historical range of a route's topic to its replica (Spark), then check it."""

from __future__ import annotations

import argparse
from typing import Any

from replicator.cli.commands import Command, Option
from replicator.cli.common import CONFIG, MASTER, config_of
from replicator.cli.output import table
from replicator.cli.runbook_cmd import print_result, progress_of
from replicator.domain.backfill_run import PartitionRange, nothing_to_copy
from replicator.errors import UsageError


def run_backfill_command(args: argparse.Namespace) -> int:
    """Validate the input, copy, print the result; 1 when records are missing after the copy."""
    # Here, not at the top: importing the runbook (Kafka clients, the state DB, Spark's launcher) cost every other
    # command about half a second (``mirrorflow status`` included).
    from replicator.runbooks.backfill import BackfillIncomplete, run_backfill
    from replicator.runbooks.backfill.plan import parse_offset_ranges

    by_time, by_offsets = args.start or args.end, args.from_offset or args.to_offset
    if bool(by_time) == bool(by_offsets):
        raise UsageError("give a time range (--from and --to) or offsets (--from-offset [--to-offset])")
    if by_time and not (args.start and args.end):
        raise UsageError("a time range needs both --from and --to")
    if by_offsets and not args.from_offset:
        raise UsageError("--to-offset needs --from-offset")
    offsets = parse_offset_ranges(args.from_offset, args.to_offset) if by_offsets else None
    config = config_of(args)
    config.route(args.route)  # an unknown route is bad input (2) before any cluster is asked
    failure: BackfillIncomplete | None = None
    try:
        result = run_backfill(config, args.route, args.topic, args.start, args.end, offsets=offsets,
                              overlap_ok=args.overlap_ok, master=args.master, progress=progress_of(args))
    except BackfillIncomplete as exc:
        result, failure = exc.result, exc
    return print_result(args, result, render, failure)


def render(result: dict[str, Any]) -> str:
    """One row per partition: the source range, records written, where they landed, the check."""
    checked = result["check"]["partitions"]
    rows = [[r["partition"], f"{r['start']}-{r['end']}", "yes" if r["clamped"] else "",
             result["written"].get(str(r["partition"]), 0),
             "-".join(map(str, result["landed"].get(str(r["partition"]), []))) or "-",
             checked.get(str(r["partition"]), {}).get("missing", 0)] for r in result["ranges"]]
    lines = [table(["partition", "source offsets", "cut at route start", "written", "target offsets", "missing"],
                   rows)]
    lines.append(f"backfill {result['topic']} -> {result['target_topic']}: {sum(result['written'].values())}"
                 f" records written, {result['check']['missing']} missing, {result['check']['duplicates']}"
                 f" duplicated (run {result['run_key']}, Spark UI was {result['ui_url']})")
    why = nothing_to_copy(PartitionRange(r["partition"], r["start"], r["end"], r["clamped"]) for r in result["ranges"])
    if why:
        lines.append(why)
    return "\n".join(lines)


BACKFILL = Command(
    "backfill", run_backfill_command,
    help="copy a historical range of a route's topic to the same partitions of its replica (Spark)",
    description="""
        Copy records of a source topic that the route did not copy (written before it started, or before the
        topic joined it) to the same partitions of the replica, with key, value, headers and timestamp, then
        check by offsets that each one arrived. The range ends where the route's own copies begin (its first
        offset sync, else its committed offset): a time range is cut there; offsets that reach past it are
        refused unless --overlap-ok. The copies land after the route's records on the replica. Each run is
        recorded in the state DB (mf_backfill_run) before the copy; a range whose offsets a done or running
        backfill of the topic copied is refused, naming it, unless --overlap-ok (a failed one does not block:
        running it again may repeat what it had written). Exit 0 when every record arrived, 1 when some are
        missing or a cluster or the job failed, 2 for bad input (a refused range included).
    """,
    options=(
        CONFIG,
        Option("--route", required=True, metavar="NAME", help="the route whose topic to backfill"),
        Option("--topic", required=True, metavar="TOPIC", help="the source topic"),
        Option("--from", dest="start", metavar="TIME",
               help="range start by time, included: ISO 8601 (UTC unless it has an offset) or 'now'"),
        Option("--to", dest="end", metavar="TIME", help="range end by time, excluded (same forms)"),
        Option("--from-offset", metavar="P=N[,P=N...]",
               help="range start by offsets, per partition (only the partitions named are copied)"),
        Option("--to-offset", metavar="P=N[,P=N...]",
               help="range end by offsets, excluded (default per partition: where the route began)"),
        Option("--overlap-ok", action="store_true",
               help="copy records the route or an earlier backfill copied too (they will be on the replica twice)"),
        MASTER,
        Option("--json", action="store_true", help="print the result as JSON (progress goes to stderr)"),
    ),
)
