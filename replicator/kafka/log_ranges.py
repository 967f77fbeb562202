"""A partition log's ends and what lies between two offsets: batched ListOffsets, records counted by reading.

The failover's fence watch and its RPO ask the same two things of the source: where
each partition ends (the high watermark, or the last stable offset below an open
transaction), and how many records -- not transaction markers -- a range holds. A worker
placing partitions asks where each log starts and ends (``watermarks``); its lag gauges, where
each ends (``ends``). Every such read is one ListOffsets request per broker for all the
partitions asked (``_asked``), never a round trip per partition.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Any, cast

from confluent_kafka import Consumer, IsolationLevel, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from replicator.domain.checkpoint import Partition
from replicator.errors import ClusterError
from replicator.kafka.admin import error_name, error_text
from replicator.kafka.clients import admin_settings

TIMEOUT_S = 15.0
# How long the renewal of the client's metadata after answers with no offset may take: when the whole cluster is
# out of reach (a one-node source down) it fails, and the caller's error stands; not a second request timeout.
RENEWAL_S = 3.0
# confluent-kafka's own stubs leave these two untyped.
EARLIEST = cast(Callable[[], OffsetSpec], OffsetSpec.earliest)()
LATEST = cast(Callable[[], OffsetSpec], OffsetSpec.latest)()


# Answers that mean the client's metadata names an old leader: it is renewed and the partitions asked once more.
# librdkafka's names: Kafka's NOT_LEADER_OR_FOLLOWER (code 6) is its NOT_LEADER_FOR_PARTITION.
STALE_LEADER = frozenset({"FENCED_LEADER_EPOCH", "UNKNOWN_LEADER_EPOCH", "NOT_LEADER_FOR_PARTITION"})


def _send(admin: AdminClient, partitions: Sequence[Partition], spec: OffsetSpec, timeout: float,
          stable: bool) -> dict[Partition, Future[Any]]:
    isolation = IsolationLevel.READ_COMMITTED if stable else IsolationLevel.READ_UNCOMMITTED
    asked = dict.fromkeys((TopicPartition(t, p) for t, p in partitions), spec)
    listed = admin.list_offsets(asked, isolation_level=isolation, request_timeout=timeout)
    return {(tp.topic, tp.partition): future for tp, future in listed.items()}


def _asked(admin: AdminClient, partitions: Sequence[Partition], specs: Sequence[OffsetSpec], timeout: float,
           stable: bool = False) -> list[dict[Partition, Future[Any]]]:
    """One ListOffsets of each of ``specs`` for all ``partitions`` (to each leader), all in flight at once; each
    partition's answers. librdkafka's admin client sends the leader epoch its metadata holds and, answered
    FENCED_LEADER_EPOCH once the leader moved or its node restarted, fails the partition without renewing its
    metadata, at every later request of the client too; and it sends the request to the leader its metadata
    names, so a dead node's partitions are answered with no offset, after the request's timeout, until then
    (``_lost_a_node``). Such partitions are asked again once after the client's metadata is renewed (a failover's
    fence watch read the same ends before and after a leader election; a worker's placing after a source node
    died failed for 40 s)."""
    answers = [_send(admin, partitions, spec, timeout, stable) for spec in specs]
    stale = {key for answer in answers for key, future in answer.items()
             if error_name(future.exception(timeout=timeout + 5) or Exception()) in STALE_LEADER}
    unanswered = {key for answer in answers for key, future in answer.items()
                  if future.exception() is None and future.result().offset < 0}
    if stale or unanswered:
        try:
            metadata = admin.list_topics(timeout=timeout if stale else min(timeout, RENEWAL_S))
        except KafkaException:
            return answers  # the answers stand: the caller's error names them
        again = sorted(stale | {key for key in unanswered if _lost_a_node(metadata, key)})
        for answer, spec in (zip(answers, specs, strict=True) if again else ()):
            answer.update(_send(admin, again, spec, timeout, stable))
    return answers


def _lost_a_node(metadata: Any, key: Partition) -> bool:
    """Whether a node holding a copy of ``key`` is gone from the cluster (dead, or stopped): its partitions have
    new leaders, which the client's metadata, just renewed, now names. A partition unanswered while every node of
    it is up has a leader out of this client's reach (black-holed for it): asked again, it would wait out another
    request timeout for the same answer."""
    topic = metadata.topics.get(key[0])
    partition = topic.partitions.get(key[1]) if topic is not None else None
    return partition is not None and any(node not in metadata.brokers for node in partition.replicas)


def watermarks(admin: AdminClient, partitions: Sequence[Partition],
               timeout: float = 10.0) -> dict[Partition, tuple[int, int]]:
    """(log start, log end) of each partition: both requests in flight at once (2,000 partitions over a 50 ms
    link: 0.1 s, not 200 s). KafkaException when one cannot be read (a partition without a leader for now: the
    caller asks again), ClusterError when one is answered with no offset: a source node black-holed for the
    worker (three-node fault run, seed 322) had both ends of its partitions answered as -1001, which placing took
    for a log that ended before the committed offset, and copied the partition again from its start."""
    if not partitions:
        return {}
    starts, ends_ = _asked(admin, partitions, (EARLIEST, LATEST), timeout)
    marks = {key: (starts[key].result(timeout=timeout + 5).offset, ends_[key].result(timeout=timeout + 5).offset)
             for key in partitions}
    unknown = [f"{topic}[{partition}]" for (topic, partition), (low, high) in marks.items() if low < 0 or high < 0]
    if unknown:
        raise ClusterError(f"log range of {', '.join(unknown[:5])}{' ...' if len(unknown) > 5 else ''} not known: "
                           "answered without an offset (its leader out of reach?)")
    return marks


def ends(admin: AdminClient, cluster: str, partitions: Sequence[Partition],
         stable: bool = False) -> dict[Partition, int]:
    """Each partition's end: its high watermark, or (``stable``) its last stable offset -- the first offset of
    the oldest transaction still open in it (the high watermark when none is)."""
    if not partitions:
        return {}
    out: dict[Partition, int] = {}
    for (topic, partition), future in _asked(admin, partitions, (LATEST,), TIMEOUT_S, stable)[0].items():
        try:
            end = future.result(timeout=TIMEOUT_S + 5).offset
        except KafkaException as exc:
            if error_name(exc) == "UNKNOWN_TOPIC_OR_PART":
                continue
            raise ClusterError(f"cluster {cluster!r}: end of {topic}-{partition}: {error_text(exc)}") from None
        if end < 0:  # no error and no offset: its leader out of reach (see ``watermarks``)
            raise ClusterError(f"cluster {cluster!r}: end of {topic}-{partition} not known: answered without an "
                               "offset (its leader out of reach?)")
        out[(topic, partition)] = end
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
