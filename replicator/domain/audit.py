"""Audit of a replica: does the target hold every replicated source record, once? (pure)

A record is known by its *digest*, sha256 over a canonical text of its key, value,
headers (names, values, order, null-ness) and timestamp (:func:`digest_text`), and
belongs to the *bucket* of its timestamp (epoch-aligned, one minute by default).
The Spark job computes the same digest with Spark functions; a test holds the two
to the same bytes.

Per (topic, partition, bucket) the two sides are first compared by totals: record
count and the sum of a 60-bit slice of each digest (order-free, so it needs no
sort). Only a bucket whose totals differ is compared digest by digest:

- source records at or after the route's committed offset are *pending* (not yet
  replicated): a copy of one on the target is fine, its absence is no loss;
- copies of a digest are matched to its source records in offset order, so a
  shortfall falls on the latest occurrences: those below the committed offset are
  *missing*, the others pending;
- copies beyond the source's count are *duplicates* of that digest's records (a
  replay after a crash), reported by source offset;
- target records whose digest no source record of the bucket has are *extra*
  (written to the replica by something else), reported by target offset.

Identical records (same key, value, headers and timestamp) cannot be told apart by
content; for them the attribution above is a convention, the counts are exact.
"""

from __future__ import annotations

import hashlib
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from replicator.domain.offset_ranges import OffsetRange, to_ranges

WEIGHT_HEX_DIGITS = 15  # 60 bits of the digest go into the bucket sums
_BUCKET = re.compile(r"^([1-9][0-9]*)([smhd])$")
_UNIT_MS = {"s": 1_000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}

Headers = Sequence[tuple[str, bytes | None]]


def parse_bucket(text: str) -> int:
    """``30s``, ``1m``, ``5m``, ``1h``, ``1d`` -> milliseconds; ValueError naming the text otherwise."""
    match = _BUCKET.match(text.strip())
    if match is None:
        raise ValueError(f"bucket {text!r}: expected a number and a unit s, m, h or d (like 1m)")
    return int(match.group(1)) * _UNIT_MS[match.group(2)]


def bucket_of(timestamp_ms: int, bucket_ms: int) -> int:
    """Start (epoch ms) of the bucket holding ``timestamp_ms``."""
    return timestamp_ms - timestamp_ms % bucket_ms


def _hex(data: bytes | None) -> str:
    return "~" if data is None else data.hex().upper()


def digest_text(key: bytes | None, value: bytes | None, headers: Headers, timestamp_ms: int) -> str:
    """``k=<hex>;v=<hex>;h=<name hex>:<value hex>,...;t=<ms>``, ``~`` for null (no headers: empty)."""
    named = ",".join(f"{_hex(name.encode())}:{_hex(data)}" for name, data in headers)
    return f"k={_hex(key)};v={_hex(value)};h={named};t={timestamp_ms}"


def record_digest(key: bytes | None, value: bytes | None, headers: Headers, timestamp_ms: int) -> str:
    """The lowercase hex sha256 of :func:`digest_text`."""
    return hashlib.sha256(digest_text(key, value, headers, timestamp_ms).encode()).hexdigest()


def digest_weight(digest: str) -> int:
    """What a record adds to its bucket's digest sum."""
    return int(digest[:WEIGHT_HEX_DIGITS], 16)


@dataclass(frozen=True, slots=True)
class Mark:
    """One record as the audit sees it: offset on its cluster, digest, timestamp."""

    offset: int
    digest: str
    timestamp_ms: int


@dataclass(frozen=True, slots=True)
class Totals:
    """Count and digest sum of some records of a bucket."""

    count: int = 0
    weight: int = 0

    @classmethod
    def of(cls, digests: Iterable[str]) -> Totals:
        """The totals of records with these digests."""
        weights = [digest_weight(d) for d in digests]
        return cls(len(weights), sum(weights))

    def __add__(self, other: Totals) -> Totals:
        return Totals(self.count + other.count, self.weight + other.weight)


@dataclass(frozen=True, slots=True, order=True)
class BucketKey:
    """A (source topic, partition, bucket start) cell of an audit."""

    topic: str
    partition: int
    start_ms: int


@dataclass(frozen=True, slots=True)
class BucketTotals:
    """Both sides of a bucket in totals; the source split at the route's committed offset."""

    key: BucketKey
    replicated: Totals  # source records below the committed offset
    pending: Totals  # source records at or after it
    target: Totals


@dataclass(frozen=True, slots=True)
class DigestGroup:
    """The offsets of one digest within a bucket, on each side."""

    digest: str
    source_offsets: tuple[int, ...]
    target_offsets: tuple[int, ...]


