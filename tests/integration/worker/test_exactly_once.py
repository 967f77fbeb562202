"""Exactly-once routes on real brokers: a read_committed consumer of the target sees every source record once,
in order, through a kill -9 mid-transaction and a worker frozen past its session (a zombie that wakes up).

These tests kill and freeze workers, so they run on a pair of their own.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from replicator.dev.localcluster import LocalCluster
from replicator.kafka.admin import create_topics
from tests.kafka_io import Rec, committed, end_offsets, produce, read_committed, total, wait_until
from tests.records import by_partition, make_records, write_config
from tests.support import Worker, free_port, own_pair

PARTITIONS = 4


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LocalCluster, LocalCluster]]:
    """A source and a target of this module's own."""
    with own_pair(tmp_path_factory.mktemp("eos-pair")) as clusters:
        yield clusters


@pytest.fixture
def route(pair: tuple[LocalCluster, LocalCluster], unique_name: str, tmp_path: Path) -> Path:
    """A 4-partition topic and a config whose exactly-once route ``once`` copies it."""
    source, target = pair
    create_topics(source.spec.bootstrap_servers, {unique_name: PARTITIONS})
    return write_config(tmp_path / "m.yaml", source.spec.bootstrap_servers, target.spec.bootstrap_servers, [
        {"name": "once", "source": "primary", "target": "backup", "topics": [unique_name],
         "guarantee": "exactly-once", "transactions": {"interval_ms": 200}}])


def _exactly_once(pair: tuple[LocalCluster, LocalCluster], topic: str, records: list[Rec]) -> None:
    """Once the route's positions reach the source's ends: every record on the target once, byte for byte,
    in order per partition, as a read_committed consumer sees it."""
    source, target = pair
    ends = end_offsets(source.spec.bootstrap_servers, topic, PARTITIONS)
    wait_until(lambda: committed(source.spec.bootstrap_servers, "mirrorflow-once", topic, PARTITIONS) == ends,
               120, "the route's positions at the source's ends")
    got = read_committed(target.spec.bootstrap_servers, f"primary.{topic}", PARTITIONS)
    want = by_partition(records, PARTITIONS)
    for p in range(PARTITIONS):
        assert len(got[p]) == len(want[p]), f"partition {p}: {len(got[p])} records, {len(want[p])} sent"
        assert got[p] == want[p], f"partition {p}"


def _clean(*workers: Worker) -> None:
    for worker in workers:
        assert worker.process.poll() is None, worker.output()[-3000:]
        code, _ = worker.terminate(60)
        assert code == 0, worker.output()[-3000:]
        assert "Traceback" not in worker.output(), worker.output()[-3000:]


def test_a_kill_mid_transaction_leaves_no_visible_duplicate(pair, route, unique_name, tmp_path, workers) -> None:  # type: ignore[no-untyped-def]
    """kill -9 while a backlog is copied: the records of the open transaction are aborted, the next worker
    goes on from the last commit; nothing repeats, nothing is missing."""
    source, target = pair
    records = make_records(PARTITIONS, 20_000, "eos-kill")
    produce(source.spec.bootstrap_servers, unique_name, records)
    victim = Worker(route, log_dir=tmp_path, extra=["--worker-id", "w-victim"])
    workers.append(victim)
    wait_until(lambda: total(end_offsets(target.spec.bootstrap_servers, f"primary.{unique_name}", PARTITIONS))
               >= len(records) // 4, 60, "a quarter copied")
    victim.kill()
    assert total(end_offsets(target.spec.bootstrap_servers, f"primary.{unique_name}", PARTITIONS)) < len(records), \
        "the kill came after the whole copy: it proves nothing"
    successor = Worker(route, log_dir=tmp_path)
    workers.append(successor)
    more = make_records(PARTITIONS, 500, "eos-after")
    produce(source.spec.bootstrap_servers, unique_name, more)
    _exactly_once(pair, unique_name, records + more)
    _clean(successor)
    status = _mirrorflow("status", "--config", str(route), "--json")  # what an operator sees of it
    assert status.returncode == 0, status.stderr
    rows = json.loads(status.stdout)
    assert {(r["guarantee"], r["lag"]) for r in rows} == {("exactly-once", 0)}
    assert {r["transactions_committed"] for r in rows} == {rows[0]["transactions_committed"]}
    assert rows[0]["transactions_committed"] >= 1 and rows[0]["transactions_aborted"] >= 0
    table = _mirrorflow("status", "--config", str(route))
    assert "transactions committed" in table.stdout
    assert re.search(rf"^once\s+{rows[0]['transactions_committed']}\s+{rows[0]['transactions_aborted']}\s",
                     table.stdout, re.MULTILINE), table.stdout


def _mirrorflow(*args: str) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).parent / "mirrorflow"
    return subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=60)


