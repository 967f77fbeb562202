"""A producer to a FakeCluster, with librdkafka's bounded queue and poll-served delivery reports."""

from __future__ import annotations

import time
import zlib
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from confluent_kafka import KafkaError, KafkaException

from replicator.testing.cluster import FakeCluster
from replicator.testing.login import FakeLogin
from replicator.testing.message import FakeMessage, Headers
from replicator.testing.process import FakeProcess

DEFAULT_MAX_MESSAGE_BYTES = 1_048_588  # the broker's default max.message.bytes
DeliveryCallback = Callable[[KafkaError | None, FakeMessage], Any]
# An idempotent librdkafka producer sends a partition's next batch only while fewer of its records are in flight.
BATCH_BLOCKS = 5


@dataclass(slots=True)
class Queued:
    """A record waiting for the broker's acknowledgement."""

    topic: str
    partition: int
    key: bytes | None
    value: bytes | None
    headers: Headers
    timestamp: int
    callback: DeliveryCallback | None
    batch: int = 0  # the producer's turn it was queued in: a partition's records of one turn are one batch


class FakeProducer(FakeLogin):
    """``produce`` into a bounded queue; ``poll``/``flush`` write to the cluster and report deliveries."""

    def __init__(self, settings: dict[str, Any], cluster: FakeCluster, process: FakeProcess | None = None) -> None:
        self.cluster = cluster
        self._remember_login(settings)
        self.process = process or FakeProcess("producer")
        self.capacity = int(settings.get("queue.buffering.max.messages", 100_000))
        self.on_delivery: DeliveryCallback | None = settings.get("on_delivery")
        self.queue: deque[Queued] = deque()
        self._round = -1  # the partitioner's turn for records without a key
        self.wedged = False  # accepts records, reports nothing, while the cluster answers (``wedge``)
        self.purged: deque[Queued] = deque()  # dropped by ``purge``, reported as such by the next poll
        self.queue_full = 0  # produce() calls refused with BufferError
        # Partitions the cluster holds this producer's state of: each with the cluster's count of forgets then
        self.written_to: dict[tuple[str, int], int] = {}
        self._turn = 0  # poll and flush calls so far: records queued between two are batched together

    def __len__(self) -> int:
        return len(self.queue)

    def produce(self, topic: str, value: bytes | None = None, key: bytes | None = None, partition: int = -1,
                on_delivery: DeliveryCallback | None = None, timestamp: int = 0, headers: Headers = None,
                callback: DeliveryCallback | None = None) -> None:
        """Queue a record; BufferError when the queue is full (as librdkafka's QUEUE_FULL)."""
        self.process.checkpoint()
        if len(self.queue) >= self.capacity:
            self.queue_full += 1
            raise BufferError("Local: Queue full")
        with self.cluster.lock:  # librdkafka checks the partition against its metadata before queueing
            known = self.cluster.topics.get(topic)
            if known is None:
                raise KafkaException(KafkaError(KafkaError._UNKNOWN_TOPIC, "Local: Unknown topic"))
            if partition < 0:  # librdkafka's default partitioner: by key's hash, else any partition
                partition = zlib.crc32(key) % len(known.logs) if key is not None else self._next_partition(known)
            if partition >= len(known.logs) or (topic, partition) in self.cluster.hidden_partitions:
                raise KafkaException(KafkaError(KafkaError._UNKNOWN_PARTITION, "Local: Unknown partition"))
        self.queue.append(Queued(topic, partition, key, value, headers, timestamp,
                                 on_delivery or callback or self.on_delivery, self._turn))

    def _next_partition(self, topic: Any) -> int:
        self._round = (self._round + 1) % len(topic.logs)
        return self._round

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> object:
        """Ask for metadata (the fakes always see the cluster as it is); held by the gate "producer.list_topics"."""
        self.cluster.check_reachable("producer.list_topics", self.process)
        return None

    def poll(self, timeout: float | None = None) -> int:
        """Serve delivery reports (all, or ``deliveries_per_poll`` of a slow cluster); returns how many."""
        self.process.checkpoint()
        self._turn += 1
        served = self._report_purged()
        served += self._deliver(self.cluster.deliveries_per_poll)
        if not served and timeout:
            time.sleep(min(timeout, 0.005))
        return served

    def flush(self, timeout: float | None = None) -> int:
        """Serve reports until the queue is empty or ``timeout`` passed; returns what is left."""
        deadline = time.monotonic() + (timeout if timeout is not None and timeout >= 0 else 3600)
        self._turn += 1
        while self.queue and time.monotonic() < deadline:
            self.process.checkpoint()
            if not self._deliver(None):
                time.sleep(0.005)
        return len(self.queue)

    def _deliver(self, limit: int | None) -> int:
        """Write and report queued records in order (per partition), around those of partitions cut off."""
        if not self.cluster.cut_off:
            return self._deliver_in_order(limit)
        waiting: deque[Queued] = deque()
        served = 0
        try:
            while self.queue and (limit is None or served < limit):
                while self.queue and self.cluster.out_of_reach(self.queue[0].topic, self.queue[0].partition):
                    waiting.append(self.queue.popleft())
                if not self.queue:
                    break
                delivered = self._deliver_in_order(1)
                if not delivered:  # the cluster is out of reach altogether
                    break
                served += delivered
        finally:
            self.queue.extendleft(reversed(waiting))
        return served

    def _deliver_in_order(self, limit: int | None) -> int:
        served = 0
        while self.queue and self._reachable() and (limit is None or served < limit):
            item = self.queue[0]
            try:
                if (item.topic, item.partition) in self.cluster.hidden_partitions:
                    raise KafkaException(KafkaError(self.cluster.hidden_error))
                self._check_size(item)
                if self.cluster.offsetless_unwritten[item.topic] > 0:
                    self.cluster.offsetless_unwritten[item.topic] -= 1
                    offset = -1  # "a duplicate": acknowledged, never written
                elif self._loses_the_race(item):
                    offset = -1
                else:
                    offset = self._write(item)
                    self._remember(item)
                error = None
            except KafkaException as exc:
                offset, error = -1, exc.args[0]
                self._delivery_failed(error)
            if error is None and self.cluster.offsetless_deliveries > 0:
                self.cluster.offsetless_deliveries -= 1
                offset = -1
            report = FakeMessage(item.topic, item.partition, offset, item.key, item.value, item.headers,
                                 item.timestamp)
            try:
                if item.callback is not None:  # an exception here escapes poll(), as in confluent-kafka
                    item.callback(error, report)
            finally:
                self.queue.popleft()  # the record leaves the queue only after its report ran
            served += 1
        return served

    def _remember(self, item: Queued) -> None:
        """The cluster holds this producer's state of the record's partition now, unless (``batch_race``) the
        record is older than its memory of producers, which then forgets it at once (as at its next look)."""
        key = (item.topic, item.partition)
        memory = self.cluster.producer_memory_ms
        if item.topic in self.cluster.batch_race and item.timestamp < time.time() * 1000 - memory:
            self.written_to.pop(key, None)
        else:
            self.written_to[key] = self.cluster.producers_forgotten

    def _loses_the_race(self, item: Queued) -> bool:
        """``first_batch_race``: this producer's first record of a partition with more of it queued behind.
        ``batch_race``: the first record of a batch of fewer than five (librdkafka sends a partition's next batch
        only then) with a later batch of the partition queued, the cluster holding no state of the producer."""
        key = (item.topic, item.partition)
        race = self.cluster
        if (item.topic not in race.first_batch_race and item.topic not in race.batch_race) \
                or self.written_to.get(key) == race.producers_forgotten:
            return False
        behind = [q for q in list(self.queue)[1:] if (q.topic, q.partition) == key]
        if item.topic in race.batch_race:
            same = sum(1 for q in behind if q.batch == item.batch) + 1
            if same >= BATCH_BLOCKS or all(q.batch == item.batch for q in behind):
                return False
        elif not behind:
            return False
        self.written_to[key] = race.producers_forgotten  # by the batch written in its place
        return True

    def _write(self, item: Queued) -> int:
        """Append the record to its partition's log; returns its offset."""
        return self.cluster.append(item.topic, item.partition, item.key, item.value, item.headers, item.timestamp)

    def _delivery_failed(self, error: KafkaError) -> None:
        """A record failed (a transactional producer's transaction can then only be aborted)."""

    def _check_size(self, item: Queued) -> None:
        """The broker refuses a record larger than its topic's ``max.message.bytes`` (set on the topic, else
        the broker's default), as MSG_SIZE_TOO_LARGE in the delivery report. (The broker counts the whole
        batch; key and value are the part that matters here.)"""
        with self.cluster.lock:
            topic = self.cluster.topics.get(item.topic)
            limit = int(topic.configs.get("max.message.bytes", DEFAULT_MAX_MESSAGE_BYTES)) if topic else None
        if limit is not None and len(item.key or b"") + len(item.value or b"") > limit:
            raise KafkaException(KafkaError(KafkaError.MSG_SIZE_TOO_LARGE, "Broker: Message size too large"))

    def purge(self, in_queue: bool = True, in_flight: bool = True, blocking: bool = True) -> None:
        """Drop what is queued, unwritten; librdkafka reports each with ``_PURGE_QUEUE`` at the next poll."""
        self.purged.extend(self.queue)
        self.queue.clear()

    def wedge(self) -> None:
        """Stop reporting (and writing) anything, as a librdkafka producer stuck in a state it does not
        leave: the cluster answers every other client."""
        self.wedged = True

    def _report_purged(self) -> int:
        error = KafkaError(KafkaError._PURGE_QUEUE, "Local: Purged in queue")
        served = 0
        while self.purged:
            item = self.purged.popleft()
            if item.callback is not None:
                item.callback(error, FakeMessage(item.topic, item.partition, -1, item.key, item.value, item.headers,
                                                 item.timestamp))
            served += 1
        return served

    def _reachable(self) -> bool:
        stopped = self.wedged or self.cluster.frozen or self.process.frozen
        return not stopped and self.process.reaches(self.cluster.name)

    def crash(self) -> None:
        """Die like ``kill -9``: what was queued is gone with the process."""
        self.queue.clear()
