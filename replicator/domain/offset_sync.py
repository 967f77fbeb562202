"""The exact, compact map between source and target offsets of one partition, both ways.

A *run* is a stretch of records copied back to back: each one directly follows the
previous on both sides (source and target offsets both + 1), so one ``OffsetSync``
at its start places every record of it. A source gap (transaction markers,
compacted-away offsets) or a foreign write on the target starts a new run;
``previous_source_offset`` tells the reader exactly where the previous run ended.

Both directions read the same runs. :func:`translate` (forward, checkpoints and
failover): a group that committed a source offset, where it resumes on the target.
:func:`translate_inverse` (failback): a group at a target position, where it resumes
on the source; its results name that source offset ``target_offset`` (the offset
on the side translated *to*).

Offsets are Kafka's "next to read" positions. Worked example: records at source
0, 1, 2, transaction markers at 3 and 4, records at 5, 6, copied to target 0..4::

    source    0  1  2  3* 4* 5  6        * marker: no record, nothing copied
    target    0  1  2  -  -  3  4

    syncs     (0 -> 0, previous None)   (5 -> 3, previous 2)

    committed 0   1   2   3   4   5   6   7   8          replicated_end = 7
    forward   E0  E1  E2  E3  E3  E3  E4  E5  Behind(5, max_repeats=1)

    position  0   1   2   3   4   5   6                  replicated_end = 7
    inverse   E0  E1  E2  E5  E6  E7  NotCopied

Forward: ``E3`` at 3 and 4: the next record is 5, at target 3. ``E5`` at 7: right
after the last copy. At 8 the route has not copied 7 yet; resuming at 5 may repeat
it; without ``replicated_end`` only a run's first record counts as copied.

Inverse, the off-by-one: a group at position ``p`` has read the target records
before ``p``; inside a run or right at its end it resumes at ``run source +
(p - run target)``, the source offset after the last record it read (at the end of
a run that may be a marker: resuming there skips nothing). A position on a record
the route did not copy -- a foreign write between runs, anything past the record
before ``replicated_end``, or in the last run when ``replicated_end`` is None or
lags its start -- is ``NotCopied``. Before the first sync: ``BeforeFirstSync``.

Two syncs at the same source offset: the one at the higher target offset wins.
The target log only grows, so a later sync of the same record -- a writer
restarted after a record acknowledged without an offset, a producer replaced and
its records sent again, a re-run after a crash -- lies higher and describes the
newer copy. At the same target offset both describe one copy, re-reported by a
restarted writer: the one that knows where the previous run ended
(``previous_source_offset`` not None, else the highest) wins, as it places the gap
before it exactly. The rule depends on the syncs only, never on their order (the
syncs topic is compacted and read again; duplicates are harmless).

On the wire a run is one record of the compacted syncs topic, keyed by its start and
rewritten as it grows: a run *steps* over a gap -- a transaction marker the route's own
commit left on the target, a source transaction's marker, a foreign write -- instead of
ending there, so an exactly-once route (a marker after each transaction in each partition
it wrote) or a transactional source keeps one record per ``MAX_STEPS`` transactions, not
one per transaction, and each transaction still writes the sync of its own records. A
step ``(records, source_skipped, target_skipped)`` says: ``records`` records back to
back, then that many offsets skipped on each side. :meth:`Run.syncs` expands a run into
the run starts above (a step is exactly the run start an unstepped writer would have
written), so the translator reads expanded runs and never the wire format.

Contract with the hot path: ``replicated_end`` is the route's committed offset,
i.e. the last acknowledged record + 1 (not a position past trailing markers); that
offset is committed only once the syncs explaining it are acknowledged; and the
syncs of one partition go, in order, to one partition of the syncs topic, so a crash
loses only a tail of them. A re-run after a crash copies records again further on
the target; its syncs supersede the older ones they overlap.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TypeAlias

from replicator.domain.record_json import dump_json, load_json, offset_field


@dataclass(frozen=True, slots=True)
class OffsetSync:
    """A run starts: ``source_offset`` is at ``target_offset``.

    The previous run ended at ``previous_source_offset``, the record the writer saw
    just before; None when it had seen none (a new or restarted writer).
    """

    topic: str
    partition: int
    source_offset: int
    target_offset: int
    previous_source_offset: int | None


Step: TypeAlias = tuple[int, int, int]  # records, then source and target offsets skipped

# Steps a run takes before the next gap starts a new one. Each transaction rewrites its
# run whole, so this bounds a sync record (~5 B a step) and what rewriting costs; compaction
# keeps one record per run: one per MAX_STEPS transactions of a partition.
MAX_STEPS = 32


@dataclass(frozen=True, slots=True)
class Run:
    """One record of the syncs topic: a run start and the steps the run took since."""

    start: OffsetSync
    steps: tuple[Step, ...] = ()

    def syncs(self) -> list[OffsetSync]:
        """The run starts this run stands for: its start, then one after each step."""
        out = [self.start]
        start = self.start
        for records, source_skipped, target_skipped in self.steps:
            last = start.source_offset + records - 1
            start = OffsetSync(start.topic, start.partition, last + 1 + source_skipped,
                               start.target_offset + records + target_skipped, last)
            out.append(start)
        return out

    @property
    def key(self) -> tuple[str, int, int]:
        """What the syncs topic keys the run by, shared by all its versions: its partition and start."""
        return self.start.topic, self.start.partition, self.start.source_offset

    @property
    def last(self) -> OffsetSync:
        """The latest run start: the one whose sync must be written before a commit passes it."""
        return self.syncs()[-1] if self.steps else self.start


def latest_runs(runs: Iterable[Run]) -> list[Run]:
    """What a reader of the syncs topic keeps of ``runs`` (in log order): the last record of each key, as
    compaction does."""
    latest: dict[tuple[str, int, int], Run] = {}
    for run in runs:
        latest[run.key] = run
    return list(latest.values())


def kept_syncs(runs: Iterable[Run]) -> list[OffsetSync]:
    """:func:`latest_runs` expanded into run starts (any partitions, in no particular order)."""
    return [sync for run in latest_runs(runs) for sync in run.syncs()]


class OffsetSyncWriter:
    """Turns one partition's delivery reports, in source order, into runs to write."""

    __slots__ = ("_last_source", "_last_target", "_run", "_step_source", "partition", "topic")

    def __init__(self, topic: str, partition: int) -> None:
        """A writer that has seen nothing yet: its first record always starts a run."""
        self.topic = topic
        self.partition = partition
        self._last_source: int | None = None
        self._last_target = 0
        self._run: Run | None = None
        self._step_source = 0  # the source offset the run's current stretch started at

    def observe(self, source_offset: int, target_offset: int) -> Run | None:
        """The run to write when this record starts a run or a step, else None (allocates nothing)."""
        previous, last_target = self._last_source, self._last_target
        self._last_source, self._last_target = source_offset, target_offset
        # Checking both sides, not only the delta target - source: a source gap and
        # a foreign write of the same size keep the delta but are no run.
        if (
            previous is not None
            and source_offset == previous + 1
            and target_offset == last_target + 1
        ):
            return None
        run = self._run
        if (
            run is not None
            and previous is not None
            and source_offset > previous
            and target_offset > last_target
            and len(run.steps) < MAX_STEPS
        ):
            step = (previous - self._step_source + 1, source_offset - previous - 1, target_offset - last_target - 1)
            run = Run(run.start, (*run.steps, step))
        else:
            run = Run(OffsetSync(self.topic, self.partition, source_offset, target_offset, previous))
        self._run, self._step_source = run, source_offset
        return run


