"""The backfill job's input and output files (``spark_jobs/backfill.py --spec ... --output ...``).

The spec names clusters, never their properties: the job reads those from the
config file it names, so no credential is ever written to a spec file.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from replicator.errors import UsageError
from replicator.runbooks.audit.spec import read_json
from replicator.runbooks.backfill.plan import PartitionRange


@dataclass(frozen=True, slots=True)
class BackfillSpec:
    """One topic's ranges to copy from the route's source to the same partitions of its replica."""

    run_key: str
    route: str
    source_cluster: str
    target_cluster: str
    topic: str
    target_topic: str
    ranges: tuple[PartitionRange, ...]
    config_path: str | None = None
    stamps_origin: bool = False  # the route stamps mirrorflow.origin on copies (identity, mapping): so does this

    @property
    def total(self) -> int:
        """Offsets to copy (an upper bound of the records: compacted-away offsets and markers have none)."""
        return sum(r.count for r in self.ranges)

    def write(self, path: str | os.PathLike[str]) -> str:
        """Write the spec as JSON; returns the path."""
        data = {**asdict(self), "ranges": [asdict(r) for r in self.ranges]}
        Path(path).write_text(json.dumps(data, indent=2), encoding="utf-8")
        return str(path)

    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> BackfillSpec:
        """Read a spec file; UsageError naming the file when it is missing or malformed."""
        data = read_json(path, "backfill spec")
        try:
            ranges = tuple(PartitionRange(int(r["partition"]), int(r["start"]), int(r["end"]), bool(r["clamped"]))
                           for r in data["ranges"])
            return cls(str(data["run_key"]), str(data["route"]), str(data["source_cluster"]),
                       str(data["target_cluster"]), str(data["topic"]), str(data["target_topic"]), ranges,
                       data.get("config_path"), bool(data.get("stamps_origin", False)))
        except (KeyError, TypeError, ValueError) as exc:
            raise UsageError(f"backfill spec {path}: malformed: {exc!r}") from None


def read_result(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The job's result: ``written`` and ``landed`` (target offsets) per partition, timestamps, ``ui_url``."""
    data = read_json(path, "backfill result")
    missing = [k for k in ("run_key", "written", "first_ms", "last_ms", "landed") if k not in data]
    if missing:
        raise UsageError(f"backfill result {path}: malformed: no {', '.join(missing)}")
    return data
