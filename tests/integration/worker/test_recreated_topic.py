"""A source topic deleted and created again under its name is detected and copied anew.

The danger: an offset committed for the deleted topic reused as a position in the
new one would silently skip the new topic's first records.
"""

from __future__ import annotations

import time

from confluent_kafka import Consumer, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient

from replicator.domain.commit_metadata import encode_note
from replicator.kafka.admin import admin_client, create_topics
from tests.kafka_io import end_offsets, produce, read_all, recreate_topic, total, wait_until
from tests.records import by_partition, make_records, write_config
from tests.support import Worker

PARTITIONS = 2


def _topic_id(admin: AdminClient, topic: str) -> str:
    from confluent_kafka import TopicCollection

    return str(admin.describe_topics(TopicCollection([topic]))[topic].result(timeout=15).topic_id)


def _copy_first_generation(primary, backup, topic, tmp_path, workers):  # type: ignore[no-untyped-def]
    create_topics(primary.bootstrap_servers, {topic: PARTITIONS})
    first = make_records(PARTITIONS, 100, "gen1")
    produce(primary.bootstrap_servers, topic, first)
    config = write_config(tmp_path / "m.yaml", primary.bootstrap_servers, backup.bootstrap_servers, [
        {"name": f"re-{topic}", "source": "primary", "target": "backup", "topics": [topic]}])
    worker = Worker(config, log_dir=tmp_path)
    workers.append(worker)
    wait_until(lambda: total(end_offsets(backup.bootstrap_servers, f"primary.{topic}", PARTITIONS)) == 200,
               60, "the first topic to be copied")
    return config, worker, first


def _assert_both_generations(primary, backup, topic, first, second, window_copies_allowed: bool = False) -> None:  # type: ignore[no-untyped-def]
    """The old topic's copy is intact and the new topic follows it whole, in order.

    Live, records written to the new topic before the worker notices the new id
    (its next metadata look) may be copied once more ahead of the full copy.
    """
    replica = f"primary.{topic}"
    wait_until(lambda: total(end_offsets(backup.bootstrap_servers, replica, PARTITIONS)) >= 200 + len(second),
               60, "the new topic to be copied whole")
    # A marker after the new records in each partition: once it has arrived, whatever the copy of the records
    # before it brings (duplicates included) has arrived too, in order.
    markers = make_records(PARTITIONS, 1, "marker")
    produce(primary.bootstrap_servers, topic, markers)

    def markers_arrived() -> bool:
        got = read_all(backup.bootstrap_servers, replica, PARTITIONS)
        return all(got[p] and got[p][-1] == markers[p] for p in range(PARTITIONS))

    wait_until(markers_arrived, 60, "the markers after the new records")
    got = {p: records[:-1] for p, records in read_all(backup.bootstrap_servers, replica, PARTITIONS).items()}
    old, new = by_partition(first, PARTITIONS), by_partition(second, PARTITIONS)
    for p in range(PARTITIONS):
        assert got[p][:100] == old[p], f"partition {p}: the deleted topic's copy is untouched"
        assert got[p][len(got[p]) - len(new[p]):] == new[p], f"partition {p}: the new topic whole, in order"
        extra = got[p][100:len(got[p]) - len(new[p])]
        if window_copies_allowed:
            assert all(rec in new[p] for rec in extra), f"partition {p}: only new records copied twice"
        else:
            assert not extra, f"partition {p}: {len(extra)} records copied twice"


def test_topic_recreated_while_replicating(primary, backup, unique_name, tmp_path, workers) -> None:  # type: ignore[no-untyped-def]
    topic = f"{unique_name}-live"
    _config, worker, first = _copy_first_generation(primary, backup, topic, tmp_path, workers)
    recreate_topic(primary.bootstrap_servers, topic, PARTITIONS)
    second = make_records(PARTITIONS, 300, "gen2")  # more than before: a reused offset would skip 100
    produce(primary.bootstrap_servers, topic, second)
    _assert_both_generations(primary, backup, topic, first, second, window_copies_allowed=True)
    assert worker.process.poll() is None
    # Said at the worker's next look at the topics' ids, which may come after the copy (CI: the markers first)
    wait_until(lambda: "deleted and created again" in worker.output(), 30, "the recreation to be reported")


def test_offset_of_the_deleted_topic_is_not_reused(primary, backup, unique_name, tmp_path, workers) -> None:  # type: ignore[no-untyped-def]
    """A commit that reached the group after the deletion (a worker's last commit racing
    the delete) is noted with the old topic id, so a restart does not resume from it."""
    topic = f"{unique_name}-restart"
    config, worker, first = _copy_first_generation(primary, backup, topic, tmp_path, workers)
    code, _ = worker.terminate()
    assert code == 0
    admin = admin_client(primary.bootstrap_servers)
    old_id = _topic_id(admin, topic)
    recreate_topic(primary.bootstrap_servers, topic, PARTITIONS)
    second = make_records(PARTITIONS, 300, "gen2")
    produce(primary.bootstrap_servers, topic, second)
    group = Consumer({"bootstrap.servers": primary.bootstrap_servers, "group.id": f"mirrorflow-re-{topic}"})
    stale = [TopicPartition(topic, p, 100, metadata=encode_note(int(time.time() * 1000), old_id))
             for p in range(PARTITIONS)]
    try:
        group.commit(offsets=stale, asynchronous=False)
    except KafkaException as exc:
        raise AssertionError(f"could not plant the stale commit: {exc}") from exc
    finally:
        group.close()
    restarted = Worker(config, log_dir=tmp_path)
    workers.append(restarted)
    _assert_both_generations(primary, backup, topic, first, second)
    wait_until(lambda: "deleted and created again" in restarted.output(), 10, "the recreation to be reported")
    assert "old_committed=100" in restarted.output()
