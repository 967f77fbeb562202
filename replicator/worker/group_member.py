"""A route worker's side of the consumer group: joining (and joining again while a crashed process still
holds this worker's id), renewing the consumer, taking partitions, handing them over.

Callbacks served by ``consume`` only record facts and take or release partitions; the
network calls that position a new partition run in the loop (``placing``).
"""

from __future__ import annotations

import logging
import time
from abc import ABC, abstractmethod
from collections import deque
from typing import TYPE_CHECKING

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition

from replicator.domain.commit_metadata import encode_note
from replicator.domain.commit_pace import CommitPace
from replicator.domain.offset_sync import encode_sync
from replicator.kafka import pausing
from replicator.kafka.groups import SETTLING
from replicator.logs import listed
from replicator.worker import metrics
from replicator.worker.assignment import PLACEHOLDER
from replicator.worker.callbacks import shielded
from replicator.worker.closing import ClientCloser
from replicator.worker.records import TP, failed_without_error

if TYPE_CHECKING:
    from replicator.config import Config, RouteConfig
    from replicator.kafka.clients import ClientFactory
    from replicator.worker.inflight import InFlight
    from replicator.worker.links import Links
    from replicator.worker.subscription import Subscription
    from replicator.worker.timeouts import WorkerTimeouts

log = logging.getLogger(__name__)


# What a read of committed positions says while the consumer has not reached its group's coordinator: librdkafka's
# own waits, and the coordinator's answers while it settles (loading the group after its broker's restart).
NO_COORDINATOR = ("_TIMED_OUT", "_WAIT_COORD", "_TRANSPORT", *SETTLING)


