"""`mirrorflow run` on the real clusters: exact copies, nothing lost on kill -9, no loops."""

from __future__ import annotations

import time

import pytest

from replicator.kafka.admin import create_topics
from tests.kafka_io import Rec, committed, end_offsets, produce, read_all, total, wait_until
from tests.records import BASE_TS, by_partition, make_records, write_config
from tests.support import Worker

CODECS = ("gzip", "snappy", "lz4", "zstd")


def test_topics_arrive_byte_for_byte_in_order(primary, backup, unique_name, tmp_path, workers) -> None:  # type: ignore[no-untyped-def]
    partitions, per_partition = 4, 6_500  # 4 topics x 4 partitions x 6.5k = 104k records
    expected = {}
    for codec in CODECS:
        topic = f"{unique_name}-{codec}"
        create_topics(primary.bootstrap_servers, {topic: partitions})
        records = make_records(partitions, per_partition, codec)
        produce(primary.bootstrap_servers, topic, records, **{"compression.type": codec})
        expected[topic] = by_partition(records, partitions)
    config = write_config(tmp_path / "m.yaml", primary.bootstrap_servers, backup.bootstrap_servers, [
        {"name": "p2b", "source": "primary", "target": "backup", "topics": [f"{unique_name}-.*"]}])
    workers.append(Worker(config, log_dir=tmp_path))

    for topic, want in expected.items():
        remote = f"primary.{topic}"
        wait_until(lambda remote=remote, want=want: total(end_offsets(backup.bootstrap_servers, remote, partitions))
                   >= sum(map(len, want.values())), 120, f"{remote} to catch up")
        assert read_all(backup.bootstrap_servers, remote, partitions) == want, topic
    code, seconds = workers[0].terminate()
    assert code == 0 and seconds < 10, workers[0].output()[-2000:]


def test_kill_minus_nine_loses_nothing(primary, backup, unique_name, tmp_path, workers) -> None:  # type: ignore[no-untyped-def]
    import threading

    partitions, per_partition = 3, 40_000
    create_topics(primary.bootstrap_servers, {unique_name: partitions})
    records = make_records(partitions, per_partition, "k9")
    config = write_config(tmp_path / "m.yaml", primary.bootstrap_servers, backup.bootstrap_servers, [
        {"name": "k9", "source": "primary", "target": "backup", "topics": [unique_name]}])
    remote = f"primary.{unique_name}"

    def write_slowly() -> None:  # the source keeps growing while workers crash
        for chunk in range(0, len(records), 6_000):
            produce(primary.bootstrap_servers, unique_name, records[chunk:chunk + 6_000])
            time.sleep(0.3)

    writer = threading.Thread(target=write_slowly)
    writer.start()
    try:
        for _ in range(3):  # three crashes mid-stream, each after the copy made progress
            worker = Worker(config, log_dir=tmp_path)
            workers.append(worker)
            before = total(end_offsets(backup.bootstrap_servers, remote, partitions))
            wait_until(lambda before=before: total(end_offsets(backup.bootstrap_servers, remote, partitions)) > before,
                       60, "replication to progress")
            time.sleep(0.5)
            worker.kill()
    finally:
        writer.join()
    workers.append(Worker(config, log_dir=tmp_path))
    wanted = by_partition(records, partitions)
    # The route commits a source offset only once the target acknowledged it: a commit at the
    # source's end means every record is on the target (checked record by record below).
    ends = end_offsets(primary.bootstrap_servers, unique_name, partitions)
    wait_until(lambda: committed(primary.bootstrap_servers, "mirrorflow-k9", unique_name, partitions) == ends,
               120, "the route to commit the source's end")
    got = read_all(backup.bootstrap_servers, remote, partitions)
    duplicates = 0
    for p, want in wanted.items():
        firsts = list(dict.fromkeys(got[p]))  # order of first appearance
        assert firsts == want, f"partition {p}: records missing or out of order"
        duplicates += len(got[p]) - len(want)
    print(f"duplicates after three kill -9: {duplicates} of {len(records)} records")


def _exists(cluster, topic: str) -> bool:  # type: ignore[no-untyped-def]
    from replicator.kafka.admin import cluster_metadata

    return topic in cluster_metadata(cluster.bootstrap_servers).topics