@dataclass(frozen=True, slots=True)
class Exact:
    """Resuming at ``target_offset`` repeats and skips no replicated record."""

    target_offset: int


@dataclass(frozen=True, slots=True)
class Behind:
    """Resume at ``target_offset``: nothing is skipped, up to ``max_repeats`` records repeat."""

    target_offset: int
    max_repeats: int


@dataclass(frozen=True, slots=True)
class BeforeFirstSync:
    """The group is before the first replicated record, which is at ``target_offset``."""

    target_offset: int


@dataclass(frozen=True, slots=True)
class Unknown:
    """No sync of the partition is known."""


@dataclass(frozen=True, slots=True)
class NotCopied:
    """(Inverse only.) The target position is on no record the route is known to have copied."""


Translation: TypeAlias = Exact | Behind | BeforeFirstSync | Unknown
InverseTranslation: TypeAlias = Exact | BeforeFirstSync | NotCopied | Unknown


def translate(
    syncs: Sequence[OffsetSync], committed: int, replicated_end: int | None
) -> Translation:
    """Where a group that committed source offset ``committed`` resumes on the target.

    ``syncs``: one partition's, any order, duplicates harmless. ``replicated_end``:
    every record before it is on the target (see the module's contract), or None.
    """
    runs = run_starts(syncs)
    if not runs:
        return Unknown()
    first = runs[0]
    if committed <= first.source_offset:
        if committed == first.source_offset:
            return Exact(first.target_offset)
        return BeforeFirstSync(first.target_offset)
    k = bisect.bisect_right([r.source_offset for r in runs], committed) - 1
    if k + 1 < len(runs):
        return _inside(runs[k], runs[k + 1], committed)
    return _after_last_start(runs[k], committed, replicated_end)


