"""The offset syncs a worker writes translate every source offset exactly, across transaction markers."""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from replicator.domain.offset_sync import MAX_STEPS, Exact, Run, decode_sync, kept_syncs, translate
from replicator.kafka.admin import create_topics
from tests.kafka_io import committed, end_offsets, read_committed, wait_until
from tests.records import write_config
from tests.support import Worker


def _offsets_by_value(bootstrap: str, topic: str, end: int) -> dict[bytes, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "syncs-reader",
                         "isolation.level": "read_committed", "enable.auto.commit": "false"})
    consumer.assign([TopicPartition(topic, 0, 0)])
    found: dict[bytes, int] = {}
    try:
        while not found or max(found.values()) < end - 1:
            batch = consumer.consume(1000, 5)
            assert batch, f"{topic}: read stalled at {len(found)} records"
            for msg in batch:
                if msg.error() is None:
                    found[msg.value()] = msg.offset()
            if len(found) and max(found.values()) >= end - 2:  # the last offset may be a marker
                break
    finally:
        consumer.close()
    return found


@pytest.mark.parametrize("guarantee", ["at-least-once", "exactly-once"])
def test_syncs_make_translation_exact_across_markers(primary, backup, unique_name, tmp_path, workers,  # type: ignore[no-untyped-def]
                                                     guarantee) -> None:
    """Markers on the source (a transactional producer), and on an exactly-once route's target too (its own
    transactions): every record's source offset translates to its target offset."""
    route = "syncs" if guarantee == "at-least-once" else "syncs-eos"
    create_topics(primary.bootstrap_servers, {unique_name: 1})
    producer = Producer({"bootstrap.servers": primary.bootstrap_servers, "transactional.id": unique_name})
    producer.init_transactions(15)
    for txn in range(30):  # each commit leaves a marker: a one-offset gap in the source
        producer.begin_transaction()
        for n in range(7):
            producer.produce(unique_name, f"{txn}-{n}".encode(), partition=0)
        producer.commit_transaction(15)
    config = write_config(tmp_path / "m.yaml", primary.bootstrap_servers, backup.bootstrap_servers, [
        {"name": route, "source": "primary", "target": "backup", "topics": [unique_name], "guarantee": guarantee}])
    workers.append(Worker(config, log_dir=tmp_path))
    source_end = end_offsets(primary.bootstrap_servers, unique_name, 1)[0]
    wait_until(lambda: total_copied(backup.bootstrap_servers, unique_name) == 210, 60, "the copy")
    wait_until(lambda: committed(primary.bootstrap_servers, f"mirrorflow-{route}", unique_name, 1).get(0, 0) > 0,
               30, "a commit")
    replicated_end = committed(primary.bootstrap_servers, f"mirrorflow-{route}", unique_name, 1)[0]

    source = _offsets_by_value(primary.bootstrap_servers, unique_name, source_end)
    target = _offsets_by_value(backup.bootstrap_servers, f"primary.{unique_name}", 210)
    runs = _read_runs(backup.bootstrap_servers, f"mirrorflow-offset-syncs.{route}.internal", unique_name)
    syncs = kept_syncs(runs)
    # One run start per source transaction (markers break runs), not one per record; the target's own
    # transactions (one every 100 ms) add one each.
    most = 31 if guarantee == "at-least-once" else 45
    assert 30 <= len(syncs) <= most, "one run per transaction (markers break runs), not one per record"
    # ... and compaction keeps a record per MAX_STEPS + 1 of them: each marker is a step of a run.
    keys = {(r.start.source_offset, r.start.target_offset) for r in runs}
    assert len(keys) <= -(-len(syncs) // (MAX_STEPS + 1)), sorted(keys)
    for value, offset in source.items():
        if offset < replicated_end:
            assert translate(syncs, offset, replicated_end) == Exact(target[value]), value


def total_copied(bootstrap: str, topic: str) -> int:
    """Records on the target (an exactly-once route's transaction markers are offsets too: not counted)."""
    return len(read_committed(bootstrap, f"primary.{topic}", 1)[0])


def _read_runs(bootstrap: str, sync_topic: str, topic: str) -> list[Run]:
    end = end_offsets(bootstrap, sync_topic, 1)[0]
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "syncs-reader", "enable.auto.commit": "false"})
    tp = TopicPartition(sync_topic, 0, 0)
    consumer.assign([tp])
    runs: list[Run] = []
    try:
        while consumer.position([tp])[0].offset < end:  # passes transaction markers, which are not returned
            for msg in consumer.consume(1000, 1):
                assert msg.error() is None
                run = decode_sync(msg.key(), msg.value())
                if run.start.topic == topic:
                    runs.append(run)
    finally:
        consumer.close()
    return runs