def _markers(tag: str, partitions: int) -> list[Rec]:
    """A record per partition, written after what must not happen: its copy proves the route got past it."""
    return [Rec(p, b"marker", tag.encode(), (), BASE_TS) for p in range(partitions)]


def _wait_copied(cluster, topic: str, markers: list[Rec], partitions: int) -> None:  # type: ignore[no-untyped-def]
    """Wait until every marker is on ``topic`` of ``cluster`` (compared by key and value: a copy has headers)."""
    def arrived() -> bool:
        if total(end_offsets(cluster.bootstrap_servers, topic, partitions)) < len(markers):
            return False
        got = read_all(cluster.bootstrap_servers, topic, partitions)
        return all(any((r.key, r.value) == (m.key, m.value) for r in got[m.partition]) for m in markers)

    wait_until(arrived, 60, f"the markers on {topic}")


@pytest.mark.parametrize("policy", ["prefix", "identity"])
def test_two_way_routes_never_loop(primary, backup, unique_name, tmp_path, workers, policy) -> None:  # type: ignore[no-untyped-def]
    topic = unique_name
    for cluster in (primary, backup):
        create_topics(cluster.bootstrap_servers, {topic: 2})
    a = make_records(2, 500, "from-primary")
    b = make_records(2, 300, "from-backup")
    produce(primary.bootstrap_servers, topic, a)
    produce(backup.bootstrap_servers, topic, b)
    marker = f"{topic}-marker"  # prefix: a topic created later, which only a topic refresh finds
    pattern = [f"(primary\\.|backup\\.)?{topic}(-marker)?"] if policy == "prefix" else [topic]
    config = write_config(tmp_path / "m.yaml", primary.bootstrap_servers, backup.bootstrap_servers, [
        {"name": "a2b", "source": "primary", "target": "backup", "topics": pattern, "policy": policy},
        {"name": "b2a", "source": "backup", "target": "primary", "topics": pattern, "policy": policy}])
    workers.append(Worker(config, log_dir=tmp_path))
    if policy == "prefix":
        on_backup, on_primary = f"primary.{topic}", f"backup.{topic}"
        wait_until(lambda: _exists(backup, on_backup) and _exists(primary, on_primary), 60, "replica topics")
        wait_until(lambda: total(end_offsets(backup.bootstrap_servers, on_backup, 2)) >= len(a)
                   and total(end_offsets(primary.bootstrap_servers, on_primary, 2)) >= len(b), 60, "copies")
        # Each route finding the marker topic, created after the replica topics, looked at the
        # source's topics since: a loop would have copied primary.X back as backup.primary.X.
        to_backup, to_primary = _markers("primary after the copies", 1), _markers("backup after the copies", 1)
        for cluster, markers in ((primary, to_backup), (backup, to_primary)):
            create_topics(cluster.bootstrap_servers, {marker: 1})
            produce(cluster.bootstrap_servers, marker, markers)
        _wait_copied(backup, f"primary.{marker}", to_backup, 1)
        _wait_copied(primary, f"backup.{marker}", to_primary, 1)
        assert not _exists(primary, f"backup.primary.{topic}") and not _exists(backup, f"primary.backup.{topic}")
        assert total(end_offsets(backup.bootstrap_servers, on_backup, 2)) == len(a)
        assert total(end_offsets(primary.bootstrap_servers, on_primary, 2)) == len(b)
    else:
        wait_until(lambda: total(end_offsets(backup.bootstrap_servers, topic, 2)) >= len(a) + len(b)
                   and total(end_offsets(primary.bootstrap_servers, topic, 2)) >= len(a) + len(b), 60, "copies")
        # A marker behind every copy in each partition, one way then the other: once a marker
        # arrives, its route read every copy ahead of it, and a looping one would be on the
        # other side before the marker (so in the counts).
        to_backup, to_primary = _markers("primary after the copies", 2), _markers("backup after the copies", 2)
        produce(primary.bootstrap_servers, topic, to_backup)
        _wait_copied(backup, topic, to_backup, 2)
        produce(backup.bootstrap_servers, topic, to_primary)
        _wait_copied(primary, topic, to_primary, 2)
        expected = len(a) + len(b) + len(to_backup) + len(to_primary)
        assert total(end_offsets(backup.bootstrap_servers, topic, 2)) == expected
        assert total(end_offsets(primary.bootstrap_servers, topic, 2)) == expected
    code, _ = workers[0].terminate()
    assert code == 0, workers[0].output()[-2000:]
