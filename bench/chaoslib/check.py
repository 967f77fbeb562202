"""After each fault heals: wait until the records prove the route copied everything, measure when
records flowed again, and account for every record."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from bench.chaoslib.accounting import (
    LossRange,
    Tally,
    account,
    compare_losses,
    longest_pause,
    longest_wait,
    true_losses,
)
from bench.chaoslib.cluster import CLUSTER_NAMES
from bench.chaoslib.context import ROUTE, Chaos, Injected
from bench.chaoslib.evidence import partition_lines
from bench.chaoslib.records import Stream
from bench.chaoslib.report import FaultOutcome, Final


@dataclass(frozen=True)
class Heal:
    """The moment a fault healed, as the checks need it."""

    at: float  # time.monotonic()
    cut: dict[Stream, int]  # records sent per stream before the heal: all must arrive
    marks: dict[Stream, int]  # per steady stream, the number of the first record sent after the heal
    positions: dict[Stream, int]  # records per stream on the target at the heal (where to look from)


def healed(chaos: Chaos) -> Heal:
    """Take the heal's snapshot now."""
    counts = chaos.verifier.counts()
    return Heal(time.monotonic(), counts, {s: counts.get(s, 0) for s in chaos.verifier.active()},
                chaos.reader.positions())


@dataclass
class Checker:
    """The running account across faults: what was already found lost, duplicates so far."""

    chaos: Chaos
    began: float
    lost: dict[tuple[Stream, int], int] = field(default_factory=dict)  # record -> the fault that found it
    duplicates: int = 0
    reported: list[LossRange] = field(default_factory=list)
    tracebacks: set[str] = field(default_factory=set)
    errors: list[str] = field(default_factory=list)
    # Streams that had records missing and nothing new arrived during a whole check: later
    # checks count their records lost at once instead of waiting out their bound for them
    # every time (a partition the route stopped copying would make every check take the
    # bound). A stalled stream that moves again is waited for again.
    stalled: set[Stream] = field(default_factory=set)
    _positions: dict[Stream, int] = field(default_factory=dict)
    _duplicates_of: dict[Stream, int] = field(default_factory=dict)  # per stream, at the previous check
    final_lost: set[tuple[Stream, int]] = field(default_factory=set)

    def settle(self, heal: Heal) -> tuple[float | None, float | None]:
        """Seconds from the heal until every record sent before it arrived, and until a record sent
        after it arrived on every steady partition; None for what did not happen within the bound."""
        deadline = heal.at + self.chaos.settings.settle_timeout
        skip, cut = self._not_awaited(), {s: n for s, n in heal.cut.items() if s not in self.stalled}
        marks = {s: seq for s, seq in heal.marks.items() if s not in self.stalled}
        # No marks at all: nothing is written any more (the final check). Marks, all of them on
        # stalled partitions: records do not flow, and waiting for it would only use up the bound.
        settle_s, flow_s = None, (0.0 if not heal.marks else None)
        while time.monotonic() < deadline and (settle_s is None or (flow_s is None and marks)):
            if settle_s is None and not self.chaos.reader.missing(cut, skip):
                settle_s = time.monotonic() - heal.at
            if flow_s is None and marks:
                flow_s = self._flow(heal, marks)
            time.sleep(0.25)
        return settle_s, flow_s

    def _unsettled(self, heal: Heal) -> str:
        """What the settle still waited for: per stream, how many records from which number, and how many of
        them the source never acknowledged (the verifier's producer still holds them)."""
        sent = self.chaos.verifier.snapshot()
        cut = {s: n for s, n in heal.cut.items() if s not in self.stalled}
        parts = []
        for stream, seqs in sorted(self.chaos.reader.still_missing(cut, self._not_awaited()).items(), key=str)[:5]:
            unacked = sum(1 for seq in seqs if seq < len(sent.get(stream, ())) and sent[stream][seq].offset is None)
            parts.append(f"{stream} {len(seqs)} from #{seqs[0]} ({unacked} not acknowledged by the source)")
        return ", ".join(parts) or "nothing now"

    def _update_stalled(self, tally: Tally) -> None:
        positions = self.chaos.reader.positions()
        moved = {s for s, n in positions.items() if n != self._positions.get(s, 0)}
        missing = {s for s, t in tally.streams.items() if t.lost}
        # still: nothing new since the previous check, or nothing at all yet after a whole bound
        still = {s for s in missing - moved if s in self._positions or not positions.get(s)}
        self.stalled = (self.stalled - moved) | still
        self._positions = positions

    def _not_awaited(self) -> dict[Stream, set[int]]:
        """Records deleted at the source on purpose, and those an earlier check already found lost
        (counted there; each later check would otherwise wait its whole bound for them again)."""
        skip = self.chaos.verifier.excused_now()
        for stream, seq in self.lost.keys():
            skip.setdefault(stream, set()).add(seq)
        return skip

    def _flow(self, heal: Heal, marks: dict[Stream, int]) -> float | None:
        arrivals = [self.chaos.reader.first_at_or_after(s, seq, heal.positions.get(s, 0)) for s, seq in marks.items()]
        if any(a is None for a in arrivals):
            return None
        return max(a for a in arrivals if a is not None) - heal.at

    def tally(self, cut: dict[Stream, int]) -> Tally:
        """The account now, of the records sent before ``cut``."""
        reported = self.chaos.statedb.reported_losses(ROUTE)
        if reported is not None:
            self.reported = reported
        got, foreign = self.chaos.reader.snapshot()
        return account(self.chaos.verifier.snapshot(), got, cut, self.reported, foreign)

    def outcome(self, index: int, kind: str, injected: Injected, duration: float, heal: Heal,
                exits_before: int, injected_at: float) -> FaultOutcome:
        """Settle, account, and describe one fault."""
        settle_s, flow_s = self.settle(heal)
        unsettled = self._unsettled(heal) if settle_s is None else ""
        tally = self.tally(heal.cut)
        new_lost = tally.lost_records() - self.lost.keys()
        self.lost.update(dict.fromkeys(new_lost, index))
        duplicates, self.duplicates = tally.total("duplicates") - self.duplicates, tally.total("duplicates")
        by_partition = self._new_duplicates(tally)
        new_tracebacks = self.chaos.supervisor.new_tracebacks()
        self.tracebacks.update(new_tracebacks)
        self._update_stalled(tally)
        detail = injected.detail + (self._retention(injected.loss_topic) if injected.loss_topic else "")
        if settle_s is None:
            detail += f"; not settled: {unsettled}"
        if self.stalled:
            detail += f"; stalled (not copied during a whole check): {', '.join(map(str, sorted(self.stalled)))}"
        return FaultOutcome(index, kind, injected.side, detail, round(duration, 1),
                            None if flow_s is None else round(flow_s, 2),
                            None if settle_s is None else round(settle_s, 2), len(new_lost), duplicates,
                            tuple(self.chaos.supervisor.exits[exits_before:]), bool(new_tracebacks),
                            round(injected_at - self.began, 1), duplicates_by_partition=by_partition,
                            pause_s=self._pause(heal, injected_at), wait_s=self._wait(heal, injected_at),
                            pause_others_s=self._pause_others(injected, heal, injected_at),
                            reader_renewed=sum(t >= injected_at for t in self.chaos.reader.renewed_at))

    def _pause_others(self, injected: Injected, heal: Heal, injected_at: float) -> float | None:
        """``_pause`` of the steady streams whose partition on the struck side the struck node did not lead (on the
        target, their replica's); None for a fault that did not strike one node."""
        if injected.struck is None or injected.side is None:
            return None
        prefix = f"{CLUSTER_NAMES['source']}." if injected.side == "target" else ""
        spared = {s for s in heal.marks if (prefix + s.topic, s.partition) not in injected.struck}
        return self._pause(heal, injected_at, spared)

    def _pause(self, heal: Heal, injected_at: float, among: set[Stream] | None = None) -> float | None:
        """The longest time, from injection to the heal, in which no record of some steady partition (of ``among``,
        when given) arrived; None for a fault that lasted no time (the start) or when nothing is written (the final
        check)."""
        streams = [s for s in heal.marks if s not in self.stalled and (among is None or s in among)]
        if heal.at <= injected_at or not streams:
            return None
        reader = self.chaos.reader
        return round(max(longest_pause(reader.arrivals_between(s, injected_at, heal.at), injected_at, heal.at)
                         for s in streams), 2)

    def _wait(self, heal: Heal, injected_at: float) -> float | None:
        """The longest a record the source acknowledged while the fault lasted waited to arrive on the target (by
        the end of this check): what the route itself added, the source's unavailability left out."""
        if heal.at <= injected_at:
            return None
        waits = [longest_wait(self.chaos.verifier.sent_of(s), self.chaos.reader.first_arrivals_since(s, injected_at),
                              injected_at, heal.at) for s in heal.cut]
        found = [w for w in waits if w is not None]
        return round(max(found), 2) if found else None

    def _new_duplicates(self, tally: Tally, shown: int = 5) -> tuple[tuple[str, int], ...]:
        """The streams that got extra copies since the previous check, most first (where to look first)."""
        grown = []
        for stream, found in tally.streams.items():
            before = self._duplicates_of.get(stream, 0)
            if found.duplicates > before:
                grown.append((str(stream), found.duplicates - before))
            self._duplicates_of[stream] = found.duplicates
        return tuple(sorted(grown, key=lambda item: (-item[1], item[0]))[:shown])

    def _retention(self, topic: str) -> str:
        got, _ = self.chaos.reader.snapshot()
        truth = true_losses(self.chaos.verifier.snapshot(), got, {(topic, 0): self.chaos.deleted_below[(topic, 0)]})
        mine = [r for r in self.reported if r.topic == topic]
        differences = compare_losses(truth, mine)
        shown = ", ".join(f"[{r.start},{r.end})" for r in mine) or "nothing"
        return f"; route reported {shown}: " + ("exact" if not differences else differences[0])

    def still_lost(self, final_lost: set[tuple[Stream, int]]) -> dict[int, int]:
        """Per fault index, how many of the records its check found missing were never copied."""
        counts: dict[int, int] = {}
        for record in final_lost:
            index = self.lost.get(record)
            if index is not None:
                counts[index] = counts.get(index, 0) + 1
        return counts

    def final(self, seed: int) -> Final:
        """Everything sent, settled (bounded) and accounted for."""
        cut = self.chaos.verifier.counts()
        self.settle(Heal(time.monotonic(), cut, {}, {}))
        tally = self.tally(cut)
        self.final_lost = tally.lost_records()
        got, _ = self.chaos.reader.snapshot()
        verifier = self.chaos.verifier
        sent = verifier.snapshot()
        truth = true_losses(sent, got, self.chaos.deleted_below)
        examples = [f"{stream} record {seq} (source offset {sent[stream][seq].offset})"
                    for stream, seq in sorted(tally.lost_records())[:10]]
        evidence = partition_lines(self.chaos.supervisor.logs(),
                                   {(stream.topic, stream.partition) for stream, _ in tally.lost_records()})
        self.tracebacks.update(self.chaos.supervisor.new_tracebacks())
        return Final(seed, sum(1 for records in sent.values() for r in records if r.offset is not None),
                     tally.total("lost"), tally.total("reported_lost"), tally.total("over_reported"),
                     tally.total("duplicates"), tally.total("out_of_order"), tally.total("mismatched"),
                     tally.total("unexpected"), tally.foreign, len(self.lost.keys() - tally.lost_records()),
                     tuple(compare_losses(truth, self.reported)),
                     tuple(self.errors), tuple(examples), tuple(evidence), tuple(sorted(self.tracebacks)),
                     tuple(self.chaos.supervisor.exits), self.chaos.settings.guarantee, self.chaos.reader.renewals,
                     (verifier.commits, verifier.aborts, verifier.aborted) if verifier.transactional else None)