def translate_inverse(
    syncs: Sequence[OffsetSync], position: int, replicated_end: int | None
) -> InverseTranslation:
    """Where a group at target position ``position`` resumes on the source (see the module).

    ``syncs`` and ``replicated_end`` as for :func:`translate`; ``Exact.target_offset``
    is a source offset here.
    """
    runs = run_starts(syncs)
    if not runs:
        return Unknown()
    if position < runs[0].target_offset:
        return BeforeFirstSync(runs[0].source_offset)
    k = bisect.bisect_right([r.target_offset for r in runs], position) - 1
    run = runs[k]
    if k + 1 < len(runs):
        following = runs[k + 1]
        end = _run_end(run, following)
        last = following.source_offset - 1 if end is None else end  # as :func:`_inside` extrapolates
        length = min(last - run.source_offset + 1, following.target_offset - run.target_offset)
    elif replicated_end is None:
        return NotCopied()
    else:
        length = replicated_end - run.source_offset
    if position - run.target_offset > length:
        return NotCopied()  # a foreign record after the run, or one not copied yet
    return Exact(run.source_offset + position - run.target_offset)


def run_starts(syncs: Sequence[OffsetSync]) -> list[OffsetSync]:
    """The run starts translation uses, rising on both sides (the tie and superseded-copy rules above)."""
    if len({(s.topic, s.partition) for s in syncs}) > 1:
        raise ValueError("translate: syncs of several partitions")
    best: dict[int, OffsetSync] = {}
    for sync in syncs:
        # Same start written twice: the tie rule of the module docstring.
        kept = best.get(sync.source_offset)
        if kept is None or _rank(sync) > _rank(kept):
            best[sync.source_offset] = sync
    runs: list[OffsetSync] = []
    for sync in sorted(best.values(), key=lambda s: s.source_offset):
        # One copy of the partition has run starts rising on both sides. A start
        # placed below an earlier one is what is left of a copy that a re-run,
        # resumed from an earlier offset, has since superseded: drop it.
        if not runs or sync.target_offset > runs[-1].target_offset:
            runs.append(sync)
    return runs


def _rank(sync: OffsetSync) -> tuple[int, int]:
    previous = sync.previous_source_offset
    return (sync.target_offset, -1 if previous is None else previous)


def _run_end(run: OffsetSync, following: OffsetSync) -> int | None:
    """The source offset of ``run``'s last record, as ``following`` tells it (None: it does not)."""
    end = following.previous_source_offset
    return end if end is not None and run.source_offset <= end < following.source_offset else None


