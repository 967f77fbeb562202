"""What a worker handed to its producer and has not settled yet, per source partition (pure).

Each owned source partition has a ledger (which offsets are in flight, what may be
committed) and an offset-sync writer. Delivery reports name only the target partition;
they come back in produce order per target partition, so the oldest record in flight
for it is always the one reported.

When a partition is revoked or lost while records are still in flight (a hand-over
while the target is slow or frozen), its ledger is *retired*, not dropped: the late
reports of those records are matched to it and never commit anything, and a new
ledger for the same partition (assigned back to this worker later) starts clean.
Without that, a late report would be taken for a record of the new assignment and
move its commit past records not yet copied.

Offset syncs found by delivery reports wait in ``syncs`` for the loop to produce
them: a callback never produces (a full queue would raise inside librdkafka).

A partition placed goes *alone* until the target acknowledges one of its records with an
offset: one record in flight, the rest kept aside by the worker. Kafka's broker takes any
sequence number as the first of a producer it holds no state of on a partition; when the
first batch fails and is retried (a partition just created, a leader moving), a later batch
sent meanwhile is written first, and the retried one is acknowledged as a duplicate, without
an offset, though never written (the long form of seed 381; confluent-kafka-go#921). The
worker copies such records again, so nothing is lost, but they would land after later ones.
The broker also *forgets* a producer's state of a partition (``producer.id.expiration.ms`` after the
timestamp of its last records there): a partition quiet for a while goes alone again
(``alone_when_quiet``). Records older than that are forgotten as soon as they are written, so their
partition copies them *serially* while few are in flight: librdkafka sends a partition's next batch
while fewer than five records of it are in flight, and two batches in flight are what the race needs.
Such a partition's records then wait aside until the target acknowledged every one in flight, and go
together (``serial``; see ``RouteWorker._drain``).
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Iterable, Mapping

from replicator.domain.inflight import PartitionLedger
from replicator.domain.offset_sync import OffsetSyncWriter, Run

TP = tuple[str, int]


class InFlight:
    """Ledgers, sync writers and retired ledgers of the partitions a worker copies."""

    def __init__(self, first_alone: bool = True) -> None:
        self.ledgers: dict[TP, PartitionLedger] = {}
        self.writers: dict[TP, OffsetSyncWriter] = {}
        self.retired: dict[TP, deque[PartitionLedger]] = defaultdict(deque)
        self.merge_order: dict[TP, deque[str]] = defaultdict(deque)  # target partition -> source topics
        self.syncs: deque[Run] = deque()  # found, not yet produced
        self.purged: list[Run] = []  # produced, then dropped unsent by the producer: produced again first
        # The newest version of each run (by its start) produced and not yet acknowledged with an offset
        self.newest: dict[tuple[str, int, int], Run] = {}
        self.dirty: set[TP] = set()  # partitions whose commit position may have moved
        self.first_alone = first_alone  # an exactly-once worker's are not: its abort takes such records away
        self.alone: set[TP] = set()  # one record in flight until one is acknowledged with an offset
        self.proven: list[TP] = []  # acknowledged since the worker last looked: what they kept aside goes
        self.quiet: dict[TP, tuple[int | None, float]] = {}  # the target end last seen, and since when
        self.serial: set[TP] = set()  # records kept aside until every one in flight is acknowledged

    def owns(self, key: TP) -> bool:
        """True while ``key`` is placed on this worker."""
        return key in self.ledgers

    def open(self, key: TP, placed: int | None = None) -> None:
        """Start copying ``key``: a clean ledger and a writer that has seen nothing."""
        self.ledgers[key] = PartitionLedger(placed)
        self.writers[key] = OffsetSyncWriter(*key)
        self.quiet.pop(key, None)
        self.serial.discard(key)
        if self.first_alone:
            self.alone.add(key)

    def close(self, keys: Iterable[TP]) -> int:
        """Stop copying ``keys`` (revoked or lost); returns how many records were still in flight."""
        unsettled = 0
        for key in keys:
            ledger = self.ledgers.pop(key, None)
            self.writers.pop(key, None)
            self.dirty.discard(key)
            self.alone.discard(key)
            self.quiet.pop(key, None)
            self.serial.discard(key)
            if ledger is not None and len(ledger):
                self.retired[key].append(ledger)
                unsettled += len(ledger)
        return unsettled

    def abandon(self) -> int:
        """The producer of every record in flight is gone (replaced): forget them all, live and
        retired, and the syncs not yet produced; returns how many records were in flight."""
        unsettled = self.unsettled()
        for table in (self.ledgers, self.writers, self.retired, self.merge_order):
            table.clear()
        self.syncs.clear()
        self.purged.clear()
        self.newest.clear()
        self.dirty.clear()
        self.alone.clear()
        self.proven.clear()
        self.quiet.clear()
        self.serial.clear()
        return unsettled

    def alone_when_quiet(self, now: float, after: float) -> list[TP]:
        """Partitions with nothing in flight whose target end has not moved for ``after`` s go alone again, and
        are returned. The target's brokers drop a producer's state of a partition once the timestamp of its
        last records there is ``producer.id.expiration.ms`` old (a day by default, looked at every 10 minutes);
        the partition's next batch then meets the first batch's race. A quiet partition's next record waits
        for nothing; those behind it wait one round trip."""
        if not self.first_alone:
            return []
        quiet, alone, went = self.quiet, self.alone, []
        for key, ledger in self.ledgers.items():
            end = ledger.target_end
            seen = quiet.get(key)
            if seen is None or seen[0] != end or len(ledger):
                quiet[key] = (end, now)
            elif now - seen[1] >= after and key not in alone:
                alone.add(key)
                went.append(key)
        return went

    def produced(self, key: TP, offset: int, target: str | None = None) -> None:
        """The record of ``key`` at ``offset`` went to the producer (``target``: a merged topic)."""
        self.ledgers[key].produced(offset)
        if target is not None:
            self.merge_order[(target, key[1])].append(key[0])

    def source_topic(self, target: str, partition: int, source_of: Mapping[str, str],
                     merged: frozenset[str]) -> str | None:
        """The source topic of the oldest record in flight to ``target[partition]``."""
        if target in merged:
            order = self.merge_order.get((target, partition))
            return order.popleft() if order else None
        return source_of.get(target)

    def ledger_of_report(self, key: TP) -> tuple[PartitionLedger | None, bool]:
        """The ledger a delivery report of ``key`` belongs to, and whether it is the live one."""
        retired = self.retired.get(key)
        if retired:
            ledger = retired[0]
            if len(ledger) <= 1:  # this report settles it
                retired.popleft()
                if not retired:
                    del self.retired[key]
            return ledger, False
        return self.ledgers.get(key), True

    def delivered(self, key: TP, ledger: PartitionLedger, target_offset: int) -> int:
        """A live ledger's oldest record is on the target at ``target_offset``: returns its
        source offset, and queues the offset sync when the record starts a new run or a step of one.
        (A record acknowledged without an offset is no proof it was written: the worker copies it again
        rather than report it here, ``ClientEvents._on_delivery``.)"""
        source_offset = ledger.delivered()
        ledger.target_end = target_offset + 1
        if key in self.alone:
            self.alone.discard(key)
            self.proven.append(key)
        elif self.serial and key in self.serial and not len(ledger):
            self.serial.discard(key)
            self.proven.append(key)  # what it kept aside goes, together
        run = self.writers[key].observe(source_offset, target_offset)
        if run is not None:
            start = run.last
            ledger.hold(start.source_offset, start.previous_source_offset)
            self.syncs.append(run)
            self.newest[run.key] = run
        self.dirty.add(key)
        return source_offset

    def sync_purged(self, run: Run) -> None:
        """``run``'s sync was dropped unsent (its producer purged): it goes again, before the syncs found since."""
        self.purged.append(run)

    def syncs_to_send(self) -> deque[Run]:
        """The syncs to produce, in order: those purged first (in the order they were produced), then the rest."""
        if self.purged:
            self.syncs.extendleft(reversed(self.purged))
            self.purged.clear()
        return self.syncs

    def sync_delivered(self, run: Run) -> None:
        """The target wrote ``run``: the commit may pass every start it holds (an older version of the run
        may have been acknowledged without proof meanwhile)."""
        if self.newest.get(run.key) == run:
            del self.newest[run.key]
        start = run.start
        key = (start.topic, start.partition)
        ledger = self.ledgers.get(key)
        if ledger is not None:
            for each in run.syncs():
                ledger.release(each.source_offset)
            self.dirty.add(key)

    def sync_unproven(self, run: Run) -> None:
        """The target acknowledged ``run`` without an offset: no proof it was written. The newest version of the
        run goes again, not ``run``: compaction keeps the last record of a run, and an older version written
        after a newer one would take the newer one's steps away."""
        self.syncs.append(self.newest.get(run.key, run))

    def commit_positions(self) -> dict[TP, int]:
        """The commit position of every partition whose position may have moved (then clean)."""
        positions = {}
        for key in self.dirty:
            ledger = self.ledgers.get(key)
            position = ledger.commit_offset() if ledger is not None else None
            if position is not None:
                positions[key] = position
        self.dirty.clear()
        return positions

    def unsettled(self) -> int:
        """Records in flight, live and retired."""
        return sum(len(ledger) for ledger in self.ledgers.values()) + sum(
            len(ledger) for queue in self.retired.values() for ledger in queue)

