"""A partition log's ends and what lies between two offsets: batched ListOffsets, records counted by reading.

The failover's fence watch and its RPO ask the same two things of the source: where
each partition ends (the high watermark, or the last stable offset below an open
transaction), and how many records -- not transaction markers -- a range holds.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from confluent_kafka import Consumer, IsolationLevel, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from replicator.domain.checkpoint import Partition
from replicator.errors import ClusterError
from replicator.kafka.admin import error_name, error_text
from replicator.kafka.clients import admin_settings

TIMEOUT_S = 15.0


def ends(admin: AdminClient, cluster: str, partitions: Sequence[Partition],
         stable: bool = False) -> dict[Partition, int]:
    """Each partition's end: its high watermark, or (``stable``) its last stable offset -- the first offset of
    the oldest transaction still open in it (the high watermark when none is)."""
    if not partitions:
        return {}
    latest = OffsetSpec.latest()  # type: ignore[no-untyped-call]
    asked = {TopicPartition(t, p): latest for t, p in partitions}
    isolation = IsolationLevel.READ_COMMITTED if stable else IsolationLevel.READ_UNCOMMITTED
    out: dict[Partition, int] = {}
    for tp, future in admin.list_offsets(asked, isolation_level=isolation, request_timeout=TIMEOUT_S).items():
        try:
            out[(tp.topic, tp.partition)] = future.result(timeout=TIMEOUT_S + 5).offset
        except KafkaException as exc:
            if error_name(exc) == "UNKNOWN_TOPIC_OR_PART":
                continue
            raise ClusterError(f"cluster {cluster!r}: end of {tp.topic}-{tp.partition}: {error_text(exc)}") from None
    return out


def count_records(properties: dict[str, str], ranges: dict[Partition, tuple[int, int]],
                  timeout: float = 30.0) -> dict[Partition, int]:
    """Records (transaction markers are not records) in each ``[first, end)``; aborted ones count: they were
    written. A range not read to its end in ``timeout`` counts its offsets (an upper bound)."""
    consumer = Consumer({**admin_settings(properties), "group.id": "mirrorflow-record-count",
                         "enable.auto.commit": "false", "isolation.level": "read_uncommitted",
                         "enable.partition.eof": "false"})
    consumer.assign([TopicPartition(t, p, first) for (t, p), (first, _) in ranges.items()])
    counts = {key: 0 for key in ranges}
    open_ = dict(ranges)
    deadline = time.monotonic() + timeout
    try:
        while open_ and time.monotonic() < deadline:
            for message in consumer.consume(500, 0.2):
                key = (message.topic(), message.partition())
                if message.error() is None and key in open_ and (message.offset() or 0) < open_[key][1]:
                    counts[key] += 1
            for tp in consumer.position([TopicPartition(t, p) for t, p in open_]):
                if tp.offset >= open_[(tp.topic, tp.partition)][1]:
                    del open_[(tp.topic, tp.partition)]
    finally:
        consumer.close()
    for key, (first, end) in open_.items():
        counts[key] = end - first
    return counts
