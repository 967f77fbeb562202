"""Checkpoint drills on the real clusters: a group that consumed part of a topic on primary resumes on backup.

Caught up: at exactly the record after its last one (key, value, headers, timestamp),
across transaction markers and an aborted transaction. Lagging: nothing skipped,
at most the reported number repeated. A group with an active member on backup is
left alone. Bad names change nothing.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from confluent_kafka import Consumer, TopicPartition

from replicator.domain.checkpoint import decode_checkpoint
from replicator.kafka.admin import create_topics
from tests.checkpoint_io import (
    VISIBLE_PER_BATCH,
    checkpoint_cli,
    checkpoint_json,
    consume_part,
    read_source,
    resume_on_target,
    wait_caught_up,
    write_batch,
)
from tests.kafka_io import committed, end_offsets, leave_group
from tests.records import write_config
from tests.support import Worker


def _config(tmp_path: Path, primary, backup, route: str, topic: str, groups: list[str]) -> Path:  # type: ignore[no-untyped-def]
    return write_config(tmp_path / "m.yaml", primary.bootstrap_servers, backup.bootstrap_servers, [
        {"name": route, "source": "primary", "target": "backup", "topics": [topic],
         "checkpoints": {"groups": groups, "write_target_groups": True}}])


def _stored(tmp_path: Path, sql: str) -> list[tuple[object, ...]]:
    database = tmp_path / "state.db"
    if not database.exists():
        return []
    with sqlite3.connect(database) as connection:
        return connection.execute(sql).fetchall()


def _checkpoint_records(bootstrap: str, topic: str) -> dict[tuple[str, str, int], tuple[int, int, str]]:
    end = end_offsets(bootstrap, topic, 1)[0]
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "checkpoint-drill-reader"})
    consumer.assign([TopicPartition(topic, 0, 0)])
    latest = {}
    try:
        position = 0
        while position < end:
            for msg in consumer.consume(100, 1.0):
                position = msg.offset() + 1
                checkpoint, _ = decode_checkpoint(msg.key(), msg.value())
                latest[(checkpoint.group, checkpoint.topic, checkpoint.partition)] = (
                    checkpoint.source_offset, checkpoint.target_offset, checkpoint.status.value)
    finally:
        consumer.close()
    return latest


def test_caught_up_group_resumes_on_backup_exactly_after_its_last_record(  # type: ignore[no-untyped-def]
        primary, backup, unique_name, tmp_path, workers) -> None:
    topic, group, route, partitions = unique_name, f"{unique_name}-app", f"r-{unique_name[-8:]}", 3
    create_topics(primary.bootstrap_servers, {topic: partitions})
    write_batch(primary.bootstrap_servers, topic, partitions, "one")
    source = read_source(primary.bootstrap_servers, topic, partitions)
    assert all(len(recs) == VISIBLE_PER_BATCH for recs in source.values())
    # p0 stops on a transaction's last record (its commit lands on the marker), p1 right
    # before the aborted transaction, p2 is never read (no commit: it starts at the beginning).
    commits = consume_part(primary.bootstrap_servers, group, topic, {0: 9, 1: 15, 2: 0})
    assert commits[0] == 9 and commits[1] == 17  # both on a commit marker
    config = _config(tmp_path, primary, backup, route, topic, [group])
    workers.append(Worker(config, route, log_dir=tmp_path))
    wait_caught_up(primary.bootstrap_servers, route, topic, source)
    assert workers[0].terminate()[0] == 0

    summary = checkpoint_json(config)
    rows = summary["checkpoints"]
    assert [(r["partition"], r["source_offset"], r["status"], r["target_group"]) for r in rows] == [
        (0, 9, "exact", "written"), (1, 17, "exact", "written")]
    assert summary["status"] == "ok" and summary["groups"] == [group]

    resumed = resume_on_target(backup.bootstrap_servers, group, f"primary.{topic}", partitions)
    for p in range(partitions):
        expected = [rec for offset, rec in source[p] if offset >= commits.get(p, 0)]
        assert resumed[p] == expected, f"partition {p}: duplicates or gaps"
    assert [len(resumed[p]) for p in range(partitions)] == [14, 8, 23]

    stored = _stored(tmp_path, "select group_id, topic, partition, source_offset, target_offset, status "
                               "from mf_checkpoint order by partition")
    assert stored == [(group, topic, r["partition"], r["source_offset"], r["target_offset"], "exact") for r in rows]
    # The group's lags beside each checkpoint: on the source, to the topic's end; on the target, exactly the
    # records it read there once moved.
    ends = end_offsets(primary.bootstrap_servers, topic, partitions)
    lags = _stored(tmp_path, "select partition, source_end - source_offset, target_end - target_offset "
                             "from mf_checkpoint order by partition")
    assert lags == [(p, ends[p] - commits[p], len(resumed[p])) for p in (0, 1)]
    records = _checkpoint_records(backup.bootstrap_servers, f"mirrorflow-checkpoints.{route}.internal")
    assert records == {(group, topic, r["partition"]): (r["source_offset"], r["target_offset"], "exact")
                       for r in rows}
    again = checkpoint_json(config)  # a rerun is harmless: the group is where it should be already
    assert [r["target_group"] for r in again["checkpoints"]] == ["up-to-date", "up-to-date"]


def test_lagging_route_never_skips_and_bounds_repeats(  # type: ignore[no-untyped-def]
        primary, backup, unique_name, tmp_path, workers) -> None:
    topic, group, route, partitions = unique_name, f"{unique_name}-app", f"r-{unique_name[-8:]}", 2
    create_topics(primary.bootstrap_servers, {topic: partitions})
    write_batch(primary.bootstrap_servers, topic, partitions, "one")
    config = _config(tmp_path, primary, backup, route, topic, [group])
    workers.append(Worker(config, route, log_dir=tmp_path))
    route_end = wait_caught_up(primary.bootstrap_servers, route, topic, read_source(primary.bootstrap_servers,
                                                                                      topic, partitions))
    assert workers[0].terminate()[0] == 0  # the route stops; the source goes on
    write_batch(primary.bootstrap_servers, topic, partitions, "two")
    source = read_source(primary.bootstrap_servers, topic, partitions)
    commits = consume_part(primary.bootstrap_servers, group, topic, {0: VISIBLE_PER_BATCH + 10, 1: 5})

    rows = {r["partition"]: r for r in checkpoint_json(config)["checkpoints"]}
    assert rows[0]["status"] == "behind" and rows[0]["target_group"] == "written"
    assert rows[0]["max_repeats"] == commits[0] - route_end[0] > 0
    assert rows[1]["status"] == "exact" and rows[1]["max_repeats"] == 0

    workers.append(Worker(config, route, log_dir=tmp_path))  # the route catches up later
    wait_caught_up(primary.bootstrap_servers, route, topic, source)
    assert workers[1].terminate()[0] == 0
    resumed = resume_on_target(backup.bootstrap_servers, group, f"primary.{topic}", partitions)
    unread = [rec for offset, rec in source[0] if offset >= commits[0]]
    repeated = resumed[0][: len(resumed[0]) - len(unread)]
    assert resumed[0][len(repeated):] == unread, "a record the group never read was skipped"
    assert repeated == [rec for offset, rec in source[0] if route_end[0] <= offset < commits[0]]
    assert 0 < len(repeated) <= rows[0]["max_repeats"]
    assert resumed[1] == [rec for offset, rec in source[1] if offset >= commits[1]]


def test_group_with_an_active_member_on_backup_is_left_alone(  # type: ignore[no-untyped-def]
        primary, backup, unique_name, tmp_path, workers) -> None:
    topic, route = unique_name, f"r-{unique_name[-8:]}"
    busy, idle, ahead = (f"{unique_name}-{n}" for n in ("busy", "idle", "ahead"))
    create_topics(primary.bootstrap_servers, {topic: 1})
    write_batch(primary.bootstrap_servers, topic, 1, "one")
    source = read_source(primary.bootstrap_servers, topic, 1)
    for group in (busy, idle, ahead):
        consume_part(primary.bootstrap_servers, group, topic, {0: 12})
    config = _config(tmp_path, primary, backup, route, topic, [busy, idle, ahead])
    workers.append(Worker(config, route, log_dir=tmp_path))
    wait_caught_up(primary.bootstrap_servers, route, topic, source)
    assert workers[0].terminate()[0] == 0
    replica = f"primary.{topic}"
    consume_part(backup.bootstrap_servers, ahead, replica, {0: 20})  # consumed further on backup already
    member = Consumer({"bootstrap.servers": backup.bootstrap_servers, "group.id": busy, "group.protocol": "consumer",
                       "auto.offset.reset": "earliest", "enable.auto.commit": "false"})
    try:
        member.subscribe([replica])
        while not member.assignment():
            member.poll(0.2)
        member.commit(offsets=[TopicPartition(replica, 0, 1)], asynchronous=False)

        summary = checkpoint_json(config)
        outcome = {r["group"]: (r["target_group"], r["target_offset"]) for r in summary["checkpoints"]}
        assert outcome[busy][0] == "active-members" and outcome[ahead][0] == "target-ahead"
        assert outcome[idle][0] == "written"
        assert summary["skipped_groups"] == {busy: "active members on backup"} and summary["status"] == "ok"
        assert committed(backup.bootstrap_servers, busy, replica, 1) == {0: 1}, "an active group was overwritten"
        assert committed(backup.bootstrap_servers, ahead, replica, 1) == {0: 20}, "a group moved backwards"
        assert committed(backup.bootstrap_servers, idle, replica, 1) == {0: outcome[idle][1]}
        table = checkpoint_cli(config)
        assert table.returncode == 0, table.stderr
        assert f"group {busy} left as it is on backup: it has active members there" in table.stdout
        assert "kept: target group ahead at 20" in table.stdout and "already there" in table.stdout
    finally:
        leave_group(member)


def test_syncs_of_records_retention_deleted_are_pruned_and_translation_stays_exact(  # type: ignore[no-untyped-def]
        primary, backup, unique_name, tmp_path, workers) -> None:
    """Two runs of syncs (the route restarted between two batches); the source deletes the first batch and a
    bit of the second: the checkpoint run tombstones the first run, and a group that read from the new log
    start still resumes on the target at exactly its next record, then and at the next run."""
    from confluent_kafka.admin import AdminClient

    from replicator.domain.offset_sync import decode_sync_key

    topic, group, route = unique_name, f"{unique_name}-app", f"r-{unique_name[-8:]}"
    create_topics(primary.bootstrap_servers, {topic: 1})
    config = _config(tmp_path, primary, backup, route, topic, [group])
    for tag in ("one", "two"):  # each worker starts a new run of syncs
        write_batch(primary.bootstrap_servers, topic, 1, tag)
        workers.append(Worker(config, route, log_dir=tmp_path))
        wait_caught_up(primary.bootstrap_servers, route, topic, read_source(primary.bootstrap_servers, topic, 1))
        assert workers[-1].terminate()[0] == 0
    source = read_source(primary.bootstrap_servers, topic, 1)
    second = end_offsets(primary.bootstrap_servers, topic, 1)[0] // 2  # where batch two starts
    admin = AdminClient({"bootstrap.servers": primary.bootstrap_servers})
    for future in admin.delete_records([TopicPartition(topic, 0, second + 8)]).values():
        assert future.result(timeout=30).low_watermark == second + 8  # the new log start
    commits = consume_part(primary.bootstrap_servers, group, topic, {0: 4})
    syncs_topic = f"mirrorflow-offset-syncs.{route}.internal"

    for _ in range(2):  # the second run reads the tombstone
        [row] = checkpoint_json(config)["checkpoints"]
        assert (row["source_offset"], row["status"]) == (commits[0], "exact")
    consumer = Consumer({"bootstrap.servers": backup.bootstrap_servers, "group.id": "syncs-reader"})
    consumer.assign([TopicPartition(syncs_topic, 0, 0)])
    end, keys, tombstones = end_offsets(backup.bootstrap_servers, syncs_topic, 1)[0], set(), set()
    try:
        while consumer.position([TopicPartition(syncs_topic, 0)])[0].offset < end:
            for msg in consumer.consume(100, 1.0):
                key = decode_sync_key(msg.key())
                (tombstones if msg.value() is None else keys).add(key)
    finally:
        consumer.close()
    assert tombstones == {(topic, 0, 0)}, "the first batch's run is pruned, nothing else"
    assert any(start >= second for _, _, start in keys - tombstones), "the second batch's run is kept"
    resumed = resume_on_target(backup.bootstrap_servers, group, f"primary.{topic}", 1)
    assert resumed[0] == [rec for offset, rec in source[0] if offset >= commits[0]]


def test_unknown_route_or_group_exits_2_and_changes_nothing(primary, backup, unique_name, tmp_path) -> None:  # type: ignore[no-untyped-def]
    topic, group, route = unique_name, f"{unique_name}-app", f"r-{unique_name[-8:]}"
    create_topics(primary.bootstrap_servers, {topic: 1})
    write_batch(primary.bootstrap_servers, topic, 1, "one")
    excluded = f"console-consumer-{unique_name[-8:]}"  # excluded by default, as MirrorMaker 2 does
    for name in (group, excluded):
        consume_part(primary.bootstrap_servers, name, topic, {0: 3})
    config = _config(tmp_path, primary, backup, route, topic, [".*"])
    for args, message in [
        (["--route", "nope"], f"unknown route 'nope' (known: {route})"),
        (["--group", group, "--group", "nope"], f"route {route}: source 'primary': no consumer group 'nope'"),
        (["--group", excluded], f"group {excluded!r} is excluded by checkpoints.groups/exclude_groups"),
    ]:
        done = checkpoint_cli(config, *args)
        assert done.returncode == 2 and message in done.stderr, done.stderr
        assert "Traceback" not in done.stderr and done.stdout == ""
    listed = Consumer({"bootstrap.servers": backup.bootstrap_servers, "group.id": "checkpoint-drill-reader"})
    try:
        assert f"mirrorflow-checkpoints.{route}.internal" not in listed.list_topics(timeout=10).topics
    finally:
        listed.close()
    assert committed(backup.bootstrap_servers, group, f"primary.{topic}", 1) in ({}, {0: -1})
    assert _stored(tmp_path, "select count(*) from mf_checkpoint_run") in ([], [(0,)])


def test_a_groups_offsets_are_all_read_when_the_route_has_more_partitions_than_one_request_asks(  # type: ignore[no-untyped-def]
        primary, unique_name, monkeypatch) -> None:
    """Committed offsets are asked a few hundred partitions at a time (librdkafka's cost grows with the square
    of a request's size): every committed partition is found, whichever request asked it, and no other."""
    from replicator.kafka import group_offsets as offsets

    monkeypatch.setattr(offsets, "PARTITIONS_PER_REQUEST", 3)
    topics = {f"{unique_name}-a": 7, f"{unique_name}-b": 2}
    create_topics(primary.bootstrap_servers, topics)
    wanted = {(f"{unique_name}-a", 0): 5, (f"{unique_name}-a", 4): 1, (f"{unique_name}-a", 6): 12,
              (f"{unique_name}-b", 1): 3}  # in the first, second, third and last request
    group = f"g-{unique_name}"
    offsets.commit({"bootstrap.servers": primary.bootstrap_servers}, group, wanted, "primary")
    partitions = [(t, p) for t, count in topics.items() for p in range(count)]
    assert offsets.read_committed({"bootstrap.servers": primary.bootstrap_servers}, group, partitions,
                                  "primary") == wanted
