"""A backfill run of a route's topic, and whether a new one would copy again what an earlier one copied.

A backfill copies source offsets ``[start, end)`` per partition to the replica; run
twice, it puts the records there twice. So every run is recorded once its ranges are
planned, and a new run is refused when, on some partition, its offsets meet those of
a ``done`` or ``running`` run of the same route and topic -- unless ``overlap_ok``,
the user's word that those records may be on the replica twice. A ``failed`` run
never blocks: what it wrote is unknown (it may be part of its range), so its range
may be run again, and that run may repeat what the failed one had written.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from replicator.domain.times import utc_text


@dataclass(frozen=True, slots=True)
class PartitionRange:
    """Source offsets ``[start, end)`` of ``partition`` to copy; ``clamped``: cut at the route's start."""

    partition: int
    start: int
    end: int
    clamped: bool = False

    @property
    def count(self) -> int:
        """Offsets in the range (records, less any compacted away or transaction markers)."""
        return max(0, self.end - self.start)


def nothing_to_copy(ranges: Iterable[PartitionRange]) -> str | None:
    """Why a backfill copies no record at all (None when it copies some): said, not just "0 records"."""
    ranges = list(ranges)
    if any(r.count for r in ranges):
        return None
    if any(r.clamped for r in ranges):
        return ("nothing to copy: the route itself copied this topic from before the range's end, so the range "
                "was cut at the route's first copied offset and nothing is left before it (--overlap-ok, or the "
                "DAG's overlap_ok, copies the route's records again)")
    return "nothing to copy: the source holds no record of this topic in the range (retention may have deleted it)"


class BackfillMode(StrEnum):
    """How the range was asked for."""

    TIME = "time"
    OFFSETS = "offsets"


class BackfillStatus(StrEnum):
    """Where a backfill run stands."""

    RUNNING = "running"  # planned and recorded; the copy has not finished
    DONE = "done"  # copied, and the check found every record on the replica
    FAILED = "failed"  # the job or its check failed: part of the range may be on the replica


BLOCKING = (BackfillStatus.RUNNING, BackfillStatus.DONE)


@dataclass(frozen=True, slots=True)
class BackfillRun:
    """One backfill of ``topic`` (route ``route``) to ``target_topic``: its planned ranges and outcome."""

    run_key: str
    route: str
    topic: str
    target_topic: str
    mode: BackfillMode
    ranges: tuple[PartitionRange, ...]
    started_at: dt.datetime
    status: BackfillStatus = BackfillStatus.RUNNING
    overlap_ok: bool = False
    written: int | None = None  # None: not known (running, or the job failed without a result)
    finished_at: dt.datetime | None = None
    error: str | None = None

    @property
    def total(self) -> int:
        """Offsets planned (an upper bound of the records)."""
        return sum(r.count for r in self.ranges)


@dataclass(frozen=True, slots=True)
class Overlap:
    """Offsets ``[start, end)`` of ``partition`` that the planned range shares with ``earlier``'s range."""

    partition: int
    start: int
    end: int
    earlier: BackfillRun
    earlier_range: PartitionRange


def overlaps(planned: Iterable[PartitionRange], earlier: Iterable[BackfillRun], run_key: str) -> list[Overlap]:
    """Each (planned range, earlier range) pair that shares offsets, by partition then earlier run.

    Only ``running`` and ``done`` runs count, and never the run ``run_key`` itself (a
    retried task plans its own run again); empty ranges share nothing.
    """
    blocking = [run for run in earlier if run.status in BLOCKING and run.run_key != run_key]
    found: list[Overlap] = []
    for wanted in sorted(planned, key=lambda r: r.partition):
        for run in blocking:
            for copied in run.ranges:
                start, end = max(wanted.start, copied.start), min(wanted.end, copied.end)
                if copied.partition == wanted.partition and start < end:
                    found.append(Overlap(wanted.partition, start, end, run, copied))
    return found


def describe(overlap: Overlap) -> str:
    """``partition 0: offsets 0-12 were copied by backfill run K (done, started ..., its offsets 0-12)``."""
    run, copied = overlap.earlier, overlap.earlier_range
    verb = "were copied" if run.status == BackfillStatus.DONE else "are being copied"
    return (f"partition {overlap.partition}: offsets {overlap.start}-{overlap.end} {verb} by backfill run"
            f" {run.run_key} ({run.status.value}, started {utc_text(run.started_at)}, its offsets"
            f" {copied.start}-{copied.end})")


def refusal(topic: str, found: Iterable[Overlap]) -> str:
    """Why a backfill of ``topic`` is refused, naming every overlap and how to copy anyway."""
    return (f"backfill of {topic} refused: " + "; ".join(describe(o) for o in found)
            + "; pass overlap_ok (--overlap-ok) to copy them again anyway (they will be on the replica twice)")


