"""How an audit can fail: records lost (the audit worked, the replica did not), or the job itself."""

from __future__ import annotations

from typing import Any

from replicator.errors import MirrorFlowError


class AuditFailed(MirrorFlowError):
    """Source records are missing on the target; ``summary`` is the run's summary (it was recorded)."""

    def __init__(self, summary: dict[str, Any]) -> None:
        self.summary = summary
        counts = summary["counts"]
        lost = [f for f in summary["findings"] if f["missing_count"]]
        first = lost[0] if lost else None
        where = (f"; first: {first['topic']} partition {first['partition']} bucket {first['bucket_start']}"
                 f" offsets {_ranges(first['missing'])}") if first else ""
        buckets = sum(1 for f in summary["findings"] if f["missing_count"])
        super().__init__(f"route {summary['route']}: {counts['missing']} source records missing on the target"
                         f" in {buckets} bucket{'' if buckets == 1 else 's'}{where} (audit {summary['run_key']})")


class AuditJobError(MirrorFlowError):
    """The Spark job could not run or finish (no verdict)."""


def _ranges(ranges: list[list[int]]) -> str:
    shown = ",".join(str(a) if a == b else f"{a}-{b}" for a, b in ranges[:5])
    return shown + (",..." if len(ranges) > 5 else "")