class Status(StrEnum):
    """A bucket's worst finding (a run's status is its buckets' worst)."""

    CLEAN = "clean"
    DUPLICATES = "duplicates"
    EXTRA = "extra"
    MISSING = "missing"


SEVERITY = (Status.CLEAN, Status.DUPLICATES, Status.EXTRA, Status.MISSING)


@dataclass(frozen=True, slots=True)
class BucketResult:
    """The verdict on one bucket; offset ranges may be cut short when stored, counts never are."""

    key: BucketKey
    source_count: int  # every source record of the bucket, pending ones included
    target_count: int
    pending: int  # source records not yet replicated and not (yet) on the target
    missing_count: int = 0
    duplicate_count: int = 0  # surplus copies on the target
    extra_count: int = 0
    missing: tuple[OffsetRange, ...] = ()  # source offsets
    duplicated: tuple[OffsetRange, ...] = ()  # source offsets copied more than once
    extra: tuple[OffsetRange, ...] = ()  # target offsets

    @property
    def status(self) -> Status:
        """``missing`` before ``extra`` before ``duplicates``; ``clean`` when none."""
        if self.missing_count:
            return Status.MISSING
        if self.extra_count:
            return Status.EXTRA
        return Status.DUPLICATES if self.duplicate_count else Status.CLEAN


def is_pending(offset: int, committed: int | None) -> bool:
    """True for a source offset the route has not committed yet (None: nothing committed)."""
    return committed is None or offset >= committed


def settle_by_totals(totals: BucketTotals) -> BucketResult | None:
    """The clean verdict when the target's totals equal the replicated part (or all) of the source."""
    source = totals.replicated + totals.pending
    if totals.target == totals.replicated:
        pending = totals.pending.count
    elif totals.target == source:
        pending = 0
    else:
        return None
    return BucketResult(totals.key, source.count, totals.target.count, pending)


def compare_bucket(totals: BucketTotals, groups: Iterable[DigestGroup], committed: int | None) -> BucketResult:
    """The verdict from the digest groups of the bucket (groups with equal counts may be left out)."""
    missing: list[int] = []
    duplicated: list[int] = []
    extra: list[int] = []
    pending = surplus_copies = 0
    for group in groups:
        source, target = sorted(group.source_offsets), sorted(group.target_offsets)
        unmatched = source[len(target):]  # copies match the earliest occurrences
        missing += [o for o in unmatched if not is_pending(o, committed)]
        pending += sum(1 for o in unmatched if is_pending(o, committed))
        surplus = target[len(source):]
        if not source:
            extra += surplus
        elif surplus:
            duplicated += source[: len(surplus)]
            surplus_copies += len(surplus)
    return BucketResult(
        totals.key, totals.replicated.count + totals.pending.count, totals.target.count, pending,
        len(missing), surplus_copies, len(extra), to_ranges(missing), to_ranges(duplicated), to_ranges(extra),
    )


def digest_groups(source: Iterable[Mark], target: Iterable[Mark]) -> list[DigestGroup]:
    """Group the marks of one bucket by digest, each side's offsets sorted."""
    sides: dict[str, tuple[list[int], list[int]]] = defaultdict(lambda: ([], []))
    for mark in source:
        sides[mark.digest][0].append(mark.offset)
    for mark in target:
        sides[mark.digest][1].append(mark.offset)
    return [DigestGroup(d, tuple(sorted(s)), tuple(sorted(t))) for d, (s, t) in sorted(sides.items())]


def audit_partition(
    topic: str, partition: int, source: Iterable[Mark], target: Iterable[Mark], committed: int | None,
    bucket_ms: int,
) -> list[BucketResult]:
    """Compare one partition's records on both sides, bucket by bucket (what the Spark job does at scale)."""
    buckets: dict[int, tuple[list[Mark], list[Mark]]] = defaultdict(lambda: ([], []))
    for mark in source:
        buckets[bucket_of(mark.timestamp_ms, bucket_ms)][0].append(mark)
    for mark in target:
        buckets[bucket_of(mark.timestamp_ms, bucket_ms)][1].append(mark)
    results = []
    for start, (src, tgt) in sorted(buckets.items()):
        replicated = Totals.of(m.digest for m in src if not is_pending(m.offset, committed))
        totals = BucketTotals(BucketKey(topic, partition, start), replicated,
                              Totals.of(m.digest for m in src if is_pending(m.offset, committed)),
                              Totals.of(m.digest for m in tgt))
        results.append(settle_by_totals(totals) or compare_bucket(totals, digest_groups(src, tgt), committed))
    return results
