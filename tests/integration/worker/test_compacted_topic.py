"""A compacted source topic: the survivors of compaction arrive exactly, and the replica is compacted too."""

from __future__ import annotations

import time

from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import ConfigResource

from replicator.kafka.admin import admin_client, create_topics
from tests.kafka_io import Rec, end_offsets, produce, read_all, total, wait_until
from tests.records import write_config
from tests.support import Worker

COMPACT_FAST = {"cleanup.policy": "compact", "segment.ms": "200", "min.cleanable.dirty.ratio": "0.01",
                "delete.retention.ms": "100", "min.compaction.lag.ms": "0"}


def _offsets(bootstrap: str, topic: str) -> list[int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "compaction-probe", "enable.auto.commit": "false"})
    consumer.assign([TopicPartition(topic, 0, 0)])
    _, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
    seen: list[int] = []
    deadline = time.monotonic() + 20
    while (not seen or seen[-1] < high - 1) and time.monotonic() < deadline:
        seen += [m.offset() for m in consumer.consume(1000, 0.5) if m.error() is None]
    consumer.close()
    return seen


def test_compacted_topic(primary, backup, unique_name, tmp_path, workers) -> None:  # type: ignore[no-untyped-def]
    create_topics(primary.bootstrap_servers, {unique_name: 1}, COMPACT_FAST)
    now = int(time.time() * 1000)
    for round_ in range(4):  # each round rolls a segment: older values become cleanable
        produce(primary.bootstrap_servers, unique_name,
                [Rec(0, f"k{n % 20}".encode(), None if (n % 7 == 0 and round_ == 3) else f"{round_}-{n}".encode(),
                     (("round", str(round_).encode()),), now - 10_000 + round_ * 1000 + n) for n in range(100)])
        time.sleep(0.5)
    wait_until(lambda: len(_offsets(primary.bootstrap_servers, unique_name)) < 400, 60,
               "the source to compact (offset gaps)")
    config = write_config(tmp_path / "m.yaml", primary.bootstrap_servers, backup.bootstrap_servers, [
        {"name": f"c-{unique_name}"[:60], "source": "primary", "target": "backup", "topics": [unique_name]}])
    # What the source holds the moment before the route starts is what must arrive; the
    # cleaner may go on meanwhile, so compare with a read taken right before the start.
    expected = read_all(primary.bootstrap_servers, unique_name, 1)[0]
    worker = Worker(config, log_dir=tmp_path)
    workers.append(worker)
    replica = f"primary.{unique_name}"
    # The source's last record sits in its active segment, which compaction never cleans: the copy is done
    # when it arrives (counting records would wait for good once the cleaner removes more before the copy).
    got: list[Rec] = []

    def copied() -> bool:
        nonlocal got
        got = read_all(backup.bootstrap_servers, replica, 1)[0] if total(
            end_offsets(backup.bootstrap_servers, replica, 1)) else []
        return bool(got) and got[-1] == expected[-1]
    wait_until(copied, 60, "the source's last record on the replica")
    # The replica holds what the source held when it was read (the source may have
    # compacted further in between, so `got` can only be a sub-sequence of `expected`
    # that keeps every key's latest value).
    latest = {rec.key: rec for rec in expected}
    assert {rec.key: rec for rec in got} == latest, "every key's latest record (tombstones included)"
    position = 0
    for rec in got:
        position = expected.index(rec, position) + 1  # in order, each one a source record
    resource = ConfigResource(ConfigResource.Type.TOPIC, replica)
    admin = admin_client(backup.bootstrap_servers)  # kept: a collected client cancels its requests
    configs = admin.describe_configs([resource])[resource].result(timeout=15)
    assert configs["cleanup.policy"].value == "compact"
