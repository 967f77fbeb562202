"""Stuck partitions: the source's end moves on while the worker's fetch position does not.

librdkafka can stop fetching a partition without a word after a rebalance (reported
against MirrorMaker 2 as strimzi #10612): its lag then grows while every gauge built on
cached watermarks says 0. A worker watches each partition it owns and may fetch -- not
paused by the operator, by a full queue or by the rate limit, placed -- and calls it
stuck when the source's readable end (the last stable offset under ``read_committed``)
is past its fetch position and that position has not moved for ``after`` seconds.

The worker recovers a stuck partition in two steps: first it places it again from its
committed offset (a fresh seek); stuck again, it gives the partition back to the group
(a new consumer). Pure: the caller passes the clock, ends and positions.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from replicator.domain.checkpoint import Partition


class Remedy(StrEnum):
    """What the worker does about a stuck partition."""

    RESEEK = "re-seek"  # place it again from its committed offset
    REJOIN = "rejoin"  # give it back to the group: a new consumer


ESCALATE_WITHIN = 3  # stuck again within this many ``after`` of the last remedy: the next, stronger one


@dataclass(slots=True)
class _Seen:
    position: int | None
    since: float
    behind: bool = False  # at the last look it could fetch, and the source had records past its position


@dataclass(frozen=True, slots=True)
class Stuck:
    """A partition found stuck: where it stands, for how long, and what to do."""

    partition: Partition
    position: int
    end: int
    seconds: float
    remedy: Remedy


@dataclass(frozen=True, slots=True)
class Moving:
    """A partition found stuck before has fetched again."""

    partition: Partition
    position: int


class StuckWatch:
    """Per owned partition: its last fetch position and since when; those reported stuck; the last remedies."""

    def __init__(self, after: float) -> None:
        self.after = after
        self._seen: dict[Partition, _Seen] = {}
        self._reported: dict[Partition, int] = {}  # stuck at this position, not seen past it since
        self._remedied: dict[Partition, float] = {}

    def observe(self, key: Partition, position: int | None, end: int | None, may_fetch: bool,
                now: float) -> Stuck | Moving | None:
        """One look at ``key`` (its fetch position, the source's readable end, whether it may fetch now)."""
        reported = self._reported.get(key)
        if reported is not None and position is not None and position > reported:
            del self._reported[key]
            self._seen[key] = _Seen(position, now)
            return Moving(key, position)
        seen = self._seen.get(key)
        if seen is None or not may_fetch or position is None or end is None or seen.position != position:
            self._seen[key] = _Seen(position, now, may_fetch and position is not None and end is not None
                                    and end > position)
            return None
        if end <= position:  # nothing to fetch: not stuck, however long it stays
            seen.since, seen.behind = now, False
            return None
        seen.behind = True
        if now - seen.since < self.after:
            return None
        # Watched afresh from the remedy on: still stuck ``after`` s later (the remedy did not cure it), it is
        # found again, and given the next remedy.
        self._seen[key] = _Seen(position, now, True)
        self._reported[key] = position
        last = self._remedied.get(key)
        self._remedied[key] = now
        remedy = Remedy.REJOIN if last is not None and now - last < ESCALATE_WITHIN * self.after else Remedy.RESEEK
        return Stuck(key, position, end, now - seen.since, remedy)

    def still_for(self, key: Partition, now: float) -> float | None:
        """How long ``key``'s fetch position has stood with records past it, as of its last look (None: at that
        look it could not fetch, or had nothing to). A remedy starts the count again."""
        seen = self._seen.get(key)
        return now - seen.since if seen is not None and seen.behind else None

    def known_position(self, key: Partition, end: int | None) -> int | None:
        """The position seen last, when it is at or past ``end`` and the partition is not stuck: nothing to
        fetch then, so the caller may observe with it instead of asking the consumer (librdkafka finds each
        partition of a ``position()`` by a walk of its topics: 2,000 of them took 43 ms of the loop on a quiet
        machine). A partition with records past it is always asked."""
        seen = self._seen.get(key)
        if seen is None or seen.position is None or end is None or seen.position < end or key in self._reported:
            return None
        return seen.position

    def stuck(self) -> list[Partition]:
        """The partitions found stuck and not seen fetching since."""
        return sorted(self._reported)

    def recount(self, keys: set[Partition]) -> None:
        """These partitions are placed afresh (a new consumer, say): how long each position has stood is counted
        again from their next look. What was reported stuck stays so until it fetches."""
        for key in keys:
            self._seen.pop(key, None)

    def forget(self, keys: set[Partition]) -> None:
        """No longer owned: nothing more to watch."""
        for key in keys:
            self._seen.pop(key, None)
            self._reported.pop(key, None)