class GroupMember(ClientCloser, ABC):
    """RouteWorker's base: what it does when the group gives, takes or loses partitions. The attributes
    below are the worker's (set in its ``__init__``); it supplies ``_new_consumer`` and ``_assignment_changed``."""

    config: Config
    route: RouteConfig
    clients: ClientFactory
    timeouts: WorkerTimeouts
    subscription: Subscription
    inflight: InFlight
    links: Links
    unplaced: set[TP]
    placing_epoch: int
    resets: set[TP]
    backlog: deque[Message]
    topic_id_of: dict[TP, str]
    paused: bool  # the whole assignment, by a full producer queue
    paused_topics: frozenset[str]  # by the operator (``mirrorflow topics pause``): subscribed, not fetched
    hold_paused: set[TP]  # held apart (``held_apart``): not fetched until the target acknowledges them again
    failure: str | None
    unsafe: bool
    _retry_at: float
    id_held_since: float | None
    group_joined: bool  # the group gave partitions to this worker's current member client
    worker_id: str | None
    label: str  # how the worker is named as an owner: ``--worker-id@host:pid`` (``route_worker.worker_label``)
    _rejoin_at: float | None
    _recreations_seen: int
    _consumer: Consumer | None
    _producer: Producer | None
    renewing: bool  # the source consumer is being closed to be replaced (see ``_renew_consumer``)
    purged_reports: int  # reports of records the producer dropped unsent, served so far
    commit_pace: CommitPace  # when the stored offsets are committed (at-least-once)

    @property
    def consumer(self) -> Consumer:
        """The source consumer (there is one while the route runs)."""
        if self._consumer is None:
            raise RuntimeError(f"route {self.route.name} is not running")
        return self._consumer

    @property
    def producer(self) -> Producer:
        """The target producer (there is one while the route runs)."""
        if self._producer is None:
            raise RuntimeError(f"route {self.route.name} is not running")
        return self._producer

    # -- membership: joining, rejoining under a held id, renewing the consumer -------

    @abstractmethod
    def _new_consumer(self) -> Consumer:
        """A new source consumer with the worker's settings and callbacks (the worker makes it)."""

    @abstractmethod
    def _assignment_changed(self) -> None:
        """The group gave, took or lost partitions of this worker (its watches look closer for a while)."""

    @abstractmethod
    def _released(self, partitions: list[TopicPartition]) -> None:
        """This worker's client revoked ``partitions`` of its group (its watches see that the group hears it)."""

    @abstractmethod
    def _forget_held(self, keys: set[TP]) -> None:
        """``keys`` are no longer this worker's: none of them is held apart any more (``held_apart``)."""

    @abstractmethod
    def _dropped_held(self, keys: set[TP]) -> None:
        """The records in flight of ``keys`` are gone: those held apart wait to probe (``held_apart``)."""

    def _subscribe(self, topics: list[str]) -> None:
        consumer = self.consumer
        try:
            if topics:
                consumer.subscribe(topics, on_assign=self._on_assign, on_revoke=self._on_revoke,
                                   on_lost=self._on_lost)
            else:
                consumer.unsubscribe()
        except KafkaException as exc:
            self._subscription_refused("source consumer", exc)

    def _subscription_refused(self, what: str, exc: KafkaException) -> None:
        """librdkafka refuses to change a fatal consumer's subscription (_FATAL). That fatal error also comes out
        of ``consume``, which decides (``_consumer_failed``): the worker id still held, the consumer that
        replaces it at the rejoin subscribes to the whole subscription, this change included; anything else
        stops the route. Found by the fault harness: a topic found while the id was held stopped the worker."""
        if exc.args[0].code() != KafkaError._FATAL:
            raise exc
        log.debug("subscription left to the %s that replaces this one route=%s error=%s", what, self.route.name,
                  exc.args[0].str())

    def _consume(self, count: int, timeout: float) -> list[Message]:
        """Records (and error events) from the source consumer; a fatal error is handled, not raised."""
        consumer = self.consumer
        try:
            return consumer.consume(count, timeout)
        except KafkaException as exc:  # confluent-kafka raises librdkafka's fatal errors from the call
            self._consumer_failed(exc.args[0])
            return []

    def _consumer_failed(self, error: KafkaError) -> None:
        """A fatal error of the source consumer. A worker restarted under its ``--worker-id`` right after
        a crash finds the id still held until the broker times the crashed process out (KIP-848 lets a
        static member take its id over only after a clean leave): it joins again every few seconds
        until then. Anything else stops the route."""
        if not (self.worker_id and "instance ID is still used" in error.str()):
            self.failure = self.failure or f"source consumer: {error.str()}"
            return
        now = time.monotonic()
        if self.id_held_since is None:
            self.id_held_since = now
            self._say_id_held()
        self._rejoin_at = now + self.timeouts.rejoin

    def _say_id_held(self) -> None:
        """Whose membership holds the id. Refused to a client the group had given partitions to, the id is held
        by that client's own membership, which the coordinator fenced (seen on Kafka 4.1 after the group's
        coordinator stalled while the assignment moved: released when that membership's session times out), or
        by a worker started under the same id while this one was out of touch (its session ran out meanwhile).
        Refused to a new client, by this worker's crashed process or a running worker with the same id."""
        if self.group_joined:
            log.warning("worker id refused to this worker's member after the group's coordinator fenced it: held "
                        "by its own fenced membership until that session times out (as after a stall of the "
                        "coordinator), or taken by a worker started with the same id while this one was out of "
                        "touch; joining again every %.0f s route=%s worker_id=%s", self.timeouts.rejoin,
                        self.route.name, self.worker_id)
        else:
            log.warning("worker id still held by an earlier member of the group (this worker's crashed process, "
                        "until the broker's session timeout, or another running worker with the same id): "
                        "joining again every %.0f s route=%s worker_id=%s", self.timeouts.rejoin,
                        self.route.name, self.worker_id)

    def _rejoin(self) -> None:
        self._rejoin_at = None
        self._renew_consumer(None)

    def _renew_consumer(self, reason: str | None, wedged: bool = False) -> None:
        """Close the source consumer (what it holds is handed over: flushed and committed first) and
        join with a new one, subscribed as the old one was. Whatever the reason, the old one may have lost its
        coordinator (a topic created again, a source restarted): its close is bounded (``_close_client``) and its
        hand-over commits without waiting. ``wedged``: kept for the callers that know it stopped answering."""
        if reason is not None:
            log.warning("source consumer renewed route=%s reason=%r", self.route.name, reason)
        if self._consumer is not None:
            self.renewing = True
            try:
                self._close_client(self._consumer, "the source consumer", wedged=True)
            finally:
                self.renewing = False
        self._forget(set(self.inflight.ledgers) | self.unplaced)
        self._consumer, self.group_joined = self._new_consumer(), False
        self._subscribe(sorted(self.subscription.partitions))

    def _reach_coordinator(self) -> None:
        """Before the source consumer is closed at a hold's end: wait, up to ``timeouts.coordinator`` s, until it
        reaches its group's coordinator again (asked by reading one committed position, which librdkafka waits
        for the coordinator to answer), whether the worker owns partitions or none. librdkafka sends a closing
        member's leave only while it knows its coordinator, which it finds again only after it reconnected and
        asked for it: closed before, the group keeps the member (its partitions, and this worker's id) until
        its session times out, and the new consumer waits as long ("worker id still held"). The fault harness
        found it after clean restarts of a one-node source: one rejoin in three to eight took the session
        timeout."""
        consumer = self._consumer
        if consumer is None or not self.subscription.partitions:
            return
        # Any partition of the subscription will do: a member that owns none must leave too, or the group's next
        # assignment gives partitions to it, and they wait for its session to time out (seen in the harness).
        asked = [TopicPartition(min(self.subscription.partitions), 0)]
        deadline = time.monotonic() + self.timeouts.coordinator
        while (left := deadline - time.monotonic()) > 0:
            try:
                consumer.committed(asked, timeout=min(left, 1.0))
                return
            except KafkaException as exc:
                if exc.args[0].name() not in NO_COORDINATOR:
                    return  # the coordinator's answer (a member it fenced meanwhile, say): it is reached
                if exc.args[0].code() != KafkaError._TIMED_OUT:
                    time.sleep(min(left, 0.1))  # said at once: asked again in a moment
            except RuntimeError:  # closed meanwhile
                return
        log.info("the source consumer did not reach its group's coordinator in %.0f s: closed without its leave, "
                 "the group keeps its partitions until its session times out route=%s", self.timeouts.coordinator,
                 self.route.name)

    def _renew_clients(self, reason: str) -> None:
        """New clients for the clients that stopped getting answers: here the source consumer (the group
        member); an exactly-once worker renews its positions group's member too."""
        self._renew_consumer(reason, wedged=True)

    def _renew_after_recreation(self) -> None:
        """librdkafka keeps the leader epochs of a deleted topic and may never fetch the topic created again
        under its name (its epochs start at 0 again: after broker restarts they are lower, and the metadata
        is ignored, silently). A new consumer starts with none."""
        seen, self._recreations_seen = self._recreations_seen, self.subscription.recreations
        if self.subscription.recreations > seen:
            self._renew_consumer("a source topic was deleted and created again")

    # -- rebalance (callbacks served by consume) -----------------------------------

    @shielded("assignment")
    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        """Take the partitions paused; the loop positions them (network calls stay out of callbacks).
        The placeholder start is an absolute offset: a logical one (the log start) sends librdkafka a
        query whose answer, when it comes after our seek, makes it ask again and apply that answer over
        the seek (librdkafka <= 2.16): the partition jumped to the log start of a later moment, past
        records retention deleted meanwhile, with nothing reported. Not the committed offset either:
        librdkafka's own reset on a partition without one leaves it where no seek moves it."""
        if self._left_behind(consumer):
            return
        start = [TopicPartition(tp.topic, tp.partition, PLACEHOLDER) for tp in partitions]
        consumer.incremental_assign(start)
        self.group_joined = True
        pausing.pause(consumer, start)
        keys = {(tp.topic, tp.partition) for tp in partitions}
        self._unplace(keys)
        metrics.owned(self.route.name, self.label, keys)
        self._assignment_changed()
        self._retry_at = 0.0
        log.info("assigned route=%s partitions=%s", self.route.name,
                 listed(f"{tp.topic}[{tp.partition}]" for tp in partitions))

    @shielded("revocation")
    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        """Hand over cleanly: what is in flight acknowledged (within the hand-over time), stored and
        committed first."""
        if self._left_behind(consumer):
            return
        keys = {(tp.topic, tp.partition) for tp in partitions}
        if any(self.inflight.owns(key) for key in keys):
            self._settle(self.timeouts.handover)
            # Renewing the consumer, it may have lost its coordinator: a commit that waits for one could block the
            # close for good (a CI fault run: 45 s, then the worker was killed). Not waited for: at most repeats.
            self._commit_now(keys, asynchronous=self.renewing)
        self._forget(keys)
        self._assignment_changed()
        consumer.incremental_unassign(partitions)
        self._released(partitions)
        log.info("revoked route=%s partitions=%s", self.route.name,
                 listed(f"{tp.topic}[{tp.partition}]" for tp in partitions))

    @shielded("lost partitions")
    def _on_lost(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        """Lost (not handed over): another worker owns them now, commit nothing."""
        if self._left_behind(consumer):
            return
        self._forget({(tp.topic, tp.partition) for tp in partitions})
        self._assignment_changed()
        consumer.incremental_unassign(partitions)
        log.warning("partitions lost route=%s count=%s", self.route.name, len(partitions))

    def _unplace(self, keys: set[TP]) -> None:
        """``keys`` wait to be placed (again): placing reads them from now on, nothing read before counts (their
        committed positions may have moved since: another owner's copy, a commit, an abort)."""
        self.unplaced |= keys
        self.placing_epoch += 1

    def _forget(self, keys: set[TP]) -> None:
        unsettled = self.inflight.close(keys)
        dropped = self._drop_unsent() if unsettled else 0
        for key in keys:
            self.topic_id_of.pop(key, None)
        self.unplaced -= keys
        self.placing_epoch += 1  # what placing read of them is no longer theirs
        self.resets -= keys
        self.backlog = deque(m for m in self.backlog if (m.topic(), m.partition()) not in keys)
        self._forget_held(keys)
        metrics.ASSIGNED.labels(self.route.name).set(len(self.inflight.ledgers))
        metrics.disowned(self.route.name, self.label, keys)
        if unsettled:
            log.warning("handed over with records not yet acknowledged by the target: their next owner "
                        "copies them again (duplicates, no loss) route=%s partitions=%d records=%d "
                        "dropped_unsent=%d", self.route.name, len(keys), unsettled, dropped)

    def _drop_unsent(self) -> int:
        """Partitions went (handed over, lost) with records their producer holds still: the target did not take
        them in time. Sent later, they would repeat what their next owner copies (the fault pairs: 1,164 records
        after a target kill while a worker froze). So what the producer has not sent is dropped -- librdkafka
        purges a whole producer, not a partition -- and the partitions this worker keeps with records in flight
        are copied again from their last acknowledged record (``_start_over``). Their ledgers are retired
        before the purged records' reports are served: those come before the reports of records already sent,
        out of the order a live ledger matches reports in. What was sent is left to its report: it may be
        written. The offset syncs purged are produced again, first. (Not an exactly-once worker's: its
        transaction's abort drops them.) Returns how many records were dropped."""
        producer = self._producer
        if producer is None:
            return 0
        kept = {key for key, ledger in self.inflight.ledgers.items() if len(ledger)}
        try:
            producer.purge(in_queue=True, in_flight=False, blocking=True)
        except KafkaException as exc:
            log.warning("dropping unsent records failed route=%s error=%s", self.route.name, exc.args[0].str())
            return 0
        if kept:  # only in a hand-over of some partitions: a lost assignment or a renewal keeps none, so this
            self._start_over(kept)  # second commit (of the kept) waits only on a coordinator that just answered
        before = self.purged_reports
        self._serve_producer(0)  # the purged reports now: a purged sync goes again before those found later
        return self.purged_reports - before

    def _start_over(self, only: set[TP] | None = None, why: str | None = None) -> None:
        """Copy owned partitions again from their last acknowledged record: commit what was acknowledged,
        forget what is in flight, place them afresh. All of them when the producer they went to is replaced
        (its reports never come); else ``only`` these, whose later reports still come and settle retired
        ledgers without committing anything."""
        consumer = self.consumer
        self._commit_now(only)
        if only is None:
            keys = set(self.inflight.ledgers)
            self.inflight.abandon()
        else:
            keys = only & set(self.inflight.ledgers)
            self.inflight.close(keys)
        self.backlog = deque(m for m in self.backlog if (m.topic(), m.partition()) not in keys)
        self._dropped_held(keys)
        pausing.pause(consumer, [TopicPartition(*key) for key in sorted(keys)])
        self._unplace(keys)
        self.resets -= keys  # placing from the committed offset recovers them too
        self._retry_at = 0.0

    def _serve_producer(self, timeout: float, flush: bool = False) -> int:
        """``poll`` (or ``flush``) the producer: what it returns. librdkafka's fatal errors come out of these as
        a KafkaException (a transactional producer fenced by the target, say), or as a SystemError ("returned
        NULL without setting an exception") when a delivery report took that error first: handed to
        ``_producer_failed``, never raised out of the loop."""
        producer = self.producer
        try:
            return producer.flush(timeout) if flush else producer.poll(timeout)
        except KafkaException as exc:
            self._producer_failed(exc.args[0])
            return len(producer) if flush else 0
        except SystemError as exc:  # its fatal error was taken inside a delivery report: it fails with no error
            self._producer_failed(failed_without_error(exc))
            return len(producer) if flush else 0

    def _producer_failed(self, error: KafkaError) -> None:
        """The producer is in a fatal state: stop the route naming the error (nothing more is committed)."""
        self.failure = self.failure or f"target producer: {error.str()}"

    def _settle(self, timeout: float) -> int:
        """Flush records and offset syncs for up to ``timeout`` s; returns how many are left."""
        deadline = time.monotonic() + timeout
        while True:
            self._send_syncs()
            left = self._serve_producer(max(0.0, min(0.5, deadline - time.monotonic())), flush=True)
            if (left == 0 and not self.inflight.syncs) or time.monotonic() >= deadline:
                return left + len(self.inflight.syncs)

    def _commit_now(self, keys: set[TP] | None = None, asynchronous: bool = False) -> None:
        consumer = self.consumer
        self.inflight.dirty.update(self.inflight.ledgers if keys is None else keys & set(self.inflight.ledgers))
        self._store_moved()
        try:
            if asynchronous:
                consumer.commit(asynchronous=True)
            else:
                consumer.commit(asynchronous=False)
            metrics.COMMITS.labels(self.route.name, "ok").inc()
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError._NO_OFFSET:
                log.warning("commit failed route=%s error=%s", self.route.name, exc.args[0].str())

    # -- offsets ---------------------------------------------------------------------

    def _store_offsets(self) -> None:
        """Each turn: store the commit positions that moved, and commit what is stored when it is due
        (``commit_pace``: librdkafka's own auto-commit would walk the whole assignment every 250 ms)."""
        self._store_moved()
        if self._consumer is not None and not self.unsafe and self.commit_pace.due(time.monotonic()):
            try:
                self._consumer.commit(asynchronous=True)  # its outcome comes to ``_on_commit``
            except KafkaException as exc:
                if exc.args[0].code() != KafkaError._NO_OFFSET:
                    self.commit_pace.failed()
                    log.debug("commit not asked route=%s error=%s", self.route.name, exc.args[0].str())

    def _store_moved(self) -> None:
        if self._consumer is None or self.unsafe or not self.inflight.dirty:
            return
        stored_at = int(time.time() * 1000)  # `mirrorflow status` shows it as "last replicated"
        offsets = [TopicPartition(key[0], key[1], position, metadata=encode_note(stored_at, self.topic_id_of.get(key)))
                   for key, position in self.inflight.commit_positions().items()]
        if offsets:
            self.commit_pace.stored()  # also when a part of them fails below: the rest is stored
            try:
                self._consumer.store_offsets(offsets=offsets)
            except KafkaException as exc:  # a partition unassigned meanwhile: its next owner commits
                log.debug("offsets not stored route=%s error=%s", self.route.name, exc.args[0].str())

    def _send_syncs(self) -> None:
        """Produce the offset syncs the delivery reports found, in order, while the queue has room."""
        syncs = self.inflight.syncs_to_send()
        while syncs:
            key, value = encode_sync(syncs[0])
            try:
                self.producer.produce(self.subscription.sync_topic, value, key, partition=0)
            except BufferError:
                return
            except KafkaException as exc:
                self._sync_not_produced(exc.args[0])
                return
            syncs.popleft()

    def _sync_not_produced(self, error: KafkaError) -> None:
        """``produce`` refused an offset sync (not a full queue). The syncs topic missing from the producer's
        metadata for a moment: kept, produced again at the next turn (the commit waits for it). Anything else
        leaves the producer unusable: stop the route (the commit never passes a sync not written)."""
        if error.code() in (KafkaError._UNKNOWN_PARTITION, KafkaError._UNKNOWN_TOPIC):
            self.subscription.force_refresh(targets=True)
            return
        self.failure = self.failure or f"offset sync not produced: {error.str()}"
