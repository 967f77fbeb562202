"""The real things run here: a broker round trip with confluent-kafka, and Spark's Kafka source."""

from __future__ import annotations

import json
import time
from collections import defaultdict
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from replicator.kafka.admin import create_topics

PARTITIONS = 3
PER_PARTITION = 100
BASE_TS = int(time.time() * 1000) - 86_400_000  # a day ago: not "now", and inside the 7-day retention


def _record(partition: int, n: int) -> dict[str, object]:
    return {
        "partition": partition,
        "key": None if n % 10 == 0 else f"k{partition}-{n}".encode(),
        "value": None if n % 25 == 0 else bytes([n % 256]) * (n % 7) + f"v{n}".encode(),
        "headers": [("h", f"{n}".encode()), ("bin", b"\x00\xff")] if n % 2 else [],
        "timestamp": BASE_TS + partition * 1_000_000 + n,
    }


@pytest.fixture(scope="module")
def smoke_topic(primary, tmp_path_factory) -> tuple[str, dict[int, list[dict[str, object]]]]:  # type: ignore[no-untyped-def]
    """A topic on primary with known records: null keys, tombstones, headers, timestamps."""
    topic = f"t-smoke-{tmp_path_factory.getbasetemp().name}"
    create_topics(primary.bootstrap_servers, {topic: PARTITIONS})
    producer = Producer({**primary.properties, "enable.idempotence": "true", "acks": "all"})
    expected: dict[int, list[dict[str, object]]] = defaultdict(list)
    for partition in range(PARTITIONS):
        for n in range(PER_PARTITION):
            record = _record(partition, n)
            producer.produce(topic, **record)  # type: ignore[arg-type]
            expected[partition].append(record)
    assert producer.flush(30) == 0
    return topic, expected


def test_records_round_trip_byte_for_byte(primary, smoke_topic) -> None:  # type: ignore[no-untyped-def]
    topic, expected = smoke_topic
    consumer = Consumer({**primary.properties, "group.id": f"{topic}-reader", "enable.auto.commit": "false"})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    got: dict[int, list[dict[str, object]]] = defaultdict(list)
    try:
        while sum(len(v) for v in got.values()) < PARTITIONS * PER_PARTITION:
            msg = consumer.poll(10)
            assert msg is not None, "timed out before every record arrived"
            assert msg.error() is None, msg.error()
            got[msg.partition()].append({
                "partition": msg.partition(), "key": msg.key(), "value": msg.value(),
                "headers": msg.headers() or [], "timestamp": msg.timestamp()[1],
            })
    finally:
        consumer.close()
    assert got == expected  # same bytes, same order per partition, headers and CreateTime kept


@pytest.mark.spark
def test_spark_kafka_source_reads_the_same_topic(primary, smoke_topic, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from spark_jobs.topic_summary import main

    topic, expected = smoke_topic
    out = tmp_path / "summary.jsonl"
    assert main(["--bootstrap", primary.bootstrap_servers, "--topic", topic, "--output", str(out)]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["partition"] for r in rows] == list(range(PARTITIONS))
    for row in rows:
        records = expected[row["partition"]]
        assert row["records"] == len(records)
        assert (row["first_offset"], row["last_offset"]) == (0, len(records) - 1)
        assert row["with_headers"] == sum(1 for r in records if r["headers"])
        timestamps = [r["timestamp"] for r in records]
        assert (row["first_timestamp_ms"], row["last_timestamp_ms"]) == (min(timestamps), max(timestamps))
