"""Where a new topic starts (earliest, latest, a timestamp), and a source topic deleted mid-route."""

from __future__ import annotations

import time

from replicator.kafka.admin import admin_client, create_topics
from tests.kafka_io import Rec, end_offsets, produce, read_all, total, wait_until
from tests.records import make_records, write_config
from tests.support import Worker


def test_start_latest_and_timestamp(primary, backup, unique_name, tmp_path, workers) -> None:  # type: ignore[no-untyped-def]
    now = int(time.time() * 1000)
    old = [Rec(0, b"old", f"o{n}".encode(), (), now - 3_600_000 + n) for n in range(50)]
    recent = [Rec(0, b"new", f"r{n}".encode(), (), now - 60_000 + n) for n in range(30)]
    for suffix in ("latest", "ts"):
        create_topics(primary.bootstrap_servers, {f"{unique_name}-{suffix}": 1})
        produce(primary.bootstrap_servers, f"{unique_name}-{suffix}", old + recent)
    since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime((now - 120_000) / 1000))
    config = write_config(tmp_path / "m.yaml", primary.bootstrap_servers, backup.bootstrap_servers, [
        {"name": "late", "source": "primary", "target": "backup", "topics": [f"{unique_name}-latest"],
         "start": "latest"},
        {"name": "since", "source": "primary", "target": "backup", "topics": [f"{unique_name}-ts"],
         "start": since}])
    worker = Worker(config, log_dir=tmp_path)
    workers.append(worker)
    wait_until(lambda: f"{unique_name}-latest[0]@80" in worker.output(), 60, "the latest route to start at the end")
    after = [Rec(0, b"after", b"a", (), now + 1)]
    produce(primary.bootstrap_servers, f"{unique_name}-latest", after)
    wait_until(lambda: total(end_offsets(backup.bootstrap_servers, f"primary.{unique_name}-latest", 1)) == 1,
               30, "the record produced after the start")
    assert read_all(backup.bootstrap_servers, f"primary.{unique_name}-latest", 1)[0] == after
    wait_until(lambda: total(end_offsets(backup.bootstrap_servers, f"primary.{unique_name}-ts", 1)) == 30,
               30, "the records since the start time")
    assert read_all(backup.bootstrap_servers, f"primary.{unique_name}-ts", 1)[0] == recent


def test_deleted_source_topic_stops_alone(primary, backup, unique_name, tmp_path, workers) -> None:  # type: ignore[no-untyped-def]
    doomed, kept = f"{unique_name}-doomed", f"{unique_name}-kept"
    create_topics(primary.bootstrap_servers, {doomed: 1, kept: 1})
    produce(primary.bootstrap_servers, doomed, make_records(1, 100, "d"))
    produce(primary.bootstrap_servers, kept, make_records(1, 100, "k1"))
    config = write_config(tmp_path / "m.yaml", primary.bootstrap_servers, backup.bootstrap_servers, [
        {"name": "del", "source": "primary", "target": "backup", "topics": [f"{unique_name}-.*"]}])
    worker = Worker(config, log_dir=tmp_path)
    workers.append(worker)
    wait_until(lambda: total(end_offsets(backup.bootstrap_servers, f"primary.{kept}", 1)) == 100, 60, "copy")
    admin = admin_client(primary.bootstrap_servers)
    for future in admin.delete_topics([doomed]).values():
        future.result(timeout=15)
    more = make_records(1, 50, "k2")
    produce(primary.bootstrap_servers, kept, more)
    wait_until(lambda: total(end_offsets(backup.bootstrap_servers, f"primary.{kept}", 1)) == 150, 30,
               "the other topic to go on")
    wait_until(lambda: f"removed={doomed}" in worker.output(), 20, "the worker to drop the deleted topic")
    assert worker.process.poll() is None
    assert total(end_offsets(backup.bootstrap_servers, f"primary.{doomed}", 1)) == 100  # the replica stays


def test_identity_onto_the_same_cluster_is_refused(primary, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Two names for one cluster (same cluster id): identity would copy every topic onto itself."""
    import subprocess
    import sys
    from pathlib import Path

    config = tmp_path / "m.yaml"
    config.write_text(
        f"clusters: {{here: {{bootstrap.servers: '{primary.bootstrap_servers}'}}, "
        f"alias: {{bootstrap.servers: 'localhost:{primary.bootstrap_servers.rsplit(':', 1)[1]}'}}}}\n"
        "routes: [{name: self, source: here, target: alias, topics: [x], policy: identity}]\n"
        f"state: {{url: 'sqlite:///{tmp_path / 'state.db'}'}}\n"
    )
    done = subprocess.run([str(Path(sys.executable).parent / "mirrorflow"), "run", "--config", str(config)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "route self: source 'here' and target 'alias' are the same cluster" in done.stderr
    assert "Traceback" not in done.stderr


def test_deleted_target_topic_is_created_again_and_copying_goes_on(primary, backup, unique_name, tmp_path,  # type: ignore[no-untyped-def]
                                                                   workers) -> None:
    """Someone deletes a replica under a running route: it is created again and the records written after
    the deletion arrive in order (the deleted replica's records are gone with it: that is the deletion)."""
    topic = f"{unique_name}-t"
    create_topics(primary.bootstrap_servers, {topic: 2})
    produce(primary.bootstrap_servers, topic, make_records(2, 50, "a"))
    config = write_config(tmp_path / "m.yaml", primary.bootstrap_servers, backup.bootstrap_servers, [
        {"name": "deltarget", "source": "primary", "target": "backup", "topics": [topic]}])
    worker = Worker(config, log_dir=tmp_path)
    workers.append(worker)
    replica = f"primary.{topic}"
    wait_until(lambda: total(end_offsets(backup.bootstrap_servers, replica, 2)) == 100, 60, "the first copy")
    admin = admin_client(backup.bootstrap_servers)
    for future in admin.delete_topics([replica]).values():
        future.result(timeout=15)
    later = make_records(2, 40, "b")
    produce(primary.bootstrap_servers, topic, later)
    wait_until(lambda: total(end_offsets(backup.bootstrap_servers, replica, 2)) >= 80, 150,
               "the records written after the deletion, in the replica created again")
    copied = read_all(backup.bootstrap_servers, replica, 2)
    for partition in (0, 1):
        mine = [r for r in later if r.partition == partition]
        assert copied[partition][-len(mine):] == mine, f"partition {partition}"
    assert worker.process.poll() is None
