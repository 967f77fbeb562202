"""Produce, read and measure topics in tests (real clusters, confluent-kafka)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from replicator.worker.bounded import Hung, bounded

Headers = list[tuple[str, bytes | None]]


@dataclass(frozen=True, slots=True)
class Rec:
    """What a user relies on in a record (its offset aside)."""

    partition: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]
    timestamp: int


def produce(bootstrap: str, topic: str, records: Iterable[Rec], **config: str) -> int:
    """Produce ``records`` (to their partitions, with their timestamps); returns how many."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": "true",
                         "linger.ms": "20", **config})
    count, failures = 0, []

    def delivered(error: object, _message: object) -> None:
        if error is not None:
            failures.append(str(error))

    for rec in records:
        while True:
            try:
                producer.produce(topic, rec.value, rec.key, partition=rec.partition, on_delivery=delivered,
                                 timestamp=rec.timestamp, headers=list(rec.headers) or None)
                break
            except BufferError:
                producer.poll(0.1)
        count += 1
        if count % 1000 == 0:
            producer.poll(0)
    assert producer.flush(60) == 0, "records not delivered"
    assert not failures, f"{len(failures)} records refused, first: {failures[0]}"
    return count


def end_offsets(bootstrap: str, topic: str, partitions: int, isolation: str = "read_committed") -> dict[int, int]:
    """End offset per partition (0 for a partition that does not exist yet): the last stable offset (a
    transaction still open holds it back), or with ``isolation`` read_uncommitted the high watermark."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "mirrorflow-tests-watermarks",
                         "isolation.level": isolation})
    ends = {}
    try:
        for p in range(partitions):
            try:
                ends[p] = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
            except KafkaException:
                ends[p] = 0
    finally:
        consumer.close()
    return ends


def read_all(bootstrap: str, topic: str, partitions: int, timeout: float = 60) -> dict[int, list[Rec]]:
    """Every record of ``topic`` from the start to the current end, per partition, in order."""
    ends = end_offsets(bootstrap, topic, partitions)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "mirrorflow-tests-reader",
                         "enable.auto.commit": "false", "fetch.max.bytes": "52428800"})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    out: dict[int, list[Rec]] = {p: [] for p in range(partitions)}
    last = {p: -1 for p in range(partitions)}
    deadline = time.monotonic() + timeout
    try:
        while any(last[p] + 1 < ends[p] for p in range(partitions)):
            assert time.monotonic() < deadline, f"reading {topic} timed out"
            for msg in consumer.consume(5000, 1.0):
                assert msg.error() is None, msg.error()
                out[msg.partition()].append(Rec(msg.partition(), msg.key(), msg.value(),
                                                tuple(msg.headers() or ()), msg.timestamp()[1]))
                last[msg.partition()] = msg.offset()
    finally:
        consumer.close()
    return out


def read_committed(bootstrap: str, topic: str, partitions: int, timeout: float = 90) -> dict[int, list[Rec]]:
    """What a read_committed consumer of ``topic`` sees, from the start to the current end of the log, per
    partition, in order: transaction markers and aborted records are not returned, and a transaction still
    open (a killed writer's, until the target aborts it) is waited for."""
    ends = end_offsets(bootstrap, topic, partitions, isolation="read_uncommitted")
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "mirrorflow-tests-reader",
                         "enable.auto.commit": "false", "isolation.level": "read_committed",
                         "fetch.max.bytes": "52428800"})
    tps = [TopicPartition(topic, p, 0) for p in range(partitions)]
    consumer.assign(tps)
    out: dict[int, list[Rec]] = {p: [] for p in range(partitions)}
    deadline = time.monotonic() + timeout
    try:
        while True:
            for msg in consumer.consume(5000, 0.5):
                assert msg.error() is None, msg.error()
                out[msg.partition()].append(Rec(msg.partition(), msg.key(), msg.value(),
                                                tuple(msg.headers() or ()), msg.timestamp()[1]))
            positions = {tp.partition: tp.offset for tp in consumer.position(tps)}
            if all(positions[p] >= ends[p] for p in range(partitions)):  # markers are passed, not returned
                return out
            assert time.monotonic() < deadline, f"reading {topic} (read_committed) timed out at {positions} of {ends}"
    finally:
        consumer.close()


def wait_until(condition: Callable[[], bool], timeout: float, what: str) -> None:
    """Poll ``condition`` every 0.25 s; fail the test naming ``what`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out after {timeout:.0f} s waiting for {what}"
        time.sleep(0.25)


def total(counts: Mapping[int, int]) -> int:
    """Sum of a per-partition mapping."""
    return sum(counts.values())


def committed(bootstrap: str, group: str, topic: str, partitions: int) -> dict[int, int]:
    """The group's committed offset per partition (-1 where none), read without joining it."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        found = consumer.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=10)
    except KafkaException as exc:
        if exc.args[0].retriable() or exc.args[0].name() in ("NOT_COORDINATOR", "COORDINATOR_LOAD_IN_PROGRESS"):
            return {}  # a new group's coordinator is settling: callers poll again
        raise
    finally:
        consumer.close()
    return {tp.partition: max(tp.offset, -1) for tp in found}


def recreate_topic(bootstrap: str, topic: str, partitions: int) -> None:
    """Delete ``topic`` and create it again (Kafka deletes asynchronously: retry the creation)."""
    from replicator.kafka.admin import admin_client, create_topics

    admin = admin_client(bootstrap)
    for future in admin.delete_topics([topic]).values():
        future.result(timeout=15)
    deadline = time.monotonic() + 60
    while True:
        try:
            if create_topics(bootstrap, {topic: partitions}) == [topic]:
                return
        except Exception:  # "marked for deletion" while the old one goes
            if time.monotonic() > deadline:
                raise
        time.sleep(0.5)


def leave_group(member: Consumer, timeout: float = 10.0) -> None:
    """Close a test's plain group member (subscribed without callbacks of its own). librdkafka can hang for good
    in a close that meets a rebalance event: its default rebalance callback assigns from inside the close and waits
    on a thread that is going away (librdkafka #4884, open; a unit run hung 26 min in ``test_group_members``). So
    the member unsubscribes and serves its revocation from a poll first, and the close is bounded: a close that
    still hangs is left to its thread (the test asserted what it needed before)."""
    try:
        member.unsubscribe()
        deadline = time.monotonic() + timeout
        while member.assignment() and time.monotonic() < deadline:
            member.poll(0.1)
    except KafkaException:
        pass  # closed below all the same
    try:
        bounded("closing a test's group member", member.close, timeout)
    except Hung:
        pass
