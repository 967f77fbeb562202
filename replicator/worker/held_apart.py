"""Partitions the target acknowledges nothing of, held apart so that the others go on (``domain.ack_stalls``).

One node of the target out of this worker's reach (while its cluster sees it healthy, so it keeps leading its
partitions) used to stop the whole route: the records sent to its partitions waited in the producer's queue,
which all partitions share, until it was full; then every partition was paused (a three-node fault test: the
other partitions copied nothing for a minute, then the producer was replaced and the queue filled again).

Now such a partition is held apart (``timeouts.ack_stall``, 5 s): its fetching paused, its records fetched
meanwhile kept aside in order (``held_back``), and the other partitions go on. That is enough unless its records
already fill the queue. Then, once they have gone unacknowledged for ``timeouts.ack_give_up`` s (30 s), the
target's metadata is asked (in a thread) which nodes lead the held partitions: when others lead partitions of
this worker, the stall is those nodes', not the whole target's, and the producer is replaced to make room -- what
was in flight is copied again: duplicates, no loss -- and the held partitions wait, then probe with a few
records. A target whose metadata does not answer, or whose every node leads a held partition, is waited for.

An exactly-once route holds none apart: its transaction commits all or nothing.
"""

from __future__ import annotations

import logging
import time
from abc import abstractmethod
from collections import deque
from concurrent.futures import Future
from typing import TYPE_CHECKING

from confluent_kafka import KafkaException, Message, Producer, TopicPartition

from replicator.domain.ack_stalls import nodes_apart
from replicator.domain.change_digest import Digest
from replicator.domain.partition_state import PartitionState
from replicator.domain.producer_memory import forgettable
from replicator.errors import ClusterError
from replicator.kafka import pausing
from replicator.logs import listed
from replicator.worker import metrics
from replicator.worker.client_events import ClientEvents
from replicator.worker.records import TP
from replicator.worker.stall import discard

if TYPE_CHECKING:
    from replicator.domain.ack_stalls import AckStalls
    from replicator.worker.stall import ProducerWatch
    from replicator.worker.subscription import Leaders

log = logging.getLogger(__name__)

LOOK_EVERY_S = 1.0  # between looks at the oldest record in flight of each partition (at most; see below)
# Records of a partition kept aside while its first is in flight (``InFlight.alone``) before its fetching pauses:
# a target that acknowledges nothing would otherwise have every fetched record kept in memory.
FIRST_ASIDE_MAX = 100


