"""One route's hot path: consume a batch, produce it, store offsets the target acknowledged.

librdkafka does the I/O; this loop only moves references. The no-loss rule: a
source offset is stored (and then committed by librdkafka's auto-commit) only
after the target acknowledged that record and all before it (PartitionLedger).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import defaultdict, deque
from typing import TYPE_CHECKING, Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition

from replicator.config import Config, RouteConfig
from replicator.domain.commit_metadata import encode_note
from replicator.domain.dead_letter import may_not_fit, record_size
from replicator.domain.inflight import PartitionLedger
from replicator.domain.offset_sync import OffsetSyncWriter, decode_sync, encode_sync
from replicator.domain.provenance import should_skip, with_origin, without_origin
from replicator.errors import MirrorFlowError
from replicator.sla.heartbeat import HeartbeatEmitter
from replicator.worker import metrics
from replicator.worker.assignment import Positioner
from replicator.worker.clients import consumer_settings, producer_settings
from replicator.worker.dead_letter import DeadLetterError, DeadLetterWriter
from replicator.worker.subscription import Subscription

if TYPE_CHECKING:
    from replicator.state.store import StateStore

log = logging.getLogger(__name__)

TP = tuple[str, int]


class RouteFailed(MirrorFlowError):
    """The route stopped on an error it must not ride over (it names topic, partition, offset)."""


class RouteWorker:
    """Replicates one route until ``stop`` is set or an unrecoverable error occurs."""

    def __init__(self, config: Config, route: RouteConfig, store: StateStore | None = None,
                 batch_size: int = 2000, worker_id: str | None = None) -> None:
        self.config, self.route, self.batch_size, self.worker_id = config, route, batch_size, worker_id
        self.subscription = Subscription(config, route, store)
        self.positioner = Positioner(route, self.subscription.state.data_loss, self.subscription.recreated)
        self.topic_id_of: dict[TP, str] = {}  # the topic id each owned partition's offsets count records of
        # identity/mapping: loops are cut by header. Without the loop check (a failback's resync
        # restores a cluster's own records) nothing is skipped, stamped, and our stamp naming
        # the target comes off: the records land as they were first written there.
        self.loop_check = route.loop_check
        self.add_origin = route.policy != "prefix" and route.loop_check
        self.ledgers: dict[TP, PartitionLedger] = {}
        self.writers: dict[TP, OffsetSyncWriter] = {}
        self.dirty: set[TP] = set()
        self.backlog: list[Message] = []
        self.merged: frozenset[str] = frozenset()  # the subscription's, kept here for the hot path
        self.merge_order: dict[tuple[str, int], deque[str]] = defaultdict(deque)  # see Subscription.merged
        self.failure: str | None = None
        self.refused: list[tuple[int | None, KafkaError]] = []
        self._sizes: dict[int, int] = {}  # source offset -> bytes, of records refused as too large
        self.meter = metrics.RouteMeter(route.name)
        self.dead_letters = DeadLetterWriter(config, route) if route.on_refused_record == "dead-letter" else None
        self.down: set[str] = set()  # "source"/"target" while unreachable
        self._consumer: Consumer | None = None
        self._producer: Producer | None = None

    # -- lifecycle ---------------------------------------------------------------

    def run(self, stop: threading.Event) -> None:
        """The main loop; flushes, commits and closes on the way out."""
        self._producer = Producer(producer_settings(self.config, self.route, on_delivery=self._on_delivery,
                                                    error_cb=self._link_error("target")))
        self._consumer = Consumer(consumer_settings(self.config, self.route, self.worker_id, on_commit=self._on_commit,
                                                    stats_cb=self._on_stats, error_cb=self._link_error("source")))
        heartbeat = HeartbeatEmitter.for_route(self.config, self.route)  # sla.heartbeats
        if heartbeat is not None:
            heartbeat.start()  # creates the heartbeat topic before the first topic scan
        self.subscription.open()
        log.info("route starting route=%s source=%s target=%s group=%s", self.route.name,
                 self.route.source, self.route.target, f"mirrorflow-{self.route.name}")
        try:
            self._loop(stop)
        finally:
            if heartbeat is not None:
                heartbeat.stop()
            self._shutdown()
        if self.failure:
            raise RouteFailed(f"route {self.route.name}: {self.failure}")

    def _loop(self, stop: threading.Event) -> None:
        consumer, producer = self._consumer, self._producer
        assert consumer is not None and producer is not None
        while not stop.is_set() and self.failure is None:
            if self.subscription.due():
                self._resubscribe()
            if self.backlog and not self._drain_backlog():
                consumer.consume(1, 0.05)  # keeps group membership while the target is slow
            else:
                # librdkafka's batch consume waits its whole timeout unless the batch fills:
                # take what is there at once, and only block (until one arrives) when empty.
                messages = consumer.consume(self.batch_size, 0) or consumer.consume(1, 0.05)
                if self.failure:
                    break
                self._replicate(messages)
            producer.poll(0)
            self._store_offsets()
            self.meter.publish()

    def _resubscribe(self) -> None:
        held = self.subscription.state.held()  # a failover began: this worker must not copy on
        if held:
            log.error("route stops: failed over route=%s", self.route.name)
            self.failure = held
            return
        topics = self.subscription.refresh()
        self.merged = self.subscription.merged
        if topics is not None and self._consumer is not None:
            self._consumer.subscribe(topics, on_assign=self._on_assign, on_revoke=self._on_revoke,
                                     on_lost=self._on_lost) if topics else self._consumer.unsubscribe()

    # -- the copy ----------------------------------------------------------------

    def _replicate(self, messages: list[Message]) -> None:
        if messages and "source" in self.down:
            self._link_up("source")
        for index, message in enumerate(messages):
            if message.error() is not None:
                self._on_consume_error(message)
                continue
            if not self._send(message):
                self.backlog = messages[index:]
                self._pause(True)
                return

    def _send(self, message: Message) -> bool:
        """Produce one record to the same partition of its target topic; False when the queue is full."""
        headers = message.headers()
        if headers is not None and self.loop_check and should_skip(headers, self.route.target):
            return True  # it came from our target: copying it back would loop
        if not self.loop_check:
            headers = without_origin(headers, self.route.target)
        elif self.add_origin:
            headers = with_origin(headers, self.route.source)
        topic, partition = message.topic(), message.partition()
        if self.dead_letters is not None and self._set_aside(message, topic, headers):
            return True
        kind, timestamp = message.timestamp()
        target = self.subscription.target_of[topic]
        try:
            self._producer.produce(  # type: ignore[union-attr]
                target, message.value(), message.key(),
                partition=partition, timestamp=timestamp if kind else 0, headers=headers,
            )
        except BufferError:
            return False
        except KafkaException as exc:  # refused before it left: too large for the producer itself
            self._refuse(message, exc.args[0].str())
            return True
        self.ledgers[(topic, partition)].produced(message.offset())
        if self.merged and target in self.merged:
            self.merge_order[(target, partition)].append(topic)  # deliveries come back in this order
        return True

    def _set_aside(self, message: Message, topic: str, headers: Any) -> bool:
        """Dead-letter mode: True when the record cannot fit its target topic and went aside."""
        limit = self.subscription.limit_of.get(topic)
        if limit is None or not may_not_fit(len(message), limit):
            return False
        if record_size(message.key(), message.value(), headers) <= limit:
            return False
        try:
            self.dead_letters.write(message, limit)  # type: ignore[union-attr]
        except DeadLetterError as exc:
            self._refuse(message, str(exc))
        return True

    def _refuse(self, message: Message, reason: str) -> None:
        """Stop the route at this record: nothing from its offset on is committed."""
        key = (message.topic(), message.partition())
        if key in self.ledgers:
            self.ledgers[key].block(message.offset())
        metrics.ERRORS.labels(self.route.name, "refused").inc()
        if self.failure is None:
            self.failure = f"the record of {key[0]}[{key[1]}] at source offset {message.offset()}: {reason}"
            log.error("route stops at a record it cannot copy route=%s topic=%s partition=%s offset=%s reason=%r",
                      self.route.name, key[0], key[1], message.offset(), reason)

    def _drain_backlog(self) -> bool:
        """Send what the full queue refused earlier; True once the backlog is empty."""
        self._producer.poll(0.05)  # type: ignore[union-attr]
        while self.backlog:
            message = self.backlog[0]
            if (message.topic(), message.partition()) in self.ledgers and not self._send(message):
                return False
            self.backlog.pop(0)
        self._pause(False)
        return True

    def _pause(self, paused: bool) -> None:
        consumer = self._consumer
        assert consumer is not None
        assignment = consumer.assignment()
        if assignment:
            (consumer.pause if paused else consumer.resume)(assignment)
        if paused:
            log.warning("target slow or unreachable, producer queue full: pausing the source route=%s",
                        self.route.name)
        else:
            log.warning("producer queue drained: resuming the source route=%s", self.route.name)

    def _on_delivery(self, error: KafkaError | None, message: Message) -> None:
        topic = message.topic()
        if topic == self.subscription.sync_topic:
            self._on_sync_delivery(error, message)
            return
        if self.merged and topic in self.merged:
            order = self.merge_order.get((topic, message.partition()))
            source_topic = order.popleft() if order else None
        else:
            source_topic = self.subscription.source_of.get(topic)
        key = (source_topic, message.partition())
        ledger = self.ledgers.get(key)  # type: ignore[arg-type]
        if error is not None:
            if error.code() == KafkaError.MSG_SIZE_TOO_LARGE and ledger is not None and len(ledger):
                self._sizes[ledger.peek()] = len(message.value() or b"") + len(message.key() or b"")
            self._fail_delivery(error, key, ledger)
            return
        if self.down:
            self._link_up("target")
        if ledger is None:
            return  # revoked and flushed meanwhile: the new owner re-copies from the commit
        source_offset = ledger.delivered()
        sync = self.writers[key].observe(source_offset, message.offset())  # type: ignore[index]
        if sync is not None:
            ledger.hold(sync.source_offset, sync.previous_source_offset)
            sync_key, sync_value = encode_sync(sync)
            self._producer.produce(self.subscription.sync_topic, sync_value, sync_key)  # type: ignore[union-attr]
        self.dirty.add(key)  # type: ignore[arg-type]
        self.meter.records[source_topic] += 1  # type: ignore[index]
        self.meter.bytes[source_topic] += len(message)  # value length, without copying the value  # type: ignore[index]
        if source_offset % 64 == 0:
            kind, ts = message.timestamp()
            if kind and ts > 0:
                metrics.LATENCY.labels(self.route.name).observe(max(0.0, time.time() - ts / 1000))

    def _on_sync_delivery(self, error: KafkaError | None, message: Message) -> None:
        sync = decode_sync(message.key() or b"", message.value() or b"")
        if error is not None:
            self.failure = f"offset sync for {sync.topic}[{sync.partition}] not written: {error.str()}"
            return
        ledger = self.ledgers.get((sync.topic, sync.partition))
        if ledger is not None:
            ledger.release(sync.source_offset)
            self.dirty.add((sync.topic, sync.partition))

    def _fail_delivery(self, error: KafkaError, key: tuple[Any, int], ledger: PartitionLedger | None) -> None:
        """Stop the route: never commit at or past the refused record (a refused batch
        fails every record in it), and name the record at fault."""
        metrics.ERRORS.labels(self.route.name, error.name()).inc()
        offset = ledger.delivered() if ledger is not None and len(ledger) else None
        if ledger is not None and offset is not None:
            ledger.block(offset)  # later records may still be acked: the commit must not pass this one
        self.refused.append((offset, error))
        if self.failure is None:
            log.error("target refused records route=%s topic=%s partition=%s first_offset=%s error=%s",
                      self.route.name, key[0], key[1], offset, error.name())
        self.failure = self._describe_refusal(key)

    def _describe_refusal(self, key: tuple[Any, int]) -> str:
        first, error = self.refused[0]
        where = f"{key[0]}[{key[1]}]"
        if error.code() == KafkaError.MSG_SIZE_TOO_LARGE and self._sizes:
            offset, size = max(self._sizes.items(), key=lambda item: item[1])
            limit = self.subscription.limit_of.get(key[0])
            if limit is not None and record_size(None, b"", None) + size < limit // 2:
                return (f"a batch of {where} from source offset {first} is larger than the target topic accepts "
                        f"(max.message.bytes={limit}) although its records are small: set the route's "
                        f"producer batch.size below {limit}; nothing from offset {first} on was committed")
            return (f"the record of {where} at source offset {offset} ({size} bytes) is larger than the "
                    f"target accepts (MSG_SIZE_TOO_LARGE); nothing from offset {first} on was committed")
        return f"target refused the record of {where} at source offset {first}: {error.name()}: {error.str()}"

    def _store_offsets(self) -> None:
        if not self.dirty or self._consumer is None:
            return
        offsets = []
        stored_at = int(time.time() * 1000)  # `mirrorflow status` shows it as "last replicated"
        for key in self.dirty:
            ledger = self.ledgers.get(key)
            position = ledger.commit_offset() if ledger is not None else None
            if position is not None:
                note = encode_note(stored_at, self.topic_id_of.get(key))
                offsets.append(TopicPartition(key[0], key[1], position, metadata=note))
        self.dirty.clear()
        if offsets:
            self._consumer.store_offsets(offsets=offsets)

    # -- rebalance and errors ------------------------------------------------------

    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        ids = self.subscription.describe_ids(sorted({tp.topic for tp in partitions}))
        positioned = self.positioner.place(consumer, partitions, ids)
        self.failure = self.failure or self.positioner.failure
        for tp in positioned:
            if tp.topic in ids:
                self.topic_id_of[(tp.topic, tp.partition)] = ids[tp.topic]
            self.ledgers[(tp.topic, tp.partition)] = PartitionLedger()
            self.writers[(tp.topic, tp.partition)] = OffsetSyncWriter(tp.topic, tp.partition)
        consumer.incremental_assign(positioned)
        if self.failure:
            consumer.pause(positioned)  # on_data_loss: fail -- copy nothing past the gap
        metrics.ASSIGNED.labels(self.route.name).set(len(self.ledgers))
        log.info("assigned route=%s partitions=%s", self.route.name,
                 ",".join(f"{tp.topic}[{tp.partition}]@{tp.offset}" for tp in positioned))

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        """Hand over cleanly: everything in flight acknowledged, stored and committed first."""
        self._flush_and_commit(partitions)
        self._forget(partitions)
        consumer.incremental_unassign(partitions)
        log.info("revoked route=%s partitions=%s", self.route.name,
                 ",".join(f"{tp.topic}[{tp.partition}]" for tp in partitions))

    def _on_lost(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        """Lost (not handed over): another worker owns them now, commit nothing."""
        self._forget(partitions)
        consumer.incremental_unassign(partitions)
        log.warning("partitions lost route=%s count=%s", self.route.name, len(partitions))

    def _forget(self, partitions: list[TopicPartition]) -> None:
        gone = {(tp.topic, tp.partition) for tp in partitions}
        for key in gone:
            self.ledgers.pop(key, None)
            self.writers.pop(key, None)
            self.topic_id_of.pop(key, None)
            self.dirty.discard(key)
        self.backlog = [m for m in self.backlog if (m.topic(), m.partition()) not in gone]
        metrics.ASSIGNED.labels(self.route.name).set(len(self.ledgers))

    def _flush_and_commit(self, partitions: list[TopicPartition] | None = None) -> None:
        producer, consumer = self._producer, self._consumer
        assert producer is not None and consumer is not None
        left = producer.flush(30)
        if left and partitions is not None:
            # Not acknowledged: not committed either, so the next owner copies them again
            # (duplicates, never loss). Their late reports could not be told apart from a
            # new assignment's, so this worker stops; a restart is the clean state.
            self.failure = f"target did not acknowledge {left} records in 30 s during a hand-over"
        self.dirty.update(self.ledgers if partitions is None else {(p.topic, p.partition) for p in partitions})
        self._store_offsets()
        try:
            consumer.commit(asynchronous=False)
            metrics.COMMITS.labels(self.route.name, "ok").inc()
        except Exception as exc:  # noqa: BLE001 - "nothing to commit" is an exception too
            if "NO_OFFSET" not in str(exc):
                log.warning("commit failed route=%s error=%s", self.route.name, exc)

    def _on_consume_error(self, message: Message) -> None:
        error = message.error()
        metrics.ERRORS.labels(self.route.name, error.name()).inc()
        if error.code() == KafkaError._AUTO_OFFSET_RESET:
            key = (message.topic(), message.partition())
            ledger = self.ledgers.get(key)
            position = ledger.committable if ledger is not None else None
            self.failure = self.positioner.recover(self._consumer, key, position)  # type: ignore[arg-type]
            self.subscription.force_refresh()
        elif error.fatal():
            self.failure = f"source consumer: {error.str()}"
        elif error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
            self.subscription.force_refresh()
        else:
            log.warning("source error route=%s error=%s", self.route.name, error.str())

    def _link_error(self, side: str) -> Any:
        """librdkafka's error callback for one side: log when that cluster becomes unreachable."""
        def on_error(error: KafkaError) -> None:
            if error.code() in (KafkaError._ALL_BROKERS_DOWN, KafkaError._TRANSPORT, KafkaError._AUTHENTICATION,
                                KafkaError._SSL) and side not in self.down:
                self.down.add(side)
                metrics.ERRORS.labels(self.route.name, f"{side}_unreachable").inc()
                log.warning("%s cluster unreachable, retrying (nothing new is committed) route=%s cluster=%s "
                            "error=%r", side, self.route.name, getattr(self.route, side), error.str())
            elif error.fatal():
                self.failure = f"{side} client: {error.str()}"
        return on_error

    def _link_up(self, side: str) -> None:
        self.down.discard(side)
        log.warning("%s cluster reachable again route=%s cluster=%s", side, self.route.name,
                    getattr(self.route, side))

    def _on_stats(self, stats_json: str) -> None:
        """librdkafka's statistics (every 5 s): lag per owned partition, from the stored offsets."""
        for topic, data in json.loads(stats_json).get("topics", {}).items():
            for partition, pdata in data.get("partitions", {}).items():
                lag = pdata.get("consumer_lag_stored", -1)
                if partition != "-1" and lag >= 0 and (topic, int(partition)) in self.ledgers:
                    metrics.LAG.labels(self.route.name, topic, partition).set(lag)

    def _on_commit(self, error: KafkaError | None, _partitions: list[TopicPartition]) -> None:
        ok = error is None or error.code() == KafkaError._NO_OFFSET
        metrics.COMMITS.labels(self.route.name, "ok" if ok else "failed").inc()

    def _shutdown(self) -> None:
        if self._consumer is None:
            return
        try:
            self._flush_and_commit()
        finally:
            self._consumer.close()
            if self.dead_letters is not None:
                self.dead_letters.close()
            self.subscription.state.close()  # lost ranges kept while the state DB was away
            log.info("route stopped route=%s", self.route.name)
