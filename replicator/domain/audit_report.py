"""The result of one audit run: its window, topics and bucket verdicts, as objects and as JSON.

The Spark job writes it (``to_dict``), the library reads it back (``from_dict``),
stores it and returns :meth:`AuditReport.summary`. Offset ranges are cut to
``RANGES_KEPT`` per list in JSON; counts are always exact.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from replicator.domain.audit import SEVERITY, BucketKey, BucketResult, Status
from replicator.domain.offset_ranges import OffsetRange

RANGES_KEPT = 1000


@dataclass(frozen=True, slots=True)
class AuditWindow:
    """Records with ``start_ms <= timestamp < end_ms``, in buckets of ``bucket_ms``."""

    start_ms: int
    end_ms: int
    bucket_ms: int

    def __post_init__(self) -> None:
        if self.end_ms <= self.start_ms:
            raise ValueError(f"audit window: end {_iso(self.end_ms)} is not after start {_iso(self.start_ms)}")
        if self.bucket_ms <= 0 or self.bucket_ms % 1000:
            raise ValueError(f"audit window: a bucket of {self.bucket_ms} ms is not a whole number of seconds")

    def describe(self) -> str:
        """``2026-11-27T10:00:00+00:00 .. 2026-11-27T11:00:00+00:00 (1m buckets)``."""
        return f"{_iso(self.start_ms)} .. {_iso(self.end_ms)} ({self.bucket_ms // 1000}s buckets)"


def _iso(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC).isoformat()


@dataclass(frozen=True, slots=True)
class Counts:
    """Record counts over many buckets."""

    source: int = 0
    target: int = 0
    pending: int = 0
    missing: int = 0
    duplicates: int = 0
    extra: int = 0

    @classmethod
    def of(cls, results: tuple[BucketResult, ...]) -> Counts:
        """The sums over ``results``."""
        return cls(*(sum(getattr(r, name) for r in results) for name in (
            "source_count", "target_count", "pending", "missing_count", "duplicate_count", "extra_count")))


def worst(statuses: list[Status]) -> Status:
    """The most severe status (``clean`` for none)."""
    return max(statuses, key=SEVERITY.index, default=Status.CLEAN)


@dataclass(frozen=True, slots=True)
class AuditRunInfo:
    """An audit run without its buckets: what a history lists."""

    run_key: str
    route: str
    window: AuditWindow
    status: Status
    counts: Counts
    started_ms: int
    finished_ms: int


@dataclass(frozen=True, slots=True)
class AuditReport:
    """One audit of a route: per source topic its replica, and every bucket's verdict."""

    run_key: str
    route: str
    window: AuditWindow
    topics: Mapping[str, str]  # source topic -> target topic
    results: tuple[BucketResult, ...]
    started_ms: int
    finished_ms: int
    notes: tuple[str, ...] = ()

    @property
    def status(self) -> Status:
        """The worst bucket status; ``missing`` means records were lost."""
        return worst([r.status for r in self.results])

    @property
    def counts(self) -> Counts:
        """Totals over every bucket."""
        return Counts.of(self.results)

    @property
    def info(self) -> AuditRunInfo:
        """The run without its buckets."""
        return AuditRunInfo(self.run_key, self.route, self.window, self.status, self.counts, self.started_ms,
                            self.finished_ms)

    def findings(self) -> tuple[BucketResult, ...]:
        """The buckets that are not clean, in (topic, partition, bucket) order."""
        return tuple(sorted((r for r in self.results if r.status != Status.CLEAN), key=lambda r: r.key))

    def summary(self, findings_limit: int = 100) -> dict[str, Any]:
        """Plain JSON: status, counts per topic and in all, the first ``findings_limit`` findings."""
        findings = self.findings()
        per_topic = {}
        for topic, replica in sorted(self.topics.items()):
            mine = tuple(r for r in self.results if r.key.topic == topic)
            per_topic[topic] = {"replica": replica, "status": worst([r.status for r in mine]).value,
                                **counts_dict(Counts.of(mine))}
        return {
            "run_key": self.run_key, "route": self.route, "status": self.status.value,
            "window": {"start": _iso(self.window.start_ms), "end": _iso(self.window.end_ms),
                       "bucket_seconds": self.window.bucket_ms // 1000},
            "counts": counts_dict(self.counts), "topics": per_topic, "buckets": len(self.results),
            "buckets_with_findings": len(findings),
            "findings": [_result_dict(r, 20) for r in findings[:findings_limit]],
            "notes": list(self.notes) + self._empty_window_note(),
            "started_at": _iso(self.started_ms), "finished_at": _iso(self.finished_ms),
        }

    def _empty_window_note(self) -> list[str]:
        """Clean with nothing compared must not read as "all is well": say so (#15: a demo's first audit of
        the last full hour found no record and said only "No audited bucket yet")."""
        if self.results or not self.topics:
            return []
        return [f"no record of the route's topics has a time in the window {_iso(self.window.start_ms)} to "
                f"{_iso(self.window.end_ms)}: nothing was compared (audit a window in which records were written)"]

    def to_dict(self) -> dict[str, Any]:
        """Everything, for the job's result file."""
        return {
            "run_key": self.run_key, "route": self.route,
            "window": {"start_ms": self.window.start_ms, "end_ms": self.window.end_ms,
                       "bucket_ms": self.window.bucket_ms},
            "topics": dict(self.topics), "results": [_result_dict(r, RANGES_KEPT) for r in self.results],
            "started_ms": self.started_ms, "finished_ms": self.finished_ms, "notes": list(self.notes),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AuditReport:
        """Read what :meth:`to_dict` wrote; KeyError/ValueError on anything else."""
        window = data["window"]
        return cls(
            str(data["run_key"]), str(data["route"]),
            AuditWindow(int(window["start_ms"]), int(window["end_ms"]), int(window["bucket_ms"])),
            {str(k): str(v) for k, v in data["topics"].items()},
            tuple(_result_of(r) for r in data["results"]),
            int(data["started_ms"]), int(data["finished_ms"]), tuple(data.get("notes", ())),
        )


def counts_dict(counts: Counts) -> dict[str, int]:
    """``{"source": ..., "target": ..., ...}``."""
    return {f.name: getattr(counts, f.name) for f in fields(counts)}


def _result_dict(result: BucketResult, ranges_kept: int) -> dict[str, Any]:
    def cut(ranges: tuple[OffsetRange, ...]) -> list[list[int]]:
        return [[r.first, r.last] for r in ranges[:ranges_kept]]

    return {
        "topic": result.key.topic, "partition": result.key.partition, "bucket_start_ms": result.key.start_ms,
        "bucket_start": _iso(result.key.start_ms), "status": result.status.value,
        "source_count": result.source_count, "target_count": result.target_count, "pending": result.pending,
        "missing_count": result.missing_count, "duplicate_count": result.duplicate_count,
        "extra_count": result.extra_count, "missing": cut(result.missing), "duplicated": cut(result.duplicated),
        "extra": cut(result.extra),
    }


def _result_of(data: Mapping[str, Any]) -> BucketResult:
    def ranges(name: str) -> tuple[OffsetRange, ...]:
        return tuple(OffsetRange(int(first), int(last)) for first, last in data[name])

    return BucketResult(
        BucketKey(str(data["topic"]), int(data["partition"]), int(data["bucket_start_ms"])),
        int(data["source_count"]), int(data["target_count"]), int(data["pending"]),
        int(data["missing_count"]), int(data["duplicate_count"]), int(data["extra_count"]),
        ranges("missing"), ranges("duplicated"), ranges("extra"),
    )
