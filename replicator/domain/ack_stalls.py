"""Partitions the target acknowledges nothing of: held apart, so that they do not hold up the others (pure).

A target partition whose leader does not answer this worker -- out of its reach while its cluster sees it
healthy, or frozen until its cluster moves the leadership -- keeps every record sent to it in the producer's
queue. That queue is shared by all the worker's partitions: left alone, the records of the few fill it, and
the whole route stops (seen on three-node clusters with one node black-holed for the workers).

So a partition whose oldest record in flight has waited ``after`` s is *held apart*: nothing more of it is
produced (the worker stops fetching it), and the others go on. Unless the target is slow for all: while the
records it does acknowledge waited long too (the median wait of those acknowledged over the last ``after`` s, at
least, partitions let go after being held apart with what they waited), a partition is held only once it has
waited ``SLOWER`` times that. A fault run at 250 topics x 4 met a
target that acknowledged everything 5-6 s late while the state DB's PostgreSQL stopped beside it (same disk, same
cores): a few hundred partitions were held apart and let go each second, on the target's slowness, not a node's
absence.

Acknowledgements cannot tell a node out of reach from a whole target away: once the queue is full the others have
nothing in flight to be acknowledged. So when the whole target is away every partition with records in flight is
held apart, which is what a full queue does anyway; whether to make room by replacing the producer is decided by
the target's metadata (``nodes_apart``).

A held partition copies again as soon as the target acknowledges one of its records. When its records had to be
dropped to make room, nothing of it is in flight to be acknowledged: it *waits*, then *probes* -- at most
``probe`` records in flight until one is acknowledged -- after ``retry`` s, doubling up to ``retry_max`` s for
each probe that is held again.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from statistics import median

from replicator.domain.change_digest import ChangeDigest

TP = tuple[str, int]

SLOWER = 3.0  # how many times the typical wait of what the target acknowledges a partition's wait must be


@dataclass(slots=True)
class _Apart:
    acked: int | None  # where its acknowledged records ended when held or when its probe began
    stalled_since: float  # since when its oldest record in flight waits (held, or its probe held again)
    retry_at: float | None = None  # waiting: when it probes; None: held, or probing
    probing: bool = False
    oldest: int | None = None  # probing: its oldest record in flight, since ``since``
    since: float = 0.0


@dataclass(frozen=True, slots=True)
class Changes:
    """What one look found: partitions newly held apart, partitions that copy freely again, and partitions
    whose wait is over (they may send ``probe`` records)."""

    held: tuple[TP, ...] = ()
    released: tuple[TP, ...] = ()
    probing: tuple[TP, ...] = ()


class AckStalls:
    """Which partitions are held apart, and how many of their records each may have in flight meanwhile
    (``limits``); ``observe`` is called about once per second, ``after`` / 5 at most."""

    def __init__(self, after: float = 5.0, retry: float = 5.0, retry_max: float = 60.0, probe: int = 100) -> None:
        self.after, self.retry, self.retry_max, self.probe = after, retry, retry_max, probe
        self.limits: dict[TP, int] = {}  # held apart -> records it may have in flight (0: none more)
        self._apart: dict[TP, _Apart] = {}
        self._seen: dict[TP, tuple[int, float]] = {}  # oldest offset in flight, since when
        self._failed_probes: dict[TP, int] = {}
        self._waits: deque[tuple[float, float]] = deque()  # (look's time, median wait of what it found acknowledged)
        self._looked_at: float | None = None
        self.looks = 0
        self.told = ChangeDigest()  # what of ``limits``' changes to tell, and when (a line a look was too many)

    def observe(self, oldest: Mapping[TP, int], acked: Mapping[TP, int | None], now: float) -> Changes:
        """One look: ``oldest`` is the oldest source offset in flight of every owned partition that has records
        in flight (one absent has none); ``acked``, of each of those and each held apart (``limits``), the source
        offset after its last acknowledged record (None: none yet, or not placed)."""
        self.looks += 1
        last, self._looked_at = self._looked_at, now
        waits = self._acknowledged_waits(oldest, last)
        released, probing = [], []
        for key in list(self._apart):
            apart = self._apart[key]
            held_since = apart.stalled_since if apart.retry_at is None and not apart.probing else None
            turn = self._look_apart(key, oldest.get(key), acked.get(key), now)
            if turn == "released":
                released.append(key)
                if held_since is not None and last is not None:  # what it waited is the target's wait too
                    waits.append(max(0.0, last - held_since))
            elif turn == "probing":
                probing.append(key)
        self._keep_waits(waits, now)
        typical = self.typical_wait(now)
        stalled_for = self.after if typical is None else max(self.after, SLOWER * typical)
        for key in [key for key in self._seen if key not in oldest]:  # all acknowledged
            del self._seen[key]
        held = []
        for key, offset in oldest.items():
            if key in self._apart:
                continue
            seen = self._seen.get(key)
            if seen is None or seen[0] != offset:
                self._seen[key] = (offset, now)
            elif now - seen[1] >= stalled_for:
                self._hold(key, acked.get(key), seen[1])
                held.append(key)
        return Changes(tuple(held), tuple(released), tuple(probing))

    def _acknowledged_waits(self, oldest: Mapping[TP, int], last: float | None) -> list[float]:
        """How long the oldest records acknowledged since the last look (at ``last``) waited, at least: from when a
        look first saw one oldest until the last look that still did (the looks are a second apart)."""
        if last is None:
            return []
        return [max(0.0, last - since) for key, (offset, since) in self._seen.items()
                if key not in self._apart and oldest.get(key) != offset]

    def _keep_waits(self, waits: list[float], now: float) -> None:
        """Keep this look's median wait (of partitions acknowledged, held ones let go included) for ``after`` s."""
        if waits:
            self._waits.append((now, median(waits)))
        while self._waits and now - self._waits[0][0] > self.after:
            self._waits.popleft()

    def typical_wait(self, now: float) -> float | None:
        """The median wait of the records the target acknowledged over the last ``after`` s (of each look's
        median), None when it acknowledged none (a target away: nothing to compare with)."""
        recent = [wait for at, wait in self._waits if now - at <= self.after]
        return median(recent) if recent else None

    def _look_apart(self, key: TP, offset: int | None, acked: int | None, now: float) -> str | None:
        """"released" when ``key`` copies freely again, "probing" when its wait is over."""
        apart = self._apart[key]
        if apart.retry_at is not None:  # waiting: its records were dropped
            if now < apart.retry_at:
                return None
            apart.retry_at, apart.probing, apart.acked, apart.oldest = None, True, acked, None
            self.limits[key] = self.probe
            return "probing"
        if acked != apart.acked:  # the target acknowledged one of its records
            self._release(key)
            return "released"
        if apart.probing:
            if offset != apart.oldest:
                apart.oldest, apart.since = offset, now  # a probe record went (or its first one)
            elif offset is not None and now - apart.since >= self.after:
                self._failed_probes[key] = self._failed_probes.get(key, 0) + 1
                apart.probing, apart.stalled_since = False, apart.since  # held again, with what it sent in flight
                self.limits[key] = 0
        return None

    def _hold(self, key: TP, acked: int | None, since: float) -> None:
        self._apart[key] = _Apart(acked, since)
        self.limits[key] = 0
        self._seen.pop(key, None)

    def _release(self, key: TP) -> None:
        del self._apart[key]
        del self.limits[key]
        self._failed_probes.pop(key, None)

    def dropped(self, keys: Iterable[TP], now: float) -> None:
        """The records in flight of ``keys`` are gone (their producer replaced, or placed afresh): those held
        apart wait to probe, the others are watched afresh."""
        for key in keys:
            self._seen.pop(key, None)
            apart = self._apart.get(key)
            if apart is not None:
                delay = min(self.retry_max, self.retry * 2 ** self._failed_probes.get(key, 0))
                apart.retry_at, apart.probing, apart.oldest = now + delay, False, None
                self.limits[key] = 0

    def set_aside(self, keys: Iterable[TP], now: float) -> list[TP]:
        """``keys`` are led by a node that answers nothing: those not held apart yet wait to probe, as if their
        records had been dropped (they would fill the queue next); returns them."""
        added = []
        for key in keys:
            if key not in self._apart:
                self._seen.pop(key, None)
                self._apart[key] = _Apart(None, now, retry_at=now + self.retry)
                self.limits[key] = 0
                added.append(key)
        return added

    def forget(self, keys: Iterable[TP]) -> list[TP]:
        """``keys`` are no longer this worker's; returns those that were held apart."""
        gone, keys = [], list(keys)
        for key in keys:
            self._seen.pop(key, None)
            self._failed_probes.pop(key, None)
            if self._apart.pop(key, None) is not None:
                del self.limits[key]
                gone.append(key)
        self.told.forget(keys, len(self.limits))
        return gone

    def unanswered(self, now: float, for_s: float) -> list[TP]:
        """Partitions held apart with records in flight the target has not acknowledged for ``for_s`` s."""
        return [key for key, apart in self._apart.items()
                if apart.retry_at is None and not apart.probing and now - apart.stalled_since >= for_s]

    def waiting(self, key: TP) -> bool:
        """True while ``key`` waits to probe (nothing of it in flight, nothing to send)."""
        apart = self._apart.get(key)
        return apart is not None and apart.retry_at is not None


def nodes_apart(held: Iterable[int | None], others: Iterable[int | None]) -> frozenset[int] | None:
    """The nodes leading the partitions held apart (``held``: their leaders, None where unknown), when another
    node leads one of the ``others``: the target's stall is those nodes', not all of it. None when no leader of
    the held is known, or none of the others' known leaders is another node."""
    apart = {node for node in held if node is not None}
    if not apart or not {node for node in others if node is not None} - apart:
        return None
    return frozenset(apart)
