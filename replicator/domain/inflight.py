"""Which source offset of one partition may be committed: the hot path's ledger.

A source offset may be committed only when the target acknowledged the record and
every record before it. The idempotent producer reports deliveries in order per
partition, so a FIFO of the offsets in flight is enough: a delivery report always
belongs to the oldest produced offset.

The commit position is always "last acknowledged record + 1" (Kafka's convention:
the next offset to read). Records the route skips (they would loop) never move it
on their own: the offset-sync translator takes the route's committed offset as the
end of what was replicated, and a position past a skipped record, with no record
replicated after it, would let it place a failed-over group past the next record.

A new offset sync (the run-length map changes at ``source_offset``) holds the
commit at the end of the previous run until the sync itself is acknowledged, so
the committed position never outruns the syncs that explain it.
"""

from __future__ import annotations

from collections import deque


class PartitionLedger:
    """In-flight source offsets of one partition, and how far they are settled."""

    __slots__ = ("_fifo", "_holds", "committable", "expected", "placed", "target_end")

    def __init__(self, placed: int | None = None) -> None:
        self._fifo: deque[int] = deque()
        self._holds: dict[int, int] = {}  # sync's source offset -> highest commit allowed
        self.committable: int | None = None
        self.placed = placed  # where copying this partition started (its first record to copy)
        self.expected = placed  # the lowest offset not yet handed to the producer (None: unknown)
        self.target_end: int | None = None  # the target offset after the last acknowledged record, when known

    def resume_from(self) -> int | None:
        """Where copying stands: after the last acknowledged record, else where it started (None: unknown)."""
        return self.placed if self.committable is None else self.committable

    def __len__(self) -> int:
        return len(self._fifo)

    def produced(self, offset: int) -> None:
        """A record was handed to the producer."""
        self._fifo.append(offset)
        self.expected = offset + 1

    def repeats(self, offset: int) -> bool:
        """True for a record at or before one already handed to the producer (or before the placed
        offset): the consumer went back on its own, and copying it again would repeat it."""
        return self.expected is not None and offset < self.expected

    def skips(self, offset: int) -> bool:
        """True for a record after the next one expected: normal where the log has gaps (compaction,
        transaction markers), a loss where retention deleted what was between."""
        return self.expected is not None and offset > self.expected

    def moved_to(self, offset: int) -> None:
        """The worker itself moved the partition's fetch position (recovering it after a reset): records
        from ``offset`` on are expected, even below those already handed over (a truncated or recreated
        log). A move forward changes nothing: records fetched before it still come first."""
        if self.expected is None or offset < self.expected:
            self.expected = offset

    def peek(self) -> int:
        """The oldest source offset still in flight (the next delivery report's)."""
        return self._fifo[0]

    def delivered(self) -> int:
        """The oldest record in flight was acknowledged; returns its source offset."""
        offset = self._fifo.popleft()
        self.committable = offset + 1
        return offset

    def hold(self, sync_source_offset: int, previous_source_offset: int | None) -> None:
        """A sync starting at ``sync_source_offset`` is in flight: commit no further than the
        end of the run before it (or the sync's own record when there was none)."""
        end = sync_source_offset if previous_source_offset is None else previous_source_offset + 1
        self._holds[sync_source_offset] = end

    def release(self, sync_source_offset: int) -> None:
        """The sync starting at ``sync_source_offset`` was acknowledged."""
        self._holds.pop(sync_source_offset, None)

    def block(self, offset: int) -> None:
        """The target refused the record at ``offset``: never commit past it, whatever
        is acknowledged after it."""
        self._holds[-1] = min(offset, self._holds.get(-1, offset))

    def commit_offset(self) -> int | None:
        """The offset to commit now: acknowledged, and explained by acknowledged syncs."""
        if self.committable is None or not self._holds:
            return self.committable
        return min(self.committable, min(self._holds.values()))

    def clear(self) -> None:
        """Forget what is in flight (the partition was revoked or lost)."""
        self._fifo.clear()
        self._holds.clear()
        self.committable = None
