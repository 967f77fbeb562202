"""A route worker placing the partitions the group gave it: each starts paused, is positioned by the loop
(committed offset, retention, a topic created again) and only then fetches.

What a position is decided from (committed offsets, log ranges, topic ids) is read in a thread of its own, by
clients of its own, never in a callback, and read again while the source does not answer: a slow or restarting
source delays the partitions given but holds up neither those copying already nor librdkafka's callbacks. The
decision, and the partitions' start, are the loop's.
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass
from typing import TYPE_CHECKING

from confluent_kafka import Consumer, KafkaException, TopicPartition

from replicator.errors import ClusterError
from replicator.kafka import pausing
from replicator.kafka.clients import close_within, consumer_settings
from replicator.logs import listed
from replicator.worker import metrics
from replicator.worker.assignment import Reads, fetch_from, read_places
from replicator.worker.group_member import GroupMember

if TYPE_CHECKING:
    from collections.abc import Callable

    from replicator.domain.stuck import StuckWatch
    from replicator.worker.assignment import CommittedThrough, Positioner
    from replicator.worker.records import TP

log = logging.getLogger(__name__)

# A partition whose committed position is past its log's end is placed again this much later (see _hold_resets).
RESET_RECHECK_S = 2.0
# A reader (a consumer that never joins) whose close has not returned by then is let go.
READER_CLOSE_S = 5.0


@dataclass(frozen=True, slots=True)
class PlacingRead:
    """Reads under way, started while the worker's placing epoch was ``epoch``: taken only if it still is
    (nothing was given, taken back or placed afresh since), else read again."""

    epoch: int
    future: Future[Reads]


def in_thread(work: Callable[[], Reads], name: str) -> Future[Reads]:
    """``work`` run in a daemon thread; its result, or what it raised, in the future."""
    future: Future[Reads] = Future()

    def run() -> None:
        try:
            future.set_result(work())
        except BaseException as exc:  # noqa: BLE001 - handed to the loop, which reports it or raises it
            future.set_exception(exc)

    threading.Thread(target=run, name=name, daemon=True).start()
    return future


class Placing(GroupMember):
    """RouteWorker's base: placing assigned partitions. The attributes below are the worker's (set in its
    ``__init__``), beside GroupMember's."""

    positioner: Positioner
    topic_id_of: dict[TP, str]  # the topic id each owned partition's offsets count records of
    stuck_watch: StuckWatch
    _reading: PlacingRead | None  # the reads under way (or finished, not taken)
    reset_rechecked: set[TP]  # committed past their log's end, held once (see ``_hold_resets``): placed next time

    def _place(self) -> None:
        """Recover fallen-off partitions; take the reads finished for partitions given since, and start those of
        partitions waiting. The reads wait for the group's coordinator and the partitions' leaders (9 and 10 s
        after a source node died, in a probe): in their thread, what this worker copies already goes on."""
        consumer = self.consumer
        try:
            self._recover_resets(consumer)
        except (ClusterError, KafkaException) as exc:
            self._placing_failed(exc)
            return
        read = self._reading
        if read is not None and read.future.done():
            self._reading = None
            if read.epoch == self.placing_epoch:  # else given, taken back or placed afresh meanwhile: read again
                self._take(consumer, read.future)
        if self._reading is None and self.unplaced and time.monotonic() >= self._retry_at:
            self._reading = self._start_reading(sorted(self.unplaced))

    def _start_reading(self, keys: list[TP]) -> PlacingRead:
        """Read what placing ``keys`` needs, in a thread of its own, through a reader of the source group made
        for it (the worker's consumer, asked from another thread while it fetches, did not answer for 80 s after
        the group's coordinator died: a probe) and the subscription's admin client."""
        partitions = [TopicPartition(t, p) for t, p in keys]
        committed, subscription, route = self._committed_reader(), self.subscription, self.route
        settings, make = consumer_settings(self.config, self.route), self.clients.consumer  # no member: never joins

        def read() -> Reads:
            reader = make(settings)
            try:
                return read_places(route, partitions, subscription.describe_ids,
                                   lambda asked: committed(reader, asked), subscription.watermarks,
                                   lambda asked: reader.offsets_for_times(asked, timeout=10))
            finally:
                close_within(reader.close, READER_CLOSE_S)

        return PlacingRead(self.placing_epoch, in_thread(read, f"placing-{route.name}"))

    def _take(self, consumer: Consumer, finished: Future[Reads]) -> None:
        """Decide where the partitions read start, and start them (on the loop)."""
        try:
            reads = finished.result()
        except (ClusterError, KafkaException) as exc:
            self._placing_failed(exc)
            return
        ids = dict(reads.topic_ids)
        placed = self.positioner.decide(reads)
        self.links.clear("placing assigned partitions")
        self.failure = self.failure or self.positioner.failure
        placed = self._hold_resets(placed)
        started = [tp for tp in placed if self._start(consumer, tp, ids)]
        if started and self.id_held_since is not None:
            log.warning("worker id released: joined the group route=%s waited_s=%.1f", self.route.name,
                        time.monotonic() - self.id_held_since)
            self.id_held_since = None
        fetching = self._may_fetch(started)
        if fetching and not self.paused and self.failure is None:  # on_data_loss: fail copies nothing past the gap
            pausing.resume(consumer, fetching)
        if started:
            # What a worker found these in is over now -- but a stuck one placed again by this worker stays STUCK
            # until it fetches (domain.stuck): a remedy that does not cure it must not clear it.
            self.subscription.state.placed([(tp.topic, tp.partition) for tp in started],
                                           keep_state=set(self.stuck_watch.stuck()))
            metrics.ASSIGNED.labels(self.route.name).set(len(self.inflight.ledgers))
            log.info("placed route=%s partitions=%s", self.route.name,
                     listed(f"{tp.topic}[{tp.partition}]@{tp.offset}" for tp in started))

    def _hold_resets(self, placed: list[TopicPartition]) -> list[TopicPartition]:
        """Those of ``placed`` to start now. One whose committed position is past its log's end (the topic was
        deleted and created again, or truncated) waits for one more placement, RESET_RECHECK_S later, after a
        look at the topics: right after a topic is created again the brokers may still describe it by the
        deleted one's id, and records of the new topic copied under that id would be taken for the deleted
        topic's and copied again (the exactly-once fault run found 8 and 16 duplicates so)."""
        suspect = {key for key in self.positioner.reset if key not in self.reset_rechecked}
        if not suspect:
            return placed
        self.reset_rechecked |= suspect
        self.subscription.force_refresh()
        self._retry_at = time.monotonic() + RESET_RECHECK_S
        return [tp for tp in placed if (tp.topic, tp.partition) not in suspect]

    def _placing_failed(self, exc: Exception) -> None:
        """Placing failed: said once, tried again shortly."""
        self.links.trouble("placing assigned partitions", exc)
        self._retry_at = time.monotonic() + self.timeouts.retry

    def _may_fetch(self, partitions: list[TopicPartition]) -> list[TopicPartition]:
        """Those of ``partitions`` whose topic the operator has not paused, and not held apart."""
        return [tp for tp in partitions
                if tp.topic not in self.paused_topics and (tp.topic, tp.partition) not in self.hold_paused]

    def _kept_from_fetching(self, key: TP) -> bool:
        """A full queue pauses every partition, the operator ``key``'s topic, or it is held apart."""
        return self.paused or key[0] in self.paused_topics or key in self.hold_paused

    def _follow_pauses(self, topics: frozenset[str]) -> None:
        """Pause the owned partitions of topics the operator paused, resume those of topics resumed: no
        rebalance, the group keeps every partition where it is. A paused partition's prefetched records are
        dropped by librdkafka and fetched again on resume: nothing skipped."""
        if self._consumer is None:
            self.paused_topics = topics
            return
        newly, lifted = topics - self.paused_topics, self.paused_topics - topics
        self.paused_topics = topics
        consumer = self.consumer
        assigned = consumer.assignment()
        metrics.PAUSED.labels(self.route.name).set(sum(tp.topic in topics for tp in assigned))
        stop = [tp for tp in assigned if tp.topic in newly]
        go = [tp for tp in assigned if tp.topic in lifted and (tp.topic, tp.partition) not in self.unplaced]
        if stop:
            pausing.pause(consumer, stop)
        if go and not self.paused and self.failure is None:
            pausing.resume(consumer, go)
        for what, changed, partitions in (("paused", newly, stop), ("resumed", lifted, go)):
            if changed:
                log.info("topics %s by the operator route=%s topics=%s partitions=%d", what, self.route.name,
                         ",".join(sorted(changed)), len(partitions))

    def _fetch_from(self, consumer: Consumer, tp: TopicPartition) -> None:
        """Make the consumer fetch ``tp`` from its placed offset (assigned paused by ``_on_assign``)."""
        fetch_from(consumer, tp)
        if self._kept_from_fetching((tp.topic, tp.partition)):  # assigned afresh (after a reset error), it would fetch
            consumer.pause([TopicPartition(tp.topic, tp.partition)])

    def _committed_reader(self) -> CommittedThrough:
        """How placing reads the committed positions (in its thread; made on the loop): the source group's, through
        the reader it is given."""
        return lambda reader, partitions: reader.committed(partitions, timeout=15)

    def _start(self, consumer: Consumer, tp: TopicPartition, ids: dict[str, str]) -> bool:
        key = (tp.topic, tp.partition)
        try:
            self._fetch_from(consumer, tp)
        except KafkaException as exc:
            self._placing_failed(exc)
            return False
        self.unplaced.discard(key)
        self.reset_rechecked.discard(key)
        self.inflight.open(key, tp.offset if tp.offset >= 0 else None)
        if tp.topic in ids:
            self.topic_id_of[key] = ids[tp.topic]
        return True

    def _recover_resets(self, consumer: Consumer) -> None:
        self.positioner.reset = set()
        for key in sorted(self.resets):
            ledger = self.inflight.ledgers.get(key)
            position = ledger.resume_from() if ledger is not None else None
            moved_to = self.positioner.recover(consumer, key, position)
            self.failure = self.failure or self.positioner.failure
            if moved_to is not None and ledger is not None:
                ledger.moved_to(moved_to)
            self.resets.discard(key)
            self.subscription.force_refresh()
            if key in self.positioner.reset:  # past its log's end: placed afresh, its topic's id read again
                self._start_over({key}, "a partition's position is past its log's end (its topic created again, "
                                        "or truncated): placing it afresh")
                continue
            if self._kept_from_fetching(key):  # a partition assigned afresh fetches
                consumer.pause([TopicPartition(*key)])
