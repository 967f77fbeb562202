"""One route's hot path: consume a batch, produce it, store offsets the target acknowledged.

librdkafka does the I/O; this loop only moves references. The no-loss rule: a
source offset is stored (and then committed, ``commit_pace``) only after the
target acknowledged that record and all before it (PartitionLedger).

What keeps the rule true under faults:
- every record the consumer returns is sent, or kept in ``backlog`` (oldest first)
  while the producer's queue is full, or dropped only because its partition is no
  longer placed on this worker (its next owner reads it again from the commit);
- a newly assigned partition is paused until the loop has placed it (committed
  offset, retention, recreated topic) and sought to that position: the callback
  itself makes no network call, and a source that does not answer only delays it;
- a partition handed over while records are still in flight keeps a retired ledger
  for their late reports (see ``inflight``), so they never move a later commit;
- no callback raises into librdkafka (``callbacks.shielded``); offset syncs are
  produced by the loop, never from a delivery callback;
- a cluster that does not answer is waited for, logged once when it goes and once
  when it is back; only bad config, a refused record or a failover stop the route.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections import deque
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition

from replicator.config import Config, RouteConfig
from replicator.domain.ack_stalls import AckStalls
from replicator.domain.commit_pace import CommitPace
from replicator.domain.dead_letter import may_not_fit, record_size
from replicator.domain.inflight import PartitionLedger
from replicator.domain.outage import OutageWatch
from replicator.domain.partition_state import PartitionState
from replicator.domain.provenance import should_skip, with_origin, without_origin
from replicator.domain.rate_limit import TokenBucket, share
from replicator.domain.stuck import StuckWatch
from replicator.domain.withheld import AFTER_S as WITHHELD_AFTER_S
from replicator.domain.withheld import HOLDER_SHARE, KeptWatch, ReleaseWatch, WithheldWatch
from replicator.errors import ClusterError, MirrorFlowError
from replicator.kafka import pausing
from replicator.kafka.clients import (
    KAFKA_CLIENTS,
    ClientFactory,
    commit_interval,
    consumer_settings,
    producer_settings,
    serial_below,
)
from replicator.worker import metrics
from replicator.worker.assignment import Positioner
from replicator.worker.client_events import NOT_THERE
from replicator.worker.dead_letter import DeadLetterError, DeadLetterWriter
from replicator.worker.heartbeat import HeartbeatEmitter
from replicator.worker.held_apart import FIRST_ASIDE_MAX, HeldApart
from replicator.worker.inflight import InFlight
from replicator.worker.links import Links
from replicator.worker.logins import Logins
from replicator.worker.records import (
    TP,
    for_producer,
    headers_of,
    key_of,
    offset_of,
)
from replicator.worker.stall import LoopWatch, ProducerWatch
from replicator.worker.subscription import Leaders, Look, Membership, SourceSilent, Subscription
from replicator.worker.timeouts import WorkerTimeouts

if TYPE_CHECKING:
    from replicator.state.store import StateStore
    from replicator.worker.placing import PlacingRead

log = logging.getLogger(__name__)

def worker_label(worker_id: str | None) -> str:
    """How a worker is named as the owner of its partitions: its ``--worker-id`` (if any), host and process."""
    where = f"{socket.gethostname()}:{os.getpid()}"
    return f"{worker_id}@{where}" if worker_id else where


class RouteFailed(MirrorFlowError):
    """The route stopped on an error it must not ride over (it names topic, partition, offset)."""


class RouteWorker(HeldApart):
    """Replicates one route until ``stop`` is set or an unrecoverable error occurs."""

    FIRST_ALONE = True  # a partition placed sends one record until one is acknowledged (``InFlight.alone``)

    def __init__(self, config: Config, route: RouteConfig, store: StateStore | None = None,
                 batch_size: int = 2000, worker_id: str | None = None, clients: ClientFactory = KAFKA_CLIENTS,
                 timeouts: WorkerTimeouts | None = None) -> None:
        timeouts = timeouts or WorkerTimeouts()
        self.config, self.route, self.batch_size, self.worker_id = config, route, batch_size, worker_id
        self.logins = Logins(config)  # passwords rotated in their files reach the clients below
        clients = self.logins.factory(clients)
        self.clients, self.timeouts = clients, timeouts
        self.subscription = Subscription(config, route, store, timeouts.refresh, clients)
        self.label = worker_label(worker_id)
        self.subscription.state.worker = self.label
        self.positioner = Positioner(route, self.subscription.state.data_loss, self.subscription.recreated)
        self.topic_id_of: dict[TP, str] = {}  # the topic id each owned partition's offsets count records of
        # identity/mapping: loops are cut by header. Without the loop check (a failback's resync
        # restores a cluster's own records) nothing is skipped, stamped, and our stamp naming
        # the target comes off: the records land as they were first written there.
        self.loop_check = route.loop_check
        self.add_origin = route.policy != "prefix" and route.loop_check
        self.inflight = InFlight(first_alone=self.FIRST_ALONE)
        # A partition with fewer records than this in flight may get a second batch in flight (librdkafka's rule for
        # an idempotent producer): its records the target may forget go serially (``InFlight.serial``).
        self.serial_below = serial_below(config, route) if self.FIRST_ALONE else 0
        self.commit_pace = CommitPace(commit_interval(config, route))
        self.unplaced: set[TP] = set()  # assigned, paused, not yet positioned
        self.placing_epoch = 0  # moves whenever partitions are given, taken back or placed afresh (see Placing)
        self._reading: PlacingRead | None = None  # see Placing._place
        self.replays: dict[TP, str] = {}  # records of these not written (why): copy again from the first of them
        self.purged_reports = 0  # reports of records the producer dropped unsent (see ``_drop_unsent``)
        self.resets: set[TP] = set()  # fell off the log; their recovery is still to be done
        self.backlog: deque[Message] = deque()
        self.paused = False  # the whole assignment, by a full producer queue
        self.paused_topics: frozenset[str] = frozenset()  # by the operator: see Placing._follow_pauses
        self.ack_stalls = AckStalls(timeouts.ack_stall, timeouts.ack_retry)  # partitions held apart: held_apart
        self.held_back: dict[TP, deque[Message]] = {}  # their records fetched meanwhile, in order
        self.hold_paused: set[TP] = set()
        self._acks_looked_at = self._room_made_at = self._leaders_asked_at = self._quiet_looked_at = 0.0
        self._leaders_asked: Future[Leaders] | None = None
        limit = route.max_bytes_per_second
        self.limiter = None if limit is None else TokenBucket.full(limit, time.monotonic())
        self.throttled = False  # paused by the rate limit (not by a full queue)
        self.stuck_watch = StuckWatch(route.stuck_after)
        self.withheld_watch = WithheldWatch(min(route.stuck_after, WITHHELD_AFTER_S))
        self.release_watch = ReleaseWatch(self.withheld_watch.after * HOLDER_SHARE)
        self.kept_watch = KeptWatch(self.release_watch.after)
        self._withheld_member: Membership | None = None
        self._unknown_since: tuple[Membership, float] | None = None  # see Watches._watch_unknown
        self.merged: frozenset[str] = frozenset()  # the subscription's, kept here for the hot path
        self.failure: str | None = None
        self.unsafe = False  # a callback failed: commit nothing more
        self._metadata_look: threading.Thread | None = None  # the producer learning a target partition
        self.refused: list[tuple[int | None, KafkaError]] = []
        self._sizes: dict[int, int] = {}  # source offset -> bytes, of records refused as too large
        self.meter = metrics.RouteMeter(route.name)
        dead_letter = route.on_refused_record == "dead-letter"
        self.dead_letters = DeadLetterWriter(config, route, clients) if dead_letter else None
        self.links = Links(route)
        self.outage = OutageWatch(timeouts.outage_hold)
        self.holding: str | None = None  # why copying is held until the worker joins the group anew
        self._retry_at = 0.0
        self._paused_at: float | None = None  # since when a full queue pauses the source
        self._pause_reported = False
        self._consumer: Consumer | None = None
        self._rejoin_at: float | None = None  # when to replace a consumer the group refused (worker id held)
        self._abandoned: set[int] = set()  # clients left behind still closing (see GroupMember._close_client)
        self.reset_rechecked: set[TP] = set()  # see Placing._hold_resets
        self.renewing = False  # see GroupMember._renew_consumer
        self.closing = False  # see GroupMember.closing_a_client
        self._recreations_seen = 0
        self._target_checked_at = 0.0
        self._lag_at = 0.0
        self._lag_pending: list[TP] = []
        self._lag_counts: dict[PartitionState, int] = {}
        self._ends: dict[TP, int] = {}
        self._ends_at = 0.0
        self._assignment_at = time.monotonic() + self.timeouts.assignment
        self._asking_often_until = 0.0  # a minute after the last change of this worker's assignment
        self.id_held_since: float | None = None
        self.group_joined = False  # see GroupMember._say_id_held
        self._producer: Producer | None = None
        self.producer_watch = ProducerWatch(timeouts.stalled)
        self.loop_watch = LoopWatch(route.name, timeouts.stalled, tick=self.clients.checkpoint, cpu=self.clients.cpu)

    # -- lifecycle ---------------------------------------------------------------

    def run(self, stop: threading.Event) -> None:
        """The main loop; flushes, commits and closes on the way out."""
        self._producer = self._new_producer()
        self._consumer = self._new_consumer()
        heartbeat = HeartbeatEmitter.for_route(self.config, self.route, self.clients)  # sla.heartbeats
        if heartbeat is not None:
            heartbeat.start()  # creates the heartbeat topic before the first topic scan
        self.subscription.open()
        log.info("route starting route=%s source=%s target=%s group=%s worker_id=%s", self.route.name,
                 self.route.source, self.route.target, f"mirrorflow-{self.route.name}", self.worker_id or "-")
        self.loop_watch.start()
        try:
            self._loop(stop)
        finally:
            self.loop_watch.stop()
            if heartbeat is not None:
                heartbeat.stop()
            self._shutdown()
        if self.failure:
            raise RouteFailed(f"route {self.route.name}: {self.failure}")

    def _new_producer(self) -> Producer:
        return self.clients.producer(producer_settings(
            self.config, self.route, on_delivery=self._on_delivery, error_cb=self._on_target_error))

    def _new_consumer(self) -> Consumer:
        return self.clients.consumer(consumer_settings(
            self.config, self.route, self.worker_id, on_commit=self._on_commit,
            error_cb=self._on_source_error))

    def _loop(self, stop: threading.Event) -> None:
        while not stop.is_set() and self.failure is None:
            self._woke(self.loop_watch.stood_still())
            self.loop_watch.beat(self.subscription.looking)
            self._watch_outage()
            if self._rejoin_at is not None and time.monotonic() >= self._rejoin_at:
                self._rejoin()
            if self.subscription.due() and not self.subscription.looking:
                self.subscription.start_look(self._ends_wanted(), self._member_wanted())
            if (look := self.subscription.finished_look()) is not None:
                self._resubscribe(look)
            if (self.unplaced or self.resets) and not self.holding and time.monotonic() >= self._retry_at:
                self._place()
            self._renew_after_recreation()
            # librdkafka's batch consume waits its whole timeout unless the batch fills: take
            # what is there at once, and only block (until one arrives) when there is nothing
            # to do. While the queue is full every partition is paused: this call then only
            # serves callbacks, and whatever it returns still joins the backlog.
            messages = self._consume(self.batch_size, 0)
            if not messages and not self.backlog:
                messages = self._consume(1, 0.05)
            if messages and self._woke(self.loop_watch.stood_still()):
                messages = []  # fetched on waking: their partitions may be another's now (placed afresh on rejoining)
            if messages:
                self.links.up("source")
            self.logins.apply()  # a login read again in a callback of the consume above
            self.backlog.extend(messages)
            if not self.holding:
                self._drain()
            self._send_syncs()
            self._serve_producer(0.05 if self.backlog else 0)  # a full queue: wait for room
            if self.inflight.proven:
                self._let_first_go()
            if self.replays:
                self._replay()
            self._watch_producer()
            self._watch_held_apart()
            self._watch_quiet()
            self._store_offsets()
            self._report_backpressure()
            self.meter.publish()
            self._publish_lag()

    def _resubscribe(self, finished: Future[Look]) -> None:
        """Take what the topic refresh found (it ran in a thread of its own while the loop copied)."""
        try:
            look = finished.result()
        except (ClusterError, KafkaException) as exc:
            if isinstance(exc, SourceSilent):  # no answer since it asked, and no error: the source may be frozen
                self.outage.silent_since(exc.asked)
            self.links.trouble("topic refresh", exc)  # keep copying what is subscribed; try again later
            return
        self.links.clear("topic refresh")
        self._source_answers()
        if look.held:
            log.error("route stops: failed over route=%s", self.route.name)
            self.failure = look.held
            return
        topics = self.subscription.apply(look)
        self.merged = self.subscription.merged
        if topics is not None:
            self._subscribe(topics)
            # The group gives a new topic's partitions without any callback of a client that withholds them (seed
            # 26; the exactly-once pairs: a topic added, its partitions withheld 55 s): asked about soon, too.
            self._assignment_changed()
        self._follow_pauses(self.subscription.paused)
        self._share_limit()
        if look.ends is not None:
            self._watch_stuck(look.ends)
        if look.group_unread is not None:  # the withheld watch is blind meanwhile: said once, and when it sees again
            self.links.trouble("reading what the group gave this worker", look.group_unread)
        elif look.group is not None or look.unknown_member is not None:
            self.links.clear("reading what the group gave this worker")
            self._watch_membership(look.group, look.unknown_member)

    def _share_limit(self) -> None:
        """This worker's part of the route's rate limit, by its share of the route's partitions."""
        limit = self.route.max_bytes_per_second
        if self.limiter is None or limit is None:
            return
        rate = share(limit, len(self.inflight.ledgers) + len(self.unplaced), sum(self.subscription.partitions.values()))
        if rate != self.limiter.rate:
            self.limiter.set_rate(rate, time.monotonic())
        metrics.RATE_LIMIT.labels(self.route.name).set(rate)

    # -- the copy ----------------------------------------------------------------

    def _drain(self) -> None:
        """Send the backlog, oldest first, until it is empty or the queue is full (then pause). Records of
        partitions held apart, going alone, or copying serially are kept aside (``held_apart``, ``InFlight``), and
        none overtakes one kept aside (``_behind_kept``)."""
        limits, alone, serial = self.ack_stalls.limits, self.inflight.alone, self.inflight.serial
        chunk: set[TP] = set()  # partitions with nothing in flight when this turn began sending them
        while self.backlog and self.failure is None:
            message = self.backlog[0]
            if message.error() is not None:
                self._on_consume_error(message)
            elif (ledger := self.inflight.ledgers.get(key := key_of(message))) is not None:
                if limits and key in limits and len(ledger) >= limits[key]:
                    self._keep_aside(self.backlog.popleft(), key)
                    continue
                if self.held_back.get(key):
                    self._behind_kept(key, len(ledger))
                    continue
                if not (n := len(ledger)):
                    chunk.add(key)  # what this turn sends of it goes together
                elif (alone and key in alone) or (key not in chunk and (
                        key in serial or (n < self.serial_below and self._forgettable(message)))):
                    if key not in alone:
                        serial.add(key)
                    self._keep_aside(self.backlog.popleft(), key, FIRST_ASIDE_MAX)
                    continue
                if ledger.repeats(offset_of(message)):
                    self._went_back(message, ledger)
                    continue  # taken out of the backlog, with the rest of the repeat
                if ledger.skips(offset_of(message)) and not self._may_skip(message, ledger):
                    return
                if self.limiter is not None and not self.limiter.ready(time.monotonic()):
                    self._pause(True, throttled=True)
                    return
                if not self._send(message):
                    if self._make_room():
                        continue  # a new producer: every partition placed again, this record's too
                    self._pause(True)
                    return
                if self.limiter is not None:
                    self.limiter.spend(len(message.value() or b"") + len(message.key() or b""))
            self.backlog.popleft()
        if self.paused and not self.backlog:
            self._pause(False)

    def _may_skip(self, message: Message, ledger: PartitionLedger) -> bool:
        """A gap before this record: what retention deleted of it is reported (lost); False when the
        route stops on that (on_data_loss: fail), before the record is copied."""
        assert ledger.expected is not None
        self.positioner.skipped(self.consumer, key_of(message), ledger.expected, offset_of(message))
        self.failure = self.failure or self.positioner.failure
        return self.failure is None

    def _went_back(self, message: Message, ledger: PartitionLedger) -> None:
        """The consumer returned a record at or before one already copied, with no seek of ours: seen in
        chaos runs just after a partition was placed (librdkafka applying a late answer to its query of the
        placeholder's log start over our seek; the placeholder is absolute since). Copying it would repeat
        thousands of records: drop the repeat and fetch again from where copying stands."""
        key, expected = key_of(message), ledger.expected
        assert expected is not None
        kept = deque(m for m in self.backlog
                     if m.error() is not None or key_of(m) != key or offset_of(m) >= expected)
        resume = max([expected] + [offset_of(m) + 1 for m in kept if m.error() is None and key_of(m) == key])
        log.warning("source consumer went back to records already copied: skipped, fetching again from where "
                    "copying stands route=%s topic=%s partition=%s offset=%s expected=%s skipped=%d",
                    self.route.name, key[0], key[1], offset_of(message), expected, len(self.backlog) - len(kept))
        metrics.ERRORS.labels(self.route.name, "went_back").inc()
        self.backlog = kept
        try:
            self.consumer.seek(TopicPartition(key[0], key[1], resume))
        except KafkaException as exc:  # unassigned meanwhile: its next owner places it
            log.debug("seek after going back failed route=%s error=%s", self.route.name, exc.args[0].str())

    def _send(self, message: Message) -> bool:
        """Produce one record to the same partition of its target topic; False when the queue is full."""
        headers = headers_of(message)
        if headers is not None and self.loop_check and should_skip(headers, self.route.target):
            return True  # it came from our target: copying it back would loop
        if not self.loop_check:
            headers = without_origin(headers, self.route.target)
        elif self.add_origin:
            headers = with_origin(headers, self.route.source)
        topic, partition = key_of(message)
        if self.dead_letters is not None and self._set_aside(self.dead_letters, message, topic, headers):
            return True
        kind, timestamp = message.timestamp()
        target = self.subscription.target_of[topic]
        try:
            self.producer.produce(
                target, message.value(), message.key(),
                partition=partition, timestamp=timestamp if kind else 0, headers=for_producer(headers),
            )
        except BufferError:
            return False
        except KafkaException as exc:
            return self._not_produced(message, target, partition, exc.args[0])
        self.inflight.produced((topic, partition), offset_of(message), target if target in self.merged else None)
        return True

    def _not_produced(self, message: Message, target: str, partition: int, error: KafkaError) -> bool:
        """``produce`` raised: True when the record is dealt with, False to keep it (first in the backlog)."""
        if error.code() in NOT_THERE:
            self._target_not_ready(target, partition)
            return False  # kept, in order, until the target has the partition
        self._refuse(message, error.str())  # refused before it left: too large for the producer
        return True

    def _set_aside(self, dead_letters: DeadLetterWriter, message: Message, topic: str, headers: Any) -> bool:
        """Dead-letter mode: True when the record cannot fit its target topic and went aside."""
        limit = self.subscription.limit_of.get(topic)
        if limit is None or not may_not_fit(len(message), limit):
            return False
        if record_size(message.key(), message.value(), headers) <= limit:
            return False
        try:
            dead_letters.write(message, limit)
        except DeadLetterError as exc:
            self._not_set_aside(message, exc)
        return True

    def _not_set_aside(self, message: Message, failure: DeadLetterError) -> None:
        """The dead-letter topic did not take the record: the route stops at it."""
        self._refuse(message, str(failure))

    def _refuse(self, message: Message, reason: str) -> None:
        """Stop the route at this record: nothing from its offset on is committed."""
        key = key_of(message)
        if self.inflight.owns(key):
            self.inflight.ledgers[key].block(offset_of(message))
        metrics.ERRORS.labels(self.route.name, "refused").inc()
        if self.failure is None:
            self.failure = f"the record of {key[0]}[{key[1]}] at source offset {message.offset()}: {reason}"
            self.subscription.state.partition_state(key[0], key[1], PartitionState.FAULTED.value,
                                                    f"the record at source offset {message.offset()}: {reason}")
            log.error("route stops at a record it cannot copy route=%s topic=%s partition=%s offset=%s reason=%r",
                      self.route.name, key[0], key[1], message.offset(), reason)

    def _pause(self, paused: bool, throttled: bool = False) -> None:
        consumer = self.consumer
        if paused:
            if not self.paused:
                pausing.pause(consumer, consumer.assignment())
            self.paused, self.throttled = True, throttled
            self._paused_at = self._paused_at or time.monotonic()
            return
        self.paused, self.throttled = False, False
        pausing.resume(consumer, self._may_fetch([tp for tp in consumer.assignment()
                                                  if (tp.topic, tp.partition) not in self.unplaced]))
        if self._pause_reported and self._paused_at is not None:
            log.warning("producer queue has room again: source resumed route=%s paused_s=%.1f",
                        self.route.name, time.monotonic() - self._paused_at)
        self._paused_at, self._pause_reported = None, False

    def _report_backpressure(self) -> None:
        """A pause that lasts is worth one line (short ones are the normal rhythm of a busy route)."""
        since = self._paused_at
        if self.throttled:  # the rate limit holds it: no sign of a slow target
            return
        if since is not None and not self._pause_reported and \
                time.monotonic() - since > self.timeouts.backpressure_report:
            log.warning("target slow or unreachable, producer queue full: source paused route=%s paused_s=%.1f",
                        self.route.name, time.monotonic() - since)
            self._pause_reported = True

    def _watch_producer(self) -> None:
        """Records in flight and no report for ``timeouts.stalled`` s: if the target answers, the
        producer is wedged; a new one copies again from the last acknowledged record."""
        producer = self.producer
        if not len(producer):
            self.producer_watch.idle()
        elif self.producer_watch.due() and self.subscription.target_answers():
            log.warning("target answers but acknowledged nothing for %.0f s: producer replaced, copying again from "
                        "the last acknowledged record (duplicates, no loss) route=%s records=%d",
                        self.producer_watch.silent_for(), self.route.name, len(producer))
            metrics.ERRORS.labels(self.route.name, "producer_replaced").inc()
            self._renew_producer()

    def _last_reports(self) -> None:
        """What the worker stores in the state DB as it stops (the link then tries once more to store what it
        kept): nothing more for an at-least-once worker."""

    def _shutdown(self) -> None:
        if self._consumer is None:
            return
        try:
            if not self.unsafe:
                left = self._settle(self.timeouts.shutdown)
                if left:
                    log.warning("stopping with records the target has not acknowledged: not committed, the next "
                                "owner copies them again route=%s records=%d", self.route.name, left)
                self._commit_now()
        finally:
            self._close_to_stop(self._consumer, "the source consumer")
            if self.dead_letters is not None:
                self.dead_letters.close()
            self._last_reports()
            self.subscription.state.close()  # lost ranges kept while the state DB was away
            log.info("route stopped route=%s", self.route.name)