class HeldApart(ClientEvents):
    """RouteWorker's base: the partitions held apart. The attributes below are the worker's."""

    producer_watch: ProducerWatch
    ack_stalls: AckStalls
    held_back: dict[TP, deque[Message]]  # records of partitions held apart fetched meanwhile, in order
    _acks_looked_at: float
    _quiet_looked_at: float
    _room_made_at: float
    _leaders_asked: Future[Leaders] | None  # the target's metadata, asked in a thread (``_nodes_apart``)
    _leaders_asked_at: float

    def _watch_held_apart(self) -> None:
        """Each second: hold apart the partitions the target acknowledged nothing of for ``ack_stall`` s; let go
        those it acknowledged again, or whose wait to probe is over."""
        now = time.monotonic()
        if now - self._acks_looked_at < min(LOOK_EVERY_S, self.ack_stalls.after / 5):
            return
        self._acks_looked_at = now
        limits, oldest, acked = self.ack_stalls.limits, {}, {}
        for key, ledger in self.inflight.ledgers.items():
            if len(ledger):
                oldest[key] = ledger.peek()
            if len(ledger) or key in limits:
                acked[key] = ledger.committable
        changes = self.ack_stalls.observe(oldest, acked, now)
        if changes.held:
            self._hold_apart(changes.held)
        if changes.released:
            self._let_go(changes.released)
            self.subscription.state.partitions_state(changes.released, None)
        self._tell_held_apart(self.ack_stalls.told.note(changes.held, changes.released, len(limits), now))
        if changes.probing:
            self._let_go(changes.probing)
            log.info("partitions held apart probe the target route=%s partitions=%s records=%d", self.route.name,
                     listed(f"{t}[{p}]" for t, p in changes.probing), self.ack_stalls.probe)
        metrics.HELD_APART.labels(self.route.name).set(len(self.ack_stalls.limits))

    def _hold_apart(self, keys: tuple[TP, ...]) -> None:
        self._stop_fetching(keys)
        after = self.ack_stalls.after
        self.subscription.state.partitions_state(
            keys, PartitionState.STUCK.value, f"the target acknowledged none of its records for {after:.3g} s or "
            "more (its leader there out of this worker's reach, or the whole target away): held apart, the others go "
            "on")

    def _tell_held_apart(self, digest: Digest | None) -> None:
        """The partitions held apart's changes in a line: when the first is held, when the last copies again, and
        between these at most every ``told.every`` s (the status and the ``held_apart`` gauge say it at once)."""
        if digest is None:
            return
        route, after = self.route.name, self.ack_stalls.after
        if digest.first:
            log.warning("target acknowledged no record of these partitions for %.3g s or more: held apart, fetching "
                        "paused, the others go on route=%s partitions=%s", after, route,
                        listed(f"{t}[{p}]" for t, p in digest.added))
        elif digest.empty:
            log.warning("partitions held apart copy again: the target acknowledged their records; none is held apart "
                        "now route=%s partitions=%s", route, listed(f"{t}[{p}]" for t, p in digest.removed))
        else:
            log.warning("partitions held apart: %d now; in the last %.0f s %d more were held apart (no record "
                        "acknowledged for %.3g s or more) and %d copy again route=%s held=%s copy_again=%s",
                        digest.size, digest.seconds, len(digest.added), after, len(digest.removed), route,
                        listed(f"{t}[{p}]" for t, p in digest.added), listed(f"{t}[{p}]" for t, p in digest.removed))

    def _stop_fetching(self, keys: tuple[TP, ...] | list[TP]) -> None:
        fetching = [key for key in keys if key not in self.hold_paused]
        self.hold_paused.update(keys)
        placed = [TopicPartition(*key) for key in fetching if key in self.inflight.ledgers]
        if placed and self._consumer is not None:
            pausing.pause(self._consumer, placed)

    def _let_go(self, keys: tuple[TP, ...]) -> None:
        """Fetch ``keys`` again (unless something else keeps them paused); their records kept aside go first."""
        for key in keys:
            self.hold_paused.discard(key)
            kept = self.held_back.pop(key, None)
            if kept:
                self.backlog.extendleft(reversed(kept))
        go = [TopicPartition(*key) for key in keys if key in self.inflight.ledgers and key not in self.unplaced
              and not self._kept_from_fetching(key)]
        if go and self._consumer is not None and self.failure is None:
            pausing.resume(self._consumer, go)

    def _keep_aside(self, message: Message, key: TP, pause_at: int = 1) -> None:
        """A record of a partition held apart, fetched before its fetching stopped (or past its probe), or of one
        whose first record is not yet acknowledged with an offset (``InFlight.alone``): kept, in order, until it is
        let go. Fetching stops once ``pause_at`` are kept (going alone: only if they pile up)."""
        kept = self.held_back.setdefault(key, deque())
        kept.append(message)
        if len(kept) >= pause_at and key not in self.hold_paused:
            self._stop_fetching([key])

    def _behind_kept(self, key: TP, in_flight: int) -> None:
        """The backlog's first record is of ``key``, which has records kept aside: none may overtake them. While
        records of ``key`` are in flight it joins them; with none (acknowledged by a report served outside the
        loop's turn: a hand-over's flush, inside the consume that fetched this record) they go back ahead of it.
        Sent first, it moved the partition's expected offset past them, and they came back as repeats of records
        already copied and were dropped, their gap taken for a transaction's marker (CI's short fault run: one
        record lost, silently, after the workers started together)."""
        if in_flight:
            self._keep_aside(self.backlog.popleft(), key, FIRST_ASIDE_MAX)
        else:
            self.backlog.extendleft(reversed(self.held_back.pop(key)))

    def _let_first_go(self) -> None:
        """Partitions whose first record was acknowledged with an offset: what they kept aside goes first, and
        their fetching resumes where it had paused (unless held apart)."""
        keys, self.inflight.proven = self.inflight.proven, []
        self._let_go(tuple(key for key in keys if key in self.hold_paused and key not in self.ack_stalls.limits))
        for key in keys:
            kept = self.held_back.pop(key, None)
            if kept:
                self.backlog.extendleft(reversed(kept))

    def _forgettable(self, message: Message) -> bool:
        """A record so old that the target's brokers forget the producer writing it at their next look: its
        timestamp, which the copy keeps, is ``timeouts.forgets`` old, less an hour (or half) for the clocks of
        the source's producers (``InFlight.serial``)."""
        kind, timestamp = message.timestamp()
        return bool(kind) and forgettable(timestamp, time.time(), self.timeouts.forgets)

    def _watch_quiet(self) -> None:
        """Every quarter of ``quiet`` s: partitions quiet that long go alone again (``InFlight.alone_when_quiet``)."""
        now, after = time.monotonic(), self.timeouts.quiet
        if now - self._quiet_looked_at < after / 4:
            return
        self._quiet_looked_at = now
        went = self.inflight.alone_when_quiet(now, after)
        if went:
            log.debug("partitions quiet for %.3g s send their next record alone route=%s partitions=%d", after,
                      self.route.name, len(went))

    def _forget_held(self, keys: set[TP]) -> None:
        """``keys`` are no longer this worker's (revoked, lost)."""
        gone = self.ack_stalls.forget(keys)
        if gone:
            self.subscription.state.partitions_state(gone, None)
        for key in keys:
            self.held_back.pop(key, None)
        self.hold_paused -= keys

    def _dropped_held(self, keys: set[TP]) -> None:
        """The records in flight of ``keys`` are gone (placed again from the last acknowledged record): those held
        apart wait to probe, fetching nothing meanwhile; what was kept aside is fetched again."""
        self.ack_stalls.dropped(keys, time.monotonic())
        for key in keys:
            self.held_back.pop(key, None)
        apart = keys & set(self.ack_stalls.limits)
        self.hold_paused = (self.hold_paused - keys) | apart

    def _make_room(self) -> bool:
        """The producer's queue is full. Replace it when records of partitions held apart, unacknowledged for
        ``ack_give_up`` s, fill most of it, and the target's nodes leading them lead none of this worker's other
        partitions (see the module's docstring); True when it did, once per ``ack_give_up`` s at most."""
        limits, now, give_up = self.ack_stalls.limits, time.monotonic(), self.timeouts.ack_give_up
        if not limits or now - self._room_made_at < give_up:
            return False
        ledgers = self.inflight.ledgers
        unanswered = {key for key in self.ack_stalls.unanswered(now, give_up) if key in ledgers}
        held = sum(len(ledgers[key]) for key in unanswered)
        if 2 * held < len(self.producer):
            return False
        found = self._nodes_apart(unanswered, set(ledgers) - limits.keys(), now)
        if found is None:
            return False
        nodes, led = found
        log.warning("producer queue full of records the target has not acknowledged for %.3g s, of partitions led "
                    "by %s, which lead none of the others: producer replaced, copying again from the last "
                    "acknowledged record (duplicates, no loss); the other partitions they lead wait too route=%s "
                    "held_records=%d partitions_held=%d", give_up, nodes, self.route.name, held, len(unanswered))
        metrics.ERRORS.labels(self.route.name, "queue_full_of_held").inc()
        self._renew_producer()
        aside = self.ack_stalls.set_aside(led, time.monotonic())
        if aside:
            self._stop_fetching(aside)
            self.subscription.state.partitions_state(
                aside, PartitionState.STUCK.value, f"its leader on the target, {nodes}, acknowledged nothing for "
                f"{give_up:.3g} s: held apart, the others go on")
        self._room_made_at = time.monotonic()
        return True

    def _nodes_apart(self, held: set[TP], others: set[TP], now: float) -> tuple[str, list[TP]] | None:
        """The target nodes leading the ``held`` partitions (named), when others lead partitions of ``others``,
        and those of ``others`` they lead; None when not known yet (the metadata is asked in a thread, once per
        ``ack_stall`` s), or not so."""
        asked = self._leaders_asked
        if asked is None:
            if now - self._leaders_asked_at >= self.ack_stalls.after:
                self._leaders_asked_at = now
                topics = sorted({target for key in held | others if (target := self._target_of(key)) is not None})
                self._leaders_asked = self.subscription.ask_leaders(topics, self.ack_stalls.after)
            return None
        if not asked.done():
            return None
        self._leaders_asked = None
        try:
            leaders, addresses = asked.result()
        except (KafkaException, ClusterError) as exc:
            log.info("partitions held apart: the target's metadata did not say who leads them, asked again in %.3g s "
                     "route=%s error=%s", self.ack_stalls.after, self.route.name, exc)
            return None

        def leader(key: TP) -> int | None:
            target = self._target_of(key)
            return None if target is None else leaders.get((target, key[1]))

        nodes = nodes_apart([leader(key) for key in held], [leader(key) for key in others])
        if nodes is None:
            log.info("partitions held apart: the nodes leading them lead this worker's other partitions too, or "
                     "none is known: the target is waited for route=%s held=%s", self.route.name,
                     listed(f"{t}[{p}]@{leader((t, p))}" for t, p in sorted(held)))
            return None
        return (",".join(f"node {n} ({addresses.get(n, '?')})" for n in sorted(nodes)),
                [key for key in sorted(others) if leader(key) in nodes])

    def _target_of(self, key: TP) -> str | None:
        return self.subscription.target_of.get(key[0])

    def _renew_producer(self) -> None:
        """A new producer, every owned partition copied again from its last acknowledged record."""
        producer = self.producer
        self._start_over()
        self._producer = self._new_producer()
        self.producer_watch.idle()
        discard(producer)

    @abstractmethod
    def _new_producer(self) -> Producer:
        """A new producer to the target with the worker's settings and callbacks (the worker makes it)."""
