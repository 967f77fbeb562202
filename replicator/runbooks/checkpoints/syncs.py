"""The route's offset-syncs topic (one partition on the target), read from its start to its end.

Read twice per run: once to learn which topics have syncs, then -- after the
route's committed offsets were read -- again, for the tail written meanwhile. The
hot path commits an offset only once the syncs explaining it are acknowledged, so
the second read holds every sync the committed offsets rely on.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer, TopicPartition

from replicator.domain.checkpoint import Partition
from replicator.domain.offset_sync import OffsetSync, Run, decode_sync, decode_sync_key, encode_sync, kept_syncs
from replicator.errors import ClusterError, MirrorFlowError
from replicator.kafka.clients import admin_settings

_MISSING = ("UNKNOWN_TOPIC_OR_PART", "_UNKNOWN_PARTITION", "_UNKNOWN_TOPIC")


class CorruptSync(MirrorFlowError):
    """A record of the offset-syncs topic cannot be decoded: no translation is trusted."""


class SyncLog:
    """The syncs read so far, per source partition."""

    def __init__(self, properties: Mapping[str, str], topic: str, what: str, timeout: float = 30.0) -> None:
        """Nothing is read before :meth:`read_to_end`."""
        self.topic, self.what, self.timeout = topic, what, timeout
        self._properties = dict(properties)
        self._consumer: Any = None
        self._position = 0
        self._runs: dict[Partition, dict[int, Run]] = defaultdict(dict)  # the last record of each key

    @property
    def syncs(self) -> dict[Partition, list[OffsetSync]]:
        """The run starts read, by source (topic, partition): of each run its last record (as compaction
        keeps it), expanded."""
        return {partition: kept_syncs(runs.values()) for partition, runs in self._runs.items()}

    @property
    def runs(self) -> dict[Partition, list[Run]]:
        """The runs read, by source (topic, partition): the last record of each key."""
        return {partition: list(runs.values()) for partition, runs in self._runs.items()}

    def read_to_end(self) -> int:
        """Read up to the partition's current end; returns how many records were read this time."""
        end = self._end()
        if end is None or self._position >= end:
            return 0
        if self._consumer is None:
            self._consumer = Consumer({**admin_settings(self._properties), "group.id": "mirrorflow-checkpoints-reader",
                                       "enable.auto.commit": "false", "enable.partition.eof": "false"})
            self._consumer.assign([TopicPartition(self.topic, 0, OFFSET_BEGINNING)])
        read, deadline = 0, time.monotonic() + self.timeout
        while self._position < end:
            batch = self._consumer.consume(1000, 0.1)  # returns early only with 1000 records: keep it short
            for message in batch:
                if message.error() is not None:
                    raise ClusterError(f"{self.what}: reading {self.topic}: {message.error().str()}",
                                       retriable=message.error().retriable())
                self._position = message.offset() + 1
                self._add(message.offset(), message.key(), message.value())
                read += 1
            if not batch:
                self._position = max(self._position, self._consumed_to())
                if self._position < end and time.monotonic() > deadline:
                    raise ClusterError(f"{self.what}: reading {self.topic} timed out at offset {self._position} "
                                       f"of {end}", retriable=True)
        return read

    def close(self) -> None:
        """Release the consumer (safe to call twice)."""
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None

    def _end(self) -> int | None:
        probe = Consumer({**admin_settings(self._properties), "group.id": "mirrorflow-checkpoints-reader"})
        try:
            return int(probe.get_watermark_offsets(TopicPartition(self.topic, 0), timeout=self.timeout)[1])
        except KafkaException as exc:
            if exc.args[0].name() in _MISSING:
                return None  # the route never ran: no sync yet
            raise ClusterError(f"{self.what}: end of {self.topic}: {exc.args[0].str()}",
                               retriable=exc.args[0].retriable()) from None
        finally:
            probe.close()

    def _consumed_to(self) -> int:
        # Past compacted-away offsets at the end, the position moves on without a record.
        position = self._consumer.position([TopicPartition(self.topic, 0)])[0].offset
        return int(position) if position >= 0 else 0

    def _add(self, offset: int, key: bytes | None, value: bytes | None) -> None:
        if key is None:
            return  # not a sync (the hot path writes no null keys)
        try:
            if value is None:  # a tombstone: the run was pruned (compaction drops its records later)
                topic, partition, source_offset = decode_sync_key(key)
                self._runs[(topic, partition)].pop(source_offset, None)
                return
            run = decode_sync(key, value)
        except ValueError as exc:
            raise CorruptSync(f"{self.what}: {self.topic} offset {offset}: {exc}") from None
        self._runs[(run.start.topic, run.start.partition)][run.start.source_offset] = run


def first_copies(properties: Mapping[str, str], topic: str, what: str) -> dict[Partition, int]:
    """The first source offset a route copied, per source partition: the lowest run start of its syncs."""
    log = SyncLog(properties, topic, what)
    try:
        log.read_to_end()
        return {partition: min(s.source_offset for s in runs) for partition, runs in log.syncs.items() if runs}
    finally:
        log.close()


def retire_runs(properties: Mapping[str, str], topic: str, runs: Sequence[Run], what: str,
                timeout: float = 30.0) -> None:
    """A tombstone for each of ``runs`` in the syncs topic: compaction then drops every record of those runs
    (``domain.sync_pruning`` says which may go). ClusterError when the target does not take them all."""
    failures: list[KafkaError] = []

    def delivered(error: KafkaError | None, _message: object) -> None:
        if error is not None:
            failures.append(error)

    producer = Producer({**admin_settings(properties), "acks": "all", "enable.idempotence": "true",
                         "linger.ms": "5", "message.timeout.ms": str(int(timeout * 1000))})
    for run in runs:
        key, _ = encode_sync(run)
        while True:
            try:
                producer.produce(topic, None, key, partition=0, on_delivery=delivered)
                break
            except BufferError:  # the queue is full: let it drain
                producer.poll(0.1)
        producer.poll(0)
    left = producer.flush(timeout + 5)
    if failures or left:
        reason = failures[0].str() if failures else f"{left} tombstones still unacknowledged"
        raise ClusterError(f"{what}: pruning {topic}: {reason}", retriable=True)
