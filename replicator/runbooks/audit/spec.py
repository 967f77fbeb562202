"""The audit job's input: the window, and per topic its replica and the route's committed offsets.

Written by the library, read by ``spark_jobs/audit.py`` (in process, or as a JSON
file for ``spark-submit``). It names clusters, never their properties: the job reads
those from the config file itself, so no credential is ever written to a spec file.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from replicator.domain.audit_report import AuditWindow
from replicator.errors import UsageError


@dataclass(frozen=True, slots=True)
class TopicSpec:
    """A source topic, its replica, and the route's committed offset per source partition."""

    source: str
    target: str
    partitions: int  # source partitions 0..n-1 are audited
    target_partitions: int  # partitions the replica has (0: it does not exist)
    committed: tuple[int | None, ...]  # per source partition; None: nothing committed yet
    # (partition, start, end): source offsets the route never copied by design (before its first
    # copy, not backfilled since): not expected on the replica, left out of the audit.
    left_out: tuple[tuple[int, int, int], ...] = ()

    def committed_of(self, partition: int) -> int | None:
        """The committed offset of ``partition`` (None when the route committed nothing there)."""
        return self.committed[partition] if partition < len(self.committed) else None


@dataclass(frozen=True, slots=True)
class AuditSpec:
    """Everything one audit job needs besides the clusters' client properties."""

    run_key: str
    route: str
    source_cluster: str
    target_cluster: str
    window: AuditWindow
    topics: tuple[TopicSpec, ...]
    config_path: str | None = None  # where a job run by spark-submit reads the clusters' properties
    notes: tuple[str, ...] = ()
    # The route stamps a mirrorflow.origin header on each copy (identity and mapping policies):
    # the source side's digest is then taken of the record as the route writes it.
    stamps_origin: bool = False

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON."""
        return {
            "run_key": self.run_key, "route": self.route, "source_cluster": self.source_cluster,
            "target_cluster": self.target_cluster, "config_path": self.config_path, "notes": list(self.notes),
            "stamps_origin": self.stamps_origin,
            "window": {"start_ms": self.window.start_ms, "end_ms": self.window.end_ms,
                       "bucket_ms": self.window.bucket_ms},
            "topics": [{"source": t.source, "target": t.target, "partitions": t.partitions,
                        "target_partitions": t.target_partitions, "committed": list(t.committed),
                        "left_out": [list(r) for r in t.left_out]}
                       for t in self.topics],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AuditSpec:
        """Read what :meth:`to_dict` wrote."""
        window = data["window"]
        topics = tuple(
            TopicSpec(str(t["source"]), str(t["target"]), int(t["partitions"]), int(t["target_partitions"]),
                      tuple(None if c is None else int(c) for c in t["committed"]),
                      tuple((int(p), int(s), int(e)) for p, s, e in t.get("left_out", ())))
            for t in data["topics"]
        )
        return cls(str(data["run_key"]), str(data["route"]), str(data["source_cluster"]),
                   str(data["target_cluster"]),
                   AuditWindow(int(window["start_ms"]), int(window["end_ms"]), int(window["bucket_ms"])), topics,
                   data.get("config_path"), tuple(data.get("notes", ())), bool(data.get("stamps_origin", False)))

    def write(self, path: str | os.PathLike[str]) -> Path:
        """Write the spec as JSON to ``path``; returns it."""
        out = Path(path)
        out.write_text(json.dumps(self.to_dict(), indent=2), encoding="utf-8")
        return out

    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> AuditSpec:
        """Read a spec file; UsageError naming the file when it is missing or malformed."""
        data = read_json(path, "audit spec")
        try:
            return cls.from_dict(data)
        except (KeyError, TypeError, ValueError) as exc:
            raise UsageError(f"audit spec {path}: malformed: {exc!r}") from None


def read_json(path: str | os.PathLike[str], what: str) -> dict[str, Any]:
    """A JSON object from ``path``; UsageError naming ``what`` and the file otherwise."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(f"{what} {path}: cannot read: {exc.strerror}") from None
    except ValueError as exc:
        raise UsageError(f"{what} {path}: not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise UsageError(f"{what} {path}: expected a JSON object")
    return data
