"""Account for every record (pure): what the verifier produced against what the target holds.

Inputs, per stream (see ``records.Stream``): the records produced, indexed by their number
(``Sent``: the source offset from the delivery report, or None when the source never
acknowledged it), the records found on the target in target-offset order (``Got``), how
many of the produced records the check covers (``cut``: those acknowledged before a fault
healed; later ones may still be on their way), and the ranges of source offsets the route
reported lost to retention (``mf_data_loss``).

A produced record is *lost* when it is missing on the target and no reported range covers
its source offset, *reported lost* when one does. A record found twice or more counts its
extra copies as *duplicates*; a first copy that comes after a higher-numbered first copy is
*out of order*; any copy whose fingerprint differs from what was produced is *mismatched*;
a number that was never produced is *unexpected*.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from bench.chaoslib.records import Stream


@dataclass(frozen=True, slots=True)
class Sent:
    """A produced record: its source offset (None: never acknowledged), fingerprint, and when the source
    acknowledged it (``time.monotonic()``)."""

    offset: int | None
    fingerprint: bytes
    acked_at: float | None = None


@dataclass(frozen=True, slots=True)
class Got:
    """A record found on the target: its number, fingerprint and when the reader saw it."""

    seq: int
    fingerprint: bytes
    arrived_at: float = 0.0


@dataclass(frozen=True, slots=True)
class LossRange:
    """Source offsets ``[start, end)`` of one partition, lost to retention (reported or true)."""

    topic: str
    partition: int
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class StreamTally:
    """What the check found for one stream."""

    lost: tuple[int, ...] = ()  # record numbers, missing and not reported
    reported_lost: int = 0
    over_reported: int = 0  # on the target although inside a reported range
    duplicates: int = 0
    out_of_order: int = 0
    mismatched: int = 0
    unexpected: int = 0
    checked: int = 0  # acknowledged records the check covered


@dataclass(frozen=True, slots=True)
class Tally:
    """The whole account: per stream, plus records on the target that name no stream."""

    streams: Mapping[Stream, StreamTally] = field(default_factory=dict)
    foreign: int = 0

    def total(self, name: str) -> int:
        """Sum of one StreamTally field over all streams (``lost`` counts records)."""
        if name == "lost":
            return sum(len(t.lost) for t in self.streams.values())
        return sum(int(getattr(t, name)) for t in self.streams.values())

    def lost_records(self) -> set[tuple[Stream, int]]:
        """Every lost record as (stream, number)."""
        return {(stream, seq) for stream, t in self.streams.items() for seq in t.lost}


def longest_pause(arrivals: Sequence[float], start: float, end: float) -> float:
    """The longest time within ``[start, end]`` in which nothing arrived, given the (sorted) arrival times
    ``arrivals`` of one partition's records: from ``start`` to the first, between two, from the last to ``end``."""
    inside = [t for t in arrivals if start <= t <= end]
    edges = [start, *inside, end]
    return max((b - a for a, b in itertools.pairwise(edges)), default=0.0)


def longest_wait(sent: Sequence[Sent], arrived: Mapping[int, float], start: float, end: float) -> float | None:
    """The longest a record the source acknowledged within ``[start, end]`` waited from that acknowledgement until
    it arrived on the target (``arrived``: its first arrival, by number): the copy's own delay, without the source's
    unavailability. None when no such record arrived."""
    waits = [arrived[seq] - record.acked_at for seq, record in enumerate(sent)
             if record.acked_at is not None and start <= record.acked_at <= end and seq in arrived]
    return max(waits, default=None)


def account(sent: Mapping[Stream, Sequence[Sent]], got: Mapping[Stream, Sequence[Got]],
            cut: Mapping[Stream, int], reported: Sequence[LossRange] = (), foreign: int = 0) -> Tally:
    """The account of every stream that was produced to or found on the target."""
    streams = {}
    for stream in sorted(set(sent) | set(got)):
        ranges = [r for r in reported if (r.topic, r.partition) == (stream.topic, stream.partition)]
        streams[stream] = _tally(sent.get(stream, ()), got.get(stream, ()), cut.get(stream, 0), ranges)
    return Tally(streams, foreign)


def _tally(sent: Sequence[Sent], got: Sequence[Got], cut: int, ranges: Sequence[LossRange]) -> StreamTally:
    seen = bytearray(len(sent))
    duplicates = out_of_order = mismatched = unexpected = 0
    highest = -1
    for record in got:
        if not 0 <= record.seq < len(sent):
            unexpected += 1
            continue
        if seen[record.seq]:
            duplicates += 1
        else:
            seen[record.seq] = 1
            if record.seq < highest:
                out_of_order += 1
            highest = max(highest, record.seq)
        mismatched += record.fingerprint != sent[record.seq].fingerprint
    lost, reported_lost, over_reported, checked = [], 0, 0, 0
    for seq in range(min(cut, len(sent))):
        offset = sent[seq].offset
        if offset is None:
            continue
        checked += 1
        covered = any(r.start <= offset < r.end for r in ranges) if ranges else False
        if seen[seq]:
            over_reported += covered
        elif covered:
            reported_lost += 1
        else:
            lost.append(seq)
    return StreamTally(tuple(lost), reported_lost, over_reported, duplicates, out_of_order, mismatched,
                       unexpected, checked)


def true_losses(sent: Mapping[Stream, Sequence[Sent]], got: Mapping[Stream, Sequence[Got]],
                deleted_below: Mapping[tuple[str, int], int]) -> list[LossRange]:
    """What retention really took from the route: acknowledged records below the new log
    start (``deleted_below``, per topic and partition) that never reached the target."""
    missing: dict[tuple[str, int], list[int]] = {}
    for stream, records in sent.items():
        low = deleted_below.get((stream.topic, stream.partition))
        if low is None:
            continue
        arrived = {g.seq for g in got.get(stream, ())}
        missing.setdefault((stream.topic, stream.partition), []).extend(
            r.offset for seq, r in enumerate(records)
            if r.offset is not None and r.offset < low and seq not in arrived)
    return [r for (topic, partition), offsets in sorted(missing.items())
            for r in merge_ranges(topic, partition, [(o, o + 1) for o in offsets])]


def merge_ranges(topic: str, partition: int, spans: Sequence[tuple[int, int]]) -> list[LossRange]:
    """Half-open spans of one partition merged where they touch or overlap, in order."""
    merged: list[list[int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return [LossRange(topic, partition, start, end) for start, end in merged]


def compare_losses(truth: Sequence[LossRange], reported: Sequence[LossRange]) -> list[str]:
    """Where the reported ranges differ from the truth, one line per partition; [] when exact."""
    keys = sorted({(r.topic, r.partition) for r in (*truth, *reported)})
    lines = []
    for topic, partition in keys:
        want = merge_ranges(topic, partition, [(r.start, r.end) for r in truth
                                               if (r.topic, r.partition) == (topic, partition)])
        have = merge_ranges(topic, partition, [(r.start, r.end) for r in reported
                                               if (r.topic, r.partition) == (topic, partition)])
        if want != have:
            lines.append(f"{topic}[{partition}]: truth {_spans(want)}, reported {_spans(have)}")
    return lines


def _spans(ranges: Sequence[LossRange]) -> str:
    return ", ".join(f"[{r.start},{r.end})" for r in ranges) or "nothing"
