"""``mirrorflow audit``: compare a route's source topics with their replicas over a time window."""

from __future__ import annotations

import argparse
import datetime as dt
from typing import Any

from replicator.cli.commands import Command, Option
from replicator.cli.common import CONFIG, MASTER, config_of
from replicator.cli.output import table
from replicator.cli.runbook_cmd import print_result, progress_of

RANGES_SHOWN = 3


def run_audit_command(args: argparse.Namespace) -> int:
    """Validate the input, run the audit, print the summary; 1 when records are missing."""
    from replicator.runbooks.audit import AuditFailed, run_audit
    from replicator.runbooks.audit.window import audit_window

    config = config_of(args)
    config.route(args.route)  # an unknown route is bad input (2) before any cluster is asked
    window = audit_window(args.start, args.end, args.bucket, names=("--from", "--to"))
    progress = progress_of(args)
    progress(f"audit {args.route}: {window.describe()}")
    at = [dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC) for ms in (window.start_ms, window.end_ms)]
    failure: AuditFailed | None = None
    try:
        summary = run_audit(config, args.route, at[0], at[1], args.topic, args.bucket, run_key=args.run_key,
                            master=args.master, progress=progress)
    except AuditFailed as exc:
        summary, failure = exc.summary, exc
    return print_result(args, summary, render, failure)


def render(summary: dict[str, Any]) -> str:
    """The summary as text: one row per topic, then every bucket that is not clean."""
    counts = summary["counts"]
    lines = [table(["topic", "replica", "source", "target", "pending", "missing", "duplicates", "extra", "status"],
                   [[t, v["replica"], v["source"], v["target"], v["pending"], v["missing"], v["duplicates"],
                     v["extra"], v["status"]]
                    for t, v in summary["topics"].items()])]
    findings = summary["findings"]
    if findings:
        lines += ["", table(
            ["topic", "partition", "bucket (UTC)", "source", "target", "pending", "status",
             "missing (source offsets)", "duplicated (source offsets)", "extra (target offsets)"],
            [[f["topic"], f["partition"], f["bucket_start"][:19].replace("T", " "), f["source_count"],
              f["target_count"], f["pending"], f["status"], _ranges(f["missing"], f["missing_count"]),
              _ranges(f["duplicated"], f["duplicate_count"]), _ranges(f["extra"], f["extra_count"])]
             for f in findings])]
        if len(findings) < summary["buckets_with_findings"]:
            lines.append(f"(first {len(findings)} of {summary['buckets_with_findings']} buckets with findings)")
    lines += [""] + [f"note: {n}" for n in summary["notes"]]
    lines.append(f"audit {summary['run_key']}: {summary['status']} — {counts['source']} source records in "
                 f"{summary['buckets']} buckets, {counts['target']} on the target, {counts['pending']} pending, "
                 f"{counts['missing']} missing, {counts['duplicates']} duplicate copies, {counts['extra']} extra")
    return "\n".join(lines)


def _ranges(ranges: list[list[int]], count: int) -> str | None:
    if not count:
        return None
    shown = ",".join(str(a) if a == b else f"{a}-{b}" for a, b in ranges[:RANGES_SHOWN])
    return shown + (",..." if len(ranges) > RANGES_SHOWN else "") + f" ({count})"


AUDIT = Command(
    "audit", run_audit_command,
    help="compare a route's source topics and replicas over a time window, per partition and bucket (Spark)",
    description="""
        Read each source topic of the route and its replica for the window with a local Spark job, compare them
        per partition and time bucket (counts and record digests), name missing, duplicated and extra records by
        offset, and record the run in the state DB. Records the route has not committed yet count as pending,
        not missing. Exit 0 when nothing is missing (duplicates and extra records are shown), 1 when records are
        missing or a cluster or the job failed, 2 for bad input.
    """,
    options=(
        CONFIG,
        Option("--route", required=True, metavar="NAME", help="route to audit"),
        Option("--from", dest="start", required=True, metavar="TIME",
               help="window start, included: ISO 8601 (UTC unless it has an offset) or 'now'"),
        Option("--to", dest="end", required=True, metavar="TIME", help="window end, excluded (same forms)"),
        Option("--topic", action="append", metavar="TOPIC",
               help="only this source topic (repeatable; default: every topic the route replicates)"),
        Option("--bucket", default="1m", help="time bucket: 30s, 1m, 5m, 1h, ... (default: 1m)"),
        MASTER,
        Option("--run-key", metavar="KEY",
               help="id of the run in the state DB; an audit with the same key replaces it (default: new)"),
        Option("--json", action="store_true", help="print the summary as JSON (progress goes to stderr)"),
    ),
)
