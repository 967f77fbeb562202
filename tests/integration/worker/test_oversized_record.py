"""A record larger than the target accepts stops the route, naming it; nothing after it is committed."""

from __future__ import annotations

import time

from replicator.kafka.admin import create_topics
from tests.kafka_io import Rec, committed, end_offsets, produce, read_all, total, wait_until
from tests.records import write_config
from tests.support import Worker


def test_oversized_record_stops_the_route_at_its_offset(primary, backup, unique_name, tmp_path, workers) -> None:  # type: ignore[no-untyped-def]
    create_topics(primary.bootstrap_servers, {unique_name: 1})
    create_topics(backup.bootstrap_servers, {f"primary.{unique_name}": 1}, {"max.message.bytes": "2000"})
    now = int(time.time() * 1000)
    records = [Rec(0, b"k", (b"x" * (8_000 if n == 40 else 100)), (), now + n) for n in range(80)]
    produce(primary.bootstrap_servers, unique_name, [r for r in records])
    config = write_config(tmp_path / "m.yaml", primary.bootstrap_servers, backup.bootstrap_servers, [
        {"name": "big", "source": "primary", "target": "backup", "topics": [unique_name],
         "producer": {"compression.type": "none"}}])
    worker = Worker(config, log_dir=tmp_path)
    workers.append(worker)
    assert worker.process.wait(60) == 1
    output = worker.output()
    assert (f"the record of {unique_name}[0] at source offset 40 (8001 bytes) is larger than the target "
            "accepts") in output, output[-1500:]
    # Nothing from the refused record on is committed; everything before the commit is on the target, in order,
    # byte for byte, and nothing from the refused record on. Usually the target holds exactly the records before the
    # commit (a refused batch fails every record in it), but once in CI, under load, the first report the worker
    # matched to the partition was the refused batch's: it blocked its commit at 0 with 7 records on the target
    # (safe: the next owner copies them again; not yet understood, see session 31's note on #13).
    wait_until(lambda: committed(primary.bootstrap_servers, "mirrorflow-big", unique_name, 1) != {}, 15, "commit")
    position = committed(primary.bootstrap_servers, "mirrorflow-big", unique_name, 1)[0]
    assert 0 <= position <= 40
    got = read_all(backup.bootstrap_servers, f"primary.{unique_name}", 1)[0]
    assert position <= len(got) and got[:position] == records[:position]
    assert records[40] not in got, "the refused record itself is never written"
    # Records behind the refused one may be there too: librdkafka sends the batches that followed a refused batch
    # again under a new producer epoch. CI (session 46): records 1-76 refused in batches over the topic's 2,000
    # bytes, then 77-79, a small batch, written. Not committed: the next owner copies them again (duplicates).


def test_dead_letter_mode_sets_oversized_records_aside(primary, backup, unique_name, tmp_path, workers) -> None:  # type: ignore[no-untyped-def]
    create_topics(primary.bootstrap_servers, {unique_name: 2})
    create_topics(backup.bootstrap_servers, {f"primary.{unique_name}": 2}, {"max.message.bytes": "3000"})
    now = int(time.time() * 1000)
    big = {(0, 40), (1, 7), (1, 79)}  # the last one ends its partition
    records = [Rec(p, f"k{n}".encode(), (b"x" * (9_000 if (p, n) in big else 100)),
                   (("h", b"v"),), now - 1000 + n) for n in range(80) for p in range(2)]
    produce(primary.bootstrap_servers, unique_name, records)
    config = write_config(tmp_path / "m.yaml", primary.bootstrap_servers, backup.bootstrap_servers, [
        {"name": "dlq", "source": "primary", "target": "backup", "topics": [unique_name],
         "on_refused_record": "dead-letter", "producer": {"batch.size": "2000"}}])
    worker = Worker(config, log_dir=tmp_path)
    workers.append(worker)
    dead = "mirrorflow-dead-letter.dlq.internal"
    wait_until(lambda: total(end_offsets(backup.bootstrap_servers, f"primary.{unique_name}", 2)) == 160 - 3, 60,
               "every record that fits")
    wait_until(lambda: total(end_offsets(backup.bootstrap_servers, dead, 1)) >= 3, 30, "the dead letters")
    got = read_all(backup.bootstrap_servers, f"primary.{unique_name}", 2)
    for p in range(2):
        assert got[p] == [r for r in records if r.partition == p and len(r.value or b"") < 9_000]
    assert worker.process.poll() is None, "the route goes on"
    letters = _read_with_headers(backup.bootstrap_servers, dead)
    assert {(h["mirrorflow.dead-letter.partition"], h["mirrorflow.dead-letter.offset"]) for h, _ in letters} == {
        (b"0", b"40"), (b"1", b"7"), (b"1", b"79")}
    for headers, (key, value) in letters:
        assert headers["h"] == b"v" and headers["mirrorflow.dead-letter.topic"] == unique_name.encode()
        assert headers["mirrorflow.dead-letter.value"] == b"kept" and value == b"x" * 9_000
        assert key == b"k" + headers["mirrorflow.dead-letter.offset"]
    # The commit passes a record set aside once a later one is copied; the last one
    # of partition 1 is set aside again after a restart, never lost.
    wait_until(lambda: committed(primary.bootstrap_servers, "mirrorflow-dlq", unique_name, 2) == {0: 80, 1: 79},
               30, "the commits")


def _read_with_headers(bootstrap: str, topic: str) -> list[tuple[dict[str, bytes | None], tuple[bytes, bytes]]]:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "reader", "enable.auto.commit": "false"})
    consumer.assign([TopicPartition(topic, 0, 0)])
    out = []
    _, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
    deadline = time.monotonic() + 30
    while len(out) < high and time.monotonic() < deadline:
        message = consumer.poll(1)
        if message is not None and message.error() is None:
            out.append((dict(message.headers() or []), (message.key(), message.value())))
    consumer.close()
    return out


def test_batch_larger_than_the_target_topic_names_batch_size(primary, backup, unique_name, tmp_path, workers) -> None:  # type: ignore[no-untyped-def]
    create_topics(primary.bootstrap_servers, {unique_name: 1})
    create_topics(backup.bootstrap_servers, {f"primary.{unique_name}": 1}, {"max.message.bytes": "3000"})
    now = int(time.time() * 1000)
    produce(primary.bootstrap_servers, unique_name, [Rec(0, None, b"y" * 100, (), now + n) for n in range(200)])
    config = write_config(tmp_path / "m.yaml", primary.bootstrap_servers, backup.bootstrap_servers, [
        {"name": "batchy", "source": "primary", "target": "backup", "topics": [unique_name],
         "producer": {"compression.type": "none"}}])
    worker = Worker(config, log_dir=tmp_path)
    workers.append(worker)
    assert worker.process.wait(60) == 1
    assert "set the route's producer batch.size below 3000" in worker.output(), worker.output()[-1500:]
