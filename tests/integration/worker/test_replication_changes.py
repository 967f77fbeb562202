"""A running route under change: topics added, a second worker, a worker killed, the target down."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from replicator.kafka.admin import create_topics
from tests.kafka_io import committed, end_offsets, produce, read_all, total, wait_until
from tests.records import by_partition, make_records, write_config
from tests.support import Worker, free_port, start_pair


def _mirrorflow(*args: str) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).parent / "mirrorflow"
    return subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=60)


def test_topics_join_a_running_route_within_ten_seconds(primary, backup, unique_name, tmp_path, workers) -> None:  # type: ignore[no-untyped-def]
    first, by_pattern, by_hand = f"{unique_name}-a", f"{unique_name}-b", f"other-{unique_name}"
    create_topics(primary.bootstrap_servers, {first: 1})
    config = write_config(tmp_path / "m.yaml", primary.bootstrap_servers, backup.bootstrap_servers, [
        {"name": "dyn", "source": "primary", "target": "backup", "topics": [f"{unique_name}-.*"]}])
    workers.append(Worker(config, log_dir=tmp_path))
    produce(primary.bootstrap_servers, first, make_records(1, 100, "a"))
    wait_until(lambda: total(end_offsets(backup.bootstrap_servers, f"primary.{first}", 1)) == 100, 60, "first topic")

    for topic in (by_pattern, by_hand):
        create_topics(primary.bootstrap_servers, {topic: 2})
        produce(primary.bootstrap_servers, topic, make_records(2, 50, topic))
    added = _mirrorflow("topics", "add", "dyn", by_hand, "--config", str(config))
    assert added.returncode == 0, added.stderr
    began = time.monotonic()
    for topic in (by_pattern, by_hand):
        wait_until(lambda topic=topic: total(end_offsets(backup.bootstrap_servers, f"primary.{topic}", 2)) == 100,
                   30, topic)
    print(f"new topics copied {time.monotonic() - began:.1f} s after they appeared")
    assert time.monotonic() - began < 10 + 5  # refresh every 5 s, plus the copy itself
    listed = _mirrorflow("topics", "list", "dyn", "--config", str(config))
    assert by_hand in listed.stdout and "replicating" in listed.stdout
    status = _mirrorflow("status", "--config", str(config), "--json")
    assert status.returncode == 0, status.stderr
    assert f'"topic": "{by_hand}"' in status.stdout and f'"topic": "{first}"' in status.stdout
    # status reads the partitions the patterns select beside the state DB: one removed by hand is not shown.
    removed = _mirrorflow("topics", "remove", "dyn", by_pattern, "--config", str(config))
    assert removed.returncode == 0, removed.stderr
    status = _mirrorflow("status", "--config", str(config), "--json")
    assert status.returncode == 0, status.stderr
    assert f'"topic": "{by_pattern}"' not in status.stdout, status.stdout
    assert f'"topic": "{by_hand}"' in status.stdout and f'"topic": "{first}"' in status.stdout


def test_a_paused_topic_stops_copying_without_a_rebalance_and_resumes_where_it_stopped(  # type: ignore[no-untyped-def]
        primary, backup, unique_name, tmp_path, workers) -> None:
    held, other = f"{unique_name}-held", f"{unique_name}-other"
    create_topics(primary.bootstrap_servers, {held: 2, other: 2})
    config = write_config(tmp_path / "m.yaml", primary.bootstrap_servers, backup.bootstrap_servers, [
        {"name": "pz", "source": "primary", "target": "backup", "topics": [f"{unique_name}-.*"]}])
    worker = Worker(config, log_dir=tmp_path)
    workers.append(worker)
    first = {t: make_records(2, 20, f"{t}-first") for t in (held, other)}
    for topic, records in first.items():
        produce(primary.bootstrap_servers, topic, records)
    for topic in (held, other):
        wait_until(lambda topic=topic: total(end_offsets(backup.bootstrap_servers, f"primary.{topic}", 2)) == 40,
                   60, f"{topic} copied")

    for args, message in [(["--route", "pz", "--topic", "nope"], "route pz does not copy topic 'nope'"),
                          (["--route", "pz", "--topic", "mirrorflow-heartbeats.pz"], "the route's heartbeat topic"),
                          (["--route", "nope", "--topic", held], "unknown route 'nope'")]:
        refused = _mirrorflow("topics", "pause", *args, "--config", str(config))
        assert refused.returncode == 2 and message in refused.stderr, refused.stderr
        assert "Traceback" not in refused.stderr
    paused = _mirrorflow("topics", "pause", "--route", "pz", "--topic", held, "--config", str(config))
    assert paused.returncode == 0 and f"topic {held} paused" in paused.stdout, paused.stderr
    wait_until(lambda: f"topics paused by the operator route=pz topics={held} partitions=2" in worker.output(), 30,
               "the worker pausing it")
    assignments = worker.output().count("assigned route=pz")
    produce(primary.bootstrap_servers, held, make_records(2, 10, f"{held}-paused"))
    produce(primary.bootstrap_servers, other, make_records(2, 10, f"{other}-later"))  # written after: the marker
    wait_until(lambda: total(end_offsets(backup.bootstrap_servers, f"primary.{other}", 2)) == 60, 30,
               "the other topic copied on")
    assert total(end_offsets(backup.bootstrap_servers, f"primary.{held}", 2)) == 40  # nothing of the paused one
    assert worker.output().count("assigned route=pz") == assignments and "revoked" not in worker.output()
    listed = _mirrorflow("topics", "list", "--route", "pz", "--config", str(config))
    assert any(held in line and "paused" in line for line in listed.stdout.splitlines()), listed.stdout
    status = _mirrorflow("status", "--route", "pz", "--config", str(config), "--json")
    assert status.returncode == 0, status.stderr
    states = {(r["topic"], r["partition"]): r["state"] for r in json.loads(status.stdout)}
    assert {s for (t, _), s in states.items() if t == held} == {"PAUSED"}
    assert {s for (t, _), s in states.items() if t == other} == {"COPYING"}

    resumed = _mirrorflow("topics", "resume", "--route", "pz", "--topic", held, "--config", str(config))
    assert resumed.returncode == 0 and f"topic {held} resumed" in resumed.stdout, resumed.stderr
    wait_until(lambda: total(end_offsets(backup.bootstrap_servers, f"primary.{held}", 2)) == 60, 30,
               "the paused topic copied after its resume")
    copied = read_all(backup.bootstrap_servers, f"primary.{held}", 2)
    source = read_all(primary.bootstrap_servers, held, 2)
    assert {p: [(r.key, r.value) for r in recs] for p, recs in copied.items()} == \
        {p: [(r.key, r.value) for r in recs] for p, recs in source.items()}
    again = _mirrorflow("topics", "resume", "--route", "pz", "--topic", held, "--config", str(config))
    assert again.returncode == 0 and "is not paused: nothing to resume" in again.stdout


def test_two_workers_share_a_route_and_survive_one_killed(primary, backup, unique_name, tmp_path, workers) -> None:  # type: ignore[no-untyped-def]
    partitions = 6
    create_topics(primary.bootstrap_servers, {unique_name: partitions})
    config = write_config(tmp_path / "m.yaml", primary.bootstrap_servers, backup.bootstrap_servers, [
        {"name": "pair", "source": "primary", "target": "backup", "topics": [unique_name]}])
    one, two = Worker(config, log_dir=tmp_path), Worker(config, log_dir=tmp_path)
    workers += [one, two]
    first = make_records(partitions, 2_000, "first")
    produce(primary.bootstrap_servers, unique_name, first)
    remote = f"primary.{unique_name}"
    wait_until(lambda: total(end_offsets(backup.bootstrap_servers, remote, partitions)) >= len(first), 60, "copy")
    wait_until(lambda: "assigned" in one.output() and "assigned" in two.output(), 30, "both workers to own partitions")
    two.kill()
    second = make_records(partitions, 2_000, "second")
    produce(primary.bootstrap_servers, unique_name, second)
    ends = end_offsets(primary.bootstrap_servers, unique_name, partitions)
    wait_until(lambda: committed(primary.bootstrap_servers, "mirrorflow-pair", unique_name, partitions) == ends,
               60, "the surviving worker to take every partition over")
    got = read_all(backup.bootstrap_servers, remote, partitions)
    want = by_partition(first + second, partitions)
    for p in range(partitions):
        assert list(dict.fromkeys(got[p])) == want[p], f"partition {p}"


def test_target_down_then_back_loses_nothing(primary, unique_name, tmp_path, workers) -> None:  # type: ignore[no-untyped-def]
    (target,) = start_pair(tmp_path / "target", {"target": free_port()}, heap="384m")
    try:
        partitions = 2
        create_topics(primary.bootstrap_servers, {unique_name: partitions})
        config = write_config(tmp_path / "m.yaml", primary.bootstrap_servers, target.spec.bootstrap_servers, [
            {"name": "outage", "source": "primary", "target": "backup", "topics": [unique_name]}])
        worker = Worker(config, log_dir=tmp_path)
        workers.append(worker)
        before = make_records(partitions, 3_000, "before")
        produce(primary.bootstrap_servers, unique_name, before)
        remote = f"primary.{unique_name}"
        wait_until(lambda: total(end_offsets(target.spec.bootstrap_servers, remote, partitions)) >= len(before),
                   60, "copy before the outage")
        target.stop()
        during = make_records(partitions, 3_000, "during")
        produce(primary.bootstrap_servers, unique_name, during)
        time.sleep(5)
        assert worker.process.poll() is None, "the worker must ride out a target outage"
        target.start()
        ends = end_offsets(primary.bootstrap_servers, unique_name, partitions)
        wait_until(lambda: committed(primary.bootstrap_servers, "mirrorflow-outage", unique_name, partitions) == ends,
                   90, "catching up after the outage")
        got = read_all(target.spec.bootstrap_servers, remote, partitions)
        want = by_partition(before + during, partitions)
        for p in range(partitions):
            assert list(dict.fromkeys(got[p])) == want[p], f"partition {p}"
        code, seconds = worker.terminate()
        assert code == 0 and seconds < 10
        log = worker.output()
        assert log.count("target cluster unreachable") == 1, log[-3000:]  # one line per change
        assert log.count("target cluster reachable again") == 1
        assert "Connection refused" not in log  # librdkafka's per-retry lines stay quiet
    finally:
        target.stop()