def test_a_frozen_worker_is_fenced_when_it_wakes(pair, route, unique_name, tmp_path, workers) -> None:  # type: ignore[no-untyped-def]
    """SIGSTOP one of two workers mid-copy: past its session the other takes its partitions; woken, the
    zombie's open transaction cannot commit (the target refuses its membership) and nothing of it shows."""
    source, _ = pair
    first = make_records(PARTITIONS, 2_000, "eos-frozen")
    produce(source.spec.bootstrap_servers, unique_name, first)
    zombie, survivor = Worker(route, log_dir=tmp_path), Worker(route, log_dir=tmp_path)
    workers += [zombie, survivor]
    wait_until(lambda: "placed" in zombie.output() and "placed" in survivor.output(), 60, "both workers copying")
    _exactly_once(pair, unique_name, first)
    os.kill(zombie.process.pid, signal.SIGSTOP)
    try:
        second = make_records(PARTITIONS, 5_000, "eos-while-frozen")
        produce(source.spec.bootstrap_servers, unique_name, second)
        before = survivor.output().count("placed")
        wait_until(lambda: survivor.output().count("placed") > before, 90,
                   "the survivor taking the zombie's partitions")
        _exactly_once(pair, unique_name, first + second)
    finally:
        os.kill(zombie.process.pid, signal.SIGCONT)
    wait_until(lambda: "partitions lost" in zombie.output() or "transaction aborted" in zombie.output(), 60,
               "the zombie learning it lost its partitions")
    third = make_records(PARTITIONS, 500, "eos-after-wake")
    produce(source.spec.bootstrap_servers, unique_name, third)
    _exactly_once(pair, unique_name, first + second + third)
    _clean(zombie, survivor)


