"""What the checkpoint drills do with Kafka: source logs with gaps, a group reading part of them, resuming elsewhere."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

from tests.kafka_io import Rec, committed, end_offsets, leave_group, produce, wait_until
from tests.records import make_records

# Per partition, what write_batch leaves: 6 plain records, 6 transactions of 3
# records each with its commit marker (the 4th aborted: 3 records and a marker
# nobody reads), 2 plain records. 23 records in 32 offsets.
VISIBLE_PER_BATCH = 23


def write_batch(bootstrap: str, topic: str, partitions: int, tag: str) -> None:
    """Plain records, then transactions (markers: source gaps; one aborted: a wider gap), then plain ones."""
    produce(bootstrap, topic, make_records(partitions, 6, f"{tag}-plain"))
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"{topic}-{tag}", "linger.ms": "5"})
    producer.init_transactions(30)
    for txn in range(6):
        producer.begin_transaction()
        for rec in make_records(partitions, 3, f"{tag}-txn{txn}"):
            producer.produce(topic, rec.value, rec.key, partition=rec.partition, timestamp=rec.timestamp,
                             headers=list(rec.headers) or None)
        if txn == 3:
            # Its records acknowledged first: an abort sent while they were in flight was refused once in CI
            # (INVALID_TXN_STATE, fatal) by a Kafka 4 broker.
            producer.flush(30)
            producer.abort_transaction(30)
        else:
            producer.commit_transaction(30)
    produce(bootstrap, topic, make_records(partitions, 2, f"{tag}-tail"))


def _rec(msg: Any) -> Rec:
    return Rec(msg.partition(), msg.key(), msg.value(), tuple(msg.headers() or ()), msg.timestamp()[1])


def _drain(consumer: Any, topic: str, ends: dict[int, int], on_message: Any, what: str, timeout: float = 60) -> None:
    """Consume until every partition's position reached its end (markers and aborted records are skipped)."""
    deadline = time.monotonic() + timeout
    while True:
        for msg in consumer.consume(500, 0.2):
            assert msg.error() is None, msg.error()
            on_message(msg)
        positions = consumer.position([TopicPartition(topic, p) for p in ends])
        if all(tp.offset >= ends[tp.partition] for tp in positions):
            return
        assert time.monotonic() < deadline, f"{what}: stalled at {positions} of {ends}"


def read_source(bootstrap: str, topic: str, partitions: int) -> dict[int, list[tuple[int, Rec]]]:
    """Every committed record of ``topic`` with its offset, per partition (what a read_committed group sees)."""
    ends = end_offsets(bootstrap, topic, partitions)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "checkpoint-drill-reader",
                         "isolation.level": "read_committed", "enable.auto.commit": "false"})
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
    out: dict[int, list[tuple[int, Rec]]] = {p: [] for p in range(partitions)}
    try:
        _drain(consumer, topic, ends, lambda m: out[m.partition()].append((m.offset(), _rec(m))), f"reading {topic}")
    finally:
        consumer.close()
    return out


def consume_part(bootstrap: str, group: str, topic: str, counts: dict[int, int]) -> dict[int, int]:
    """``group`` reads the first ``counts[p]`` records of each partition and commits; returns the commits."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "isolation.level": "read_committed",
                         "enable.auto.commit": "false"})
    wanted = {p: n for p, n in counts.items() if n > 0}
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in wanted])
    taken = {p: 0 for p in wanted}
    last: dict[int, int] = {}
    deadline = time.monotonic() + 60
    try:
        while any(taken[p] < n for p, n in wanted.items()):
            assert time.monotonic() < deadline, f"{group} read only {taken} of {wanted}"
            for msg in consumer.consume(100, 0.2):
                assert msg.error() is None, msg.error()
                p = msg.partition()
                if taken[p] < wanted[p]:
                    taken[p] += 1
                    last[p] = msg.offset()
        offsets = {p: off + 1 for p, off in last.items()}
        consumer.commit(offsets=[TopicPartition(topic, p, o) for p, o in offsets.items()], asynchronous=False)
    finally:
        consumer.close()
    return offsets


def resume_on_target(bootstrap: str, group: str, topic: str, partitions: int) -> dict[int, list[Rec]]:
    """Join ``group`` on the target as an application does after failover; every record it gets up to the end."""
    ends = end_offsets(bootstrap, topic, partitions)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer",
                         "auto.offset.reset": "earliest", "enable.auto.commit": "false"})
    consumer.subscribe([topic])
    out: dict[int, list[Rec]] = {p: [] for p in range(partitions)}
    try:
        deadline = time.monotonic() + 60
        while len(consumer.assignment()) < partitions:
            assert time.monotonic() < deadline, f"{group} was never assigned {topic}"
            for msg in consumer.consume(500, 0.2):
                out[msg.partition()].append(_rec(msg))
        _drain(consumer, topic, ends, lambda m: out[m.partition()].append(_rec(m)), f"{group} resuming on {topic}")
    finally:
        leave_group(consumer)
    return out


def wait_caught_up(bootstrap: str, route: str, topic: str, source: dict[int, list[tuple[int, Rec]]]) -> dict[int, int]:
    """Wait until the route committed past the last record of each partition; returns its commits."""
    last = {p: recs[-1][0] + 1 for p, recs in source.items() if recs}

    def done() -> bool:
        now = committed(bootstrap, f"mirrorflow-{route}", topic, len(source))
        return all(now.get(p, -1) >= offset for p, offset in last.items())

    wait_until(done, 120, f"route {route} to copy {topic}")
    return committed(bootstrap, f"mirrorflow-{route}", topic, len(source))


def checkpoint_cli(config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``mirrorflow checkpoint --config CONFIG ARGS`` as an operator runs it."""
    exe = Path(sys.executable).parent / "mirrorflow"
    return subprocess.run([str(exe), "checkpoint", "--config", str(config), *args], capture_output=True, text=True,
                          timeout=180, check=False)


def checkpoint_json(config: Path, *args: str) -> dict[str, Any]:
    """The one route's summary of ``mirrorflow checkpoint --json``; fails the test on a non-zero exit."""
    done = checkpoint_cli(config, "--json", *args)
    assert done.returncode == 0, done.stderr
    [summary] = json.loads(done.stdout)
    return summary  # type: ignore[no-any-return]