def _inside(run: OffsetSync, following: OffsetSync, committed: int) -> Exact:
    end = _run_end(run, following)
    if end is None:
        # A restarted writer did not record where this run ended. No sync before
        # the commit is ever missing (the contract), so the records up to
        # `following` continue this run: extrapolating it, capped by the next run
        # start, skips and repeats no copied record (it may land on foreign ones).
        return Exact(
            min(run.target_offset + committed - run.source_offset, following.target_offset)
        )
    if committed <= end:
        return Exact(run.target_offset + committed - run.source_offset)
    return Exact(following.target_offset)  # in the gap: the next record starts `following`


def _after_last_start(
    run: OffsetSync, committed: int, replicated_end: int | None
) -> Exact | Behind:
    # Without replicated_end only the run's first record is known to be copied.
    end = (
        run.source_offset if replicated_end is None else max(run.source_offset, replicated_end - 1)
    )
    if committed <= end + 1:
        return Exact(run.target_offset + committed - run.source_offset)
    return Behind(run.target_offset + end - run.source_offset + 1, committed - end - 1)


def encode_sync(run: Run) -> tuple[bytes, bytes]:
    """Key and value for the compacted syncs topic: one key per run start, so a run's last record is kept.

    A step is written ``records`` when it skips one target offset and no source one (the route's own
    transaction marker, by far the most common), else ``[records, source_skipped, target_skipped]``.
    """
    start = run.start
    key = list(run.key)
    value: dict[str, object] = {
        "target_offset": start.target_offset,
        "previous_source_offset": start.previous_source_offset,
    }
    if run.steps:
        value["steps"] = [n if (s, t) == (0, 1) else [n, s, t] for n, s, t in run.steps]
    return dump_json(key), dump_json(value)


def decode_sync_key(key: bytes) -> tuple[str, int, int]:
    """(topic, partition, source offset of the run start) of a syncs topic key; ValueError when malformed."""
    parts = load_json(key, "offset sync key")
    if not (isinstance(parts, list) and len(parts) == 3):
        raise ValueError(
            f"offset sync key: expected [topic, partition, source_offset], got {parts!r}"
        )
    topic, partition, source_offset = parts
    if not (isinstance(topic, str) and topic):
        raise ValueError(f"offset sync key: topic must be a non-empty string, got {topic!r}")
    return (topic, offset_field(partition, "offset sync key partition"),
            offset_field(source_offset, "offset sync key source_offset"))


def decode_sync(key: bytes, value: bytes) -> Run:
    """The run of a record of the syncs topic; ValueError naming what is malformed."""
    topic, partition, source_offset = decode_sync_key(key)
    fields = load_json(value, "offset sync value")
    if not isinstance(fields, dict):
        # ValueError, not TypeError: this is malformed input, not a caller's mistake.
        raise ValueError(f"offset sync value: expected an object, got {fields!r}")
    previous = fields.get("previous_source_offset")
    start = OffsetSync(
        topic,
        partition,
        source_offset,
        offset_field(fields.get("target_offset"), "offset sync value target_offset"),
        None if previous is None else offset_field(previous, "offset sync value previous_source_offset"),
    )
    return Run(start, _steps(fields.get("steps", [])))


def _steps(raw: object) -> tuple[Step, ...]:
    what = "offset sync value steps"
    if not isinstance(raw, list):
        raise ValueError(f"{what}: expected a list, got {raw!r}")
    steps = []
    for item in raw:
        if isinstance(item, list) and len(item) == 3:
            step = tuple(offset_field(field, what) for field in item)
        elif isinstance(item, int) and not isinstance(item, bool):
            step = (offset_field(item, what), 0, 1)
        else:
            raise ValueError(f"{what}: expected records or [records, source_skipped, target_skipped], got {item!r}")
        if step[0] < 1 or step[1:] == (0, 0):
            raise ValueError(f"{what}: a step has at least one record and skips something, got {item!r}")
        steps.append((step[0], step[1], step[2]))
    return tuple(steps)
