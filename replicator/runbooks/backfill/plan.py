"""Which offsets of each source partition a backfill copies: pure rules, no Kafka.

A backfill must not double what the route copies itself. The route's first copied
offset of a partition (``route_start``: its first offset sync, else its committed
offset) bounds the range: a range asked by time ends there (``clamped``); a range
asked by offsets that reaches past it is refused -- unless ``overlap_ok``, the user's
explicit word that those records may be on the target twice. What earlier backfills
copied is checked against the state DB's runs (``replicator.domain.backfill_run``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from replicator.domain.backfill_run import PartitionRange
from replicator.errors import UsageError

__all__ = ["Bounds", "PartitionRange", "parse_offset_ranges", "plan_ranges"]


@dataclass(frozen=True, slots=True)
class Bounds:
    """What the clusters and the route say about one source partition."""

    low: int  # first offset still on the source
    high: int  # end offset (next to be written)
    route_start: int | None  # first offset the route copied (None: it copied nothing)


def plan_ranges(topic: str, requested: Mapping[int, tuple[int, int | None]], bounds: Mapping[int, Bounds],
                by_offsets: bool, overlap_ok: bool = False) -> list[PartitionRange]:
    """The ranges to copy; UsageError naming every partition whose request is refused."""
    ranges, problems = [], []
    for partition in sorted(requested):
        if partition not in bounds:
            problems.append(f"partition {partition} does not exist (topic {topic} has {len(bounds)})")
            continue
        start, end = requested[partition]
        b = bounds[partition]
        stop = b.high if end is None else end
        if by_offsets and not b.low <= start <= stop <= b.high:
            problems.append(f"partition {partition}: offsets {start}-{stop} are not within {b.low}-{b.high}"
                            " (first offset on the source - end offset)")
            continue
        start, stop = max(start, b.low), min(stop, b.high)
        limit = b.route_start
        if limit is not None and stop > limit and not overlap_ok:
            if by_offsets and end is not None:
                problems.append(f"partition {partition}: offsets {start}-{stop} overlap what the route copied from"
                                f" offset {limit} on; end at {limit} or pass overlap_ok (--overlap-ok) to copy"
                                " those records twice")
                continue
            ranges.append(PartitionRange(partition, start, max(start, limit), clamped=True))
            continue
        ranges.append(PartitionRange(partition, start, max(start, stop)))
    if problems:
        raise UsageError(f"backfill of {topic} refused: " + "; ".join(problems))
    return ranges


def _offsets(text: str, option: str) -> dict[int, int]:
    out: dict[int, int] = {}
    for item in text.split(","):
        partition, sep, offset = item.strip().partition("=")
        if not sep or not partition.strip().isdigit() or not offset.strip().isdigit():
            raise UsageError(f"{option}: expected PARTITION=OFFSET[,PARTITION=OFFSET...], got {item.strip()!r}")
        out[int(partition)] = int(offset)
    return out


def parse_offset_ranges(start: str, end: str | None) -> dict[int, tuple[int, int | None]]:
    """``--from-offset``/``--to-offset`` as {partition: (from, to or None)}; UsageError naming the bad part."""
    first = _offsets(start, "--from-offset")
    last = _offsets(end, "--to-offset") if end else {}
    stray = sorted(set(last) - set(first))
    if stray:
        raise UsageError(f"--to-offset: partition {stray[0]} has no --from-offset")
    wrong = [p for p in sorted(last) if last[p] < first[p]]
    if wrong:
        p = wrong[0]
        raise UsageError(f"partition {p}: --to-offset {last[p]} is before --from-offset {first[p]}")
    return {p: (first[p], last.get(p)) for p in sorted(first)}
