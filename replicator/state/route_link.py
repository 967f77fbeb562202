"""The worker's view of the state DB: topics added or removed by hand, statuses, losses.

A state DB that does not answer never stops replication. The link logs once when it
goes away (naming why) and once when it answers again. Meanwhile reads are answered
with what the DB last said (a hold is unknown: see :meth:`StateLink.held`), and writes
-- topic statuses and, above all, exact lost ranges -- are kept in order and stored
when it answers; each is an upsert, so one stored twice (its first answer was lost on
the way back) is harmless. While it is away, it is asked again every ``retry_seconds``
and only once each time, so the hot path that calls here is not held up by retries.

The copy loop's own writes (the partitions it placed, the states it found them in, lost
ranges, topics created again) never wait for the DB: they are posted, in order, and a
thread of the link's own stores them at once. A DB that hangs mid-statement holds that
thread, and the topic refresh's reads behind it, never the copy.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from replicator.config import RouteConfig
from replicator.domain.route_topic import HELD, AddedBy, DesiredState, RouteTopic, TopicStatus
from replicator.errors import ConfigError, StateStoreError
from replicator.state import repository, transaction_counts
from replicator.state.outage import RETRY_SECONDS, Outage

if TYPE_CHECKING:
    from replicator.state.store import StateStore
    from replicator.state.transaction_counts import RunCounts, TransactionTotals

log = logging.getLogger(__name__)
T = TypeVar("T")
_UNANSWERED = (StateStoreError, SQLAlchemyError)


@dataclass(frozen=True, slots=True)
class _Write:
    what: str  # for the log, should the worker stop before the DB answers
    work: Callable[[Session], object]
    latest: str | None = None  # a write of what stands now: one kept under the same name is replaced by it


class StateLink:
    """Reads and writes the route's rows in the process's one StateStore (or none)."""

    def __init__(self, route: RouteConfig, store: StateStore | None, retry_seconds: float = RETRY_SECONDS) -> None:
        self.route, self._store = route, store
        self._outage = Outage(route.name, store.url if store else "", retry_seconds)
        self._kept: deque[_Write] = deque()
        self._counts: RunCounts | None = None  # transaction counts not yet kept (see ``transactions``)
        self._manual: tuple[frozenset[str], frozenset[str]] = (frozenset(), frozenset())
        self._paused: frozenset[str] = frozenset()  # topics the operator paused (subscribed, not fetched)
        # The worker's topic refresh reads and writes from a thread of its own, the loop writes losses: one at
        # a time, so kept writes are stored once each and in order.
        self._lock = threading.RLock()
        self.worker: str | None = None  # the worker's name, recorded as the owner of what it places
        # Writes not yet taken into ``_kept``, in the order made: the copy loop appends without the lock, the
        # refresh's writes under it (``_write_now``); ``_flush`` takes them.
        self._posted: deque[_Write] = deque()
        self._wake = threading.Event()
        self._closing = False
        self._writer: threading.Thread | None = None
        self._writer_started = threading.Lock()  # not ``_lock``: a hung DB call holds that one

    def manual_topics(self) -> tuple[set[str], set[str]]:
        """Topics added and removed by ``mirrorflow topics`` (a paused one stays subscribed: see ``paused``).

        While the DB is away, what it said last: its silence must not resume a paused topic.
        """
        def work(session: Session) -> list[RouteTopic]:
            try:
                return repository.operator_topics(session, self.route.name)
            except ConfigError:
                return []  # a route no worker has registered yet: nothing was added or removed by hand

        rows = self._read(work)
        if rows is not None:
            kept = [r for r in rows if r.desired_state != DesiredState.REMOVED]
            self._manual = (frozenset(r.topic for r in kept if r.added_by == AddedBy.CLI),
                            frozenset(r.topic for r in rows if r.desired_state == DesiredState.REMOVED))
            self._paused = frozenset(r.topic for r in rows if r.desired_state in HELD)
        return set(self._manual[0]), set(self._manual[1])

    @property
    def paused(self) -> frozenset[str]:
        """The topics ``mirrorflow topics pause`` paused or a per-topic failover moved, as of the last
        ``manual_topics`` read."""
        return self._paused

    def held(self) -> str | None:
        """Why the route must stop now: a failover holds it (None: it may run, or the DB did not answer)."""
        from replicator.state.failovers import route_hold

        hold = self._read(lambda session: route_hold(session, self.route.name))
        if hold is None:
            return None
        return (f"failover run {hold.run_id} moved the applications to {hold.target!r} while this worker ran: "
                f"it stopped (copying {self.route.source!r} onto {hold.target!r} now would mix old records into "
                "what they read)")

    def replicating(self, started: list[str], stopped: list[str]) -> None:
        """Record which topics the route now copies, and which it stopped copying."""
        self._write(_Write(f"status started={started} stopped={stopped}", lambda session: repository.replicating(
            session, self.route.name, started, stopped)))

    def recreated(self, topic: str, detail: str) -> None:
        """Note on the topic's row that it was deleted and created again, and is copied anew (posted)."""
        self._post(_Write(f"status recreated topic={topic}", lambda session: repository.report_status(
            session, self.route.name, topic, TopicStatus.REPLICATING, detail)))

    def data_loss(self, topic: str, partition: int, lost: tuple[int, int]) -> None:
        """Store an exact lost range (posted; kept until the DB answers)."""
        self._post(_Write(f"data_loss topic={topic} partition={partition} from={lost[0]} to_exclusive={lost[1]}",
                           lambda session: repository.record_data_loss(session, self.route.name, topic, partition,
                                                                       lost)))

    def partition_state(self, topic: str, partition: int, state: str | None, detail: str | None = None) -> None:
        """Store what the worker found the partition in (FAULTED, STUCK; None: it copies it again; posted)."""
        self._post(_Write(f"partition_state topic={topic} partition={partition} state={state}",
                           lambda session: repository.record_partition_state(
                               session, self.route.name, topic, partition, state, detail)))

    def partitions_state(self, partitions: Collection[tuple[str, int]], state: str | None,
                         detail: str | None = None) -> None:
        """``partition_state`` of many partitions in one write (posted)."""
        keys = sorted(partitions)

        def work(session: Session) -> None:
            for topic, partition in keys:
                repository.record_partition_state(session, self.route.name, topic, partition, state, detail)

        self._post(_Write(f"partition_state partitions={len(keys)} state={state}", work))

    def placed(self, partitions: list[tuple[str, int]], keep_state: Collection[tuple[str, int]] = ()) -> None:
        """The worker placed these partitions afresh: it owns them, and what it found them in before is over
        (but for ``keep_state``: stuck ones it placed again stay so until they fetch). Posted."""
        cleared = [key for key in partitions if key not in keep_state]

        def work(session: Session) -> None:
            repository.clear_partition_states(session, self.route.name, cleared)
            if self.worker is not None:
                repository.record_owner(session, self.route.name, self.worker, partitions)

        self._post(_Write(f"placed partitions={len(partitions)}", work))

    def data_losses(self) -> list[tuple[str, int, int, int]] | None:
        """(topic, partition, from, to) of each range retention deleted before the route copied it, oldest first
        (None: the DB is away)."""
        return self._read(lambda session: repository.data_losses(session, self.route.name))

    def transaction_totals(self) -> TransactionTotals | None:
        """The route's transactions committed and aborted, every worker run summed (None: the DB is away)."""
        return self._read(lambda session: transaction_counts.totals(session, self.route.name))

    def transactions(self, counts: RunCounts) -> None:
        """This worker process's transactions committed and aborted as they stand: stored with the link's next
        read or write (the topic refresh's, in a thread of its own, every few seconds) or at ``close``. No I/O
        here: the copy loop calls it, and a state DB that hangs must not hold the loop."""
        self._counts = counts  # one reference: no lock, the latest wins

    def close(self) -> None:
        """The worker stops: it owns nothing more. Ask the DB once more for the writes still kept; log, as an
        error, those that never reached it."""
        self._closing = True
        self._wake.set()
        with self._lock:
            if self.worker is not None and self._store is not None:
                worker = self.worker
                self._posted.append(_Write(f"stopped worker={worker}", lambda session: repository.forget_owner(
                    session, self.route.name, worker)))
            self._close()

    def _close(self) -> None:
        self._outage.retry_now()
        self._keep_counts()
        if self._store is not None and (self._kept or self._posted) and not self._flush():
            log.error("state database unavailable at stop, these writes were not stored route=%s count=%d "
                      "writes=%s", self.route.name, len(self._kept), "; ".join(w.what for w in self._kept))

    def read(self, work: Callable[[Session], T]) -> T | None:
        """One read of the state DB (None: it does not answer), after the kept writes are stored."""
        return self._read(work)

    def _read(self, work: Callable[[Session], T]) -> T | None:
        with self._lock:
            return self._read_now(work)

    def _read_now(self, work: Callable[[Session], T]) -> T | None:
        if self._store is None:
            return None
        if self._flush():
            try:
                result = self._call(work)
            except _UNANSWERED as exc:
                self._outage.failed(exc)
            else:
                self._outage.answered()
                return result
        self._outage.skipped_reads += 1
        return None

    def _write(self, write: _Write) -> None:
        with self._lock:
            self._write_now(write)

    def _post(self, write: _Write) -> None:
        """A write of the copy loop: no I/O and no lock here (the link's writer thread stores it)."""
        if self._store is None or self._closing:
            return
        self._posted.append(write)  # deque appends are atomic: the writer takes them in order
        with self._writer_started:
            if self._writer is None:
                self._writer = threading.Thread(target=self._store_posted, name=f"state-writes-{self.route.name}",
                                                daemon=True)
                self._writer.start()
        self._wake.set()

    def _store_posted(self) -> None:
        """The writer thread: store what was posted as it comes, and ask again for what is kept while the DB is
        away (every ``retry_seconds``), until ``close``."""
        while not self._closing:
            self._wake.wait(self._outage.retry_seconds or 0.1)
            self._wake.clear()
            with self._lock:
                if not self._closing and (self._posted or self._kept) and self._flush():
                    self._outage.answered()

    def _take_posted(self) -> int:
        """Move the posted writes behind the kept ones (under the lock); how many."""
        taken = 0
        while self._posted:
            self._kept.append(self._posted.popleft())
            taken += 1
        return taken

    def _keep_counts(self) -> None:
        """The latest transaction counts join the kept writes, in place of older ones still kept."""
        counts, self._counts = self._counts, None
        if counts is None or self._store is None:
            return
        self._kept = deque(w for w in self._kept if w.latest != "transactions")
        self._kept.append(_Write(f"transactions committed={counts.committed} aborted={counts.aborted}",
                                 lambda session: transaction_counts.save_counts(session, counts),
                                 latest="transactions"))

    def _write_now(self, write: _Write) -> None:
        if self._store is None:
            return
        self._posted.append(write)  # behind what the loop posted before it
        if self._flush():
            self._outage.answered()

    def _flush(self) -> bool:
        """Store the kept writes and then the posted ones, oldest first; False (they stay kept) when the DB does
        not answer (the posted ones count as skipped)."""
        taken = self._take_posted()
        self._keep_counts()
        if self._outage.may_ask():
            while self._kept:
                try:
                    self._call(self._kept[0].work)
                except _UNANSWERED as exc:
                    self._outage.failed(exc)
                    break
                self._kept.popleft()
            else:
                return True
        self._outage.skipped_writes += taken
        return False

    def _call(self, work: Callable[[Session], T]) -> T:
        assert self._store is not None
        return self._store.run(work, attempts=1 if self._outage.away else 3)