def test_a_target_that_cannot_run_transactions_is_refused_at_start(pair, unique_name, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Bad input: a target whose transaction state log needs 3 replicas on 1 broker exits 2 at once, naming
    the cluster and the setting (rather than a worker waiting for a coordinator that never comes)."""
    from replicator.dev.localcluster import LocalClusterSpec

    source, _ = pair
    port = free_port()
    lame = LocalCluster(LocalClusterSpec("lame", tmp_path / "lame", port, port + 1, heap="256m",
                                         extra_properties={"transaction.state.log.replication.factor": "3"}))
    lame.start()
    try:
        create_topics(source.spec.bootstrap_servers, {unique_name: 1})
        config = write_config(tmp_path / "m.yaml", source.spec.bootstrap_servers, lame.spec.bootstrap_servers, [
            {"name": "once", "source": "primary", "target": "backup", "topics": [unique_name],
             "guarantee": "exactly-once"}])
        run = subprocess.run([str(Path(sys.executable).parent / "mirrorflow"), "run", "--config", str(config)],
                             capture_output=True, text=True, timeout=120)
    finally:
        lame.stop()
    assert run.returncode == 2, run.stderr[-2000:]
    assert "target cluster 'backup'" in run.stderr and "transaction.state.log.replication.factor=3" in run.stderr
    assert "Traceback" not in run.stderr


def test_a_target_that_does_not_grant_the_transactional_id_is_refused_at_start(pair, unique_name, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Bad input: the route's principal may do everything on the target but WRITE its transactional ids: exit 2
    at once naming the cluster, the id and the ACL to grant, with no password and no traceback."""
    from confluent_kafka.admin import AclBinding, AclOperation, AclPermissionType, ResourcePatternType, ResourceType

    from replicator.dev.localcluster import LocalClusterSpec
    from replicator.kafka.admin import admin_client

    source, _ = pair
    port = free_port()
    secured = LocalCluster(LocalClusterSpec("secured", tmp_path / "secured", port, port + 1, heap="256m",
                                            authorizer=True, sasl_port=free_port(),
                                            sasl_users={"mirror": "mirror-pa55word"}))
    secured.start()
    try:
        grants = [AclBinding(kind, name, ResourcePatternType.LITERAL, "User:mirror", "*", AclOperation.ALL,
                             AclPermissionType.ALLOW)
                  for kind, name in [(ResourceType.TOPIC, "*"), (ResourceType.GROUP, "*"),
                                     (ResourceType.BROKER, "kafka-cluster")]]
        admin = admin_client(secured.spec.bootstrap_servers)  # the plaintext listener's ANONYMOUS is a super user
        for future in admin.create_acls(grants).values():
            future.result(timeout=15)
        create_topics(source.spec.bootstrap_servers, {unique_name: 1})
        config = tmp_path / "m.yaml"
        config.write_text(
            f"clusters:\n  primary: {{bootstrap.servers: '{source.spec.bootstrap_servers}'}}\n"
            f"  backup: {{bootstrap.servers: '{secured.spec.sasl_bootstrap_servers}', security.protocol: "
            "SASL_PLAINTEXT, sasl.mechanism: PLAIN, sasl.username: mirror, sasl.password: mirror-pa55word}\n"
            f"routes: [{{name: once, source: primary, target: backup, topics: ['{unique_name}'], "
            "guarantee: exactly-once}]\n")
        run = subprocess.run([str(Path(sys.executable).parent / "mirrorflow"), "run", "--config", str(config)],
                             capture_output=True, text=True, timeout=120)
    finally:
        secured.stop()
    assert run.returncode == 2, run.stderr[-2000:]
    assert "target cluster 'backup'" in run.stderr and "refuses transactional id 'mirrorflow-once-" in run.stderr
    assert "grant WRITE and DESCRIBE on TransactionalId" in run.stderr
    assert "mirror-pa55word" not in run.stderr + run.stdout and "Traceback" not in run.stderr


def test_switching_a_route_between_the_guarantees_repeats_and_skips_nothing(pair, unique_name, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """at-least-once, then exactly-once, then at-least-once again (each worker stopped before the switch):
    each resumes at the furthest position either guarantee recorded, so every record is on the target once."""
    source, target = pair
    create_topics(source.spec.bootstrap_servers, {unique_name: PARTITIONS})
    sent: list[Rec] = []
    for step, guarantee in enumerate(("at-least-once", "exactly-once", "at-least-once")):
        config = write_config(tmp_path / f"m{step}.yaml", source.spec.bootstrap_servers,
                              target.spec.bootstrap_servers, [
                                  {"name": "once", "source": "primary", "target": "backup", "topics": [unique_name],
                                   "guarantee": guarantee}])
        batch = make_records(PARTITIONS, 300, f"switch-{step}")
        produce(source.spec.bootstrap_servers, unique_name, batch)
        sent += batch
        worker = Worker(config, log_dir=tmp_path)
        try:
            _exactly_once(pair, unique_name, sent)
        finally:
            code, _ = worker.terminate(60)
        assert code == 0 and "Traceback" not in worker.output(), worker.output()[-3000:]


def test_a_route_refuses_to_start_with_one_guarantee_while_workers_run_the_other(pair, unique_name, tmp_path,  # type: ignore[no-untyped-def]
                                                                                workers) -> None:
    """Bad input: an exactly-once worker started while an at-least-once worker of the same route runs (they
    are in different groups: both would copy every record) exits 2 naming the group and the cluster."""
    source, target = pair
    create_topics(source.spec.bootstrap_servers, {unique_name: PARTITIONS})
    routes = {g: write_config(tmp_path / f"{g}.yaml", source.spec.bootstrap_servers, target.spec.bootstrap_servers, [
        {"name": "mixed", "source": "primary", "target": "backup", "topics": [unique_name], "guarantee": g}])
        for g in ("at-least-once", "exactly-once")}
    running = Worker(routes["at-least-once"], log_dir=tmp_path)
    workers.append(running)
    wait_until(lambda: "placed" in running.output(), 60, "the at-least-once worker copying")
    refused = _mirrorflow("run", "--config", str(routes["exactly-once"]))
    assert refused.returncode == 2, refused.stderr[-2000:]
    assert "1 worker(s) of this route run at-least-once (members of group 'mirrorflow-mixed' on 'primary')" \
        in refused.stderr and "Traceback" not in refused.stderr
