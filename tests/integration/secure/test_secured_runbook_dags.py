"""The runbook DAGs against two secured clusters: each broker has the StandardAuthorizer and a SASL_SSL listener
(SCRAM), and MirrorFlow logs in there as ``User:mirrorflow`` (a super user) with a password read from a file.

- ACLs follow over TLS (metadata-sync DAG); the checkpoint DAG, the SLA DAG and the audit DAG (``spark-submit``,
  Spark's Kafka source over SASL_SSL) run clean;
- a fenced failover (DAG) denies the applications' writes on primary over the same listener, moves the group
  exactly, and the incremental failback (DAG) brings back what was written on backup and lifts the fence;
- no password anywhere: task output, ``$AIRFLOW_HOME``, the state DB, the Spark job's spec file, or Spark's event
  log (what Spark's UI and history server show: its environment, its SQL plans with the reader's options).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import sqlite3
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaException, Producer, TopicCollection
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)

from replicator.dev.localcluster import LocalCluster, LocalClusterSpec, TlsListener
from replicator.dev.tls import LocalCA
from replicator.kafka.admin import admin_client, create_topics
from tests.checkpoint_io import consume_part, read_source, resume_on_target, wait_caught_up
from tests.kafka_io import Rec, committed, produce, wait_until
from tests.records import by_partition, make_records
from tests.support import Worker, free_port

pytestmark = [pytest.mark.airflow, pytest.mark.kafka]

DAGS = Path(__file__).resolve().parents[3] / "dags"
PASSWORDS = {"mirrorflow": "Scram-Pa55-runbooks-c41d", "app": "Scram-Pa55-app-runbooks-5e0b"}
PARTITIONS = 2
ORIGIN = ("mirrorflow.origin", b"backup")  # the reverse route stamps what was born on backup
ANY_ACL = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY,
                           AclPermissionType.ANY)


@dataclass
class Pair:
    primary: LocalCluster
    backup: LocalCluster
    ca: Path
    secure: dict[str, str]  # cluster name -> its SASL_SSL listener
    home: Path

    @property
    def p(self) -> str:
        return self.primary.spec.bootstrap_servers  # the tests' own clients: plaintext, ANONYMOUS (a super user)

    @property
    def b(self) -> str:
        return self.backup.spec.bootstrap_servers

    def login(self, cluster: str, user: str) -> dict[str, str]:
        return {"bootstrap.servers": self.secure[cluster], "security.protocol": "SASL_SSL",
                "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": user, "sasl.password": PASSWORDS[user],
                "ssl.ca.location": str(self.ca)}

    def config(self, path: Path, routes: list[dict[str, object]]) -> Path:
        """A config whose clusters are the SASL_SSL listeners, the password read from a file beside it."""
        (path.parent / "scram.password").write_text(PASSWORDS["mirrorflow"] + "\n")
        clusters = {name: {**self.login(name, "mirrorflow"), "sasl.password": "${file:scram.password}"}
                    for name in self.secure}
        path.write_text(json.dumps({"clusters": clusters, "routes": routes,
                                    "state": {"url": f"sqlite:///{path.parent / 'state.db'}"}}))
        return path


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    home = tmp_path_factory.mktemp("secured-pair")
    ca = LocalCA(home / "tls")
    broker = ca.issue("broker")
    clusters = []
    for name in ("primary", "backup"):
        port, listener = free_port(), TlsListener("SECURE", free_port(), "SASL_SSL", broker.keystore, ca.pem)
        clusters.append(LocalCluster(LocalClusterSpec(
            name, home / name, port, free_port(), heap="384m", authorizer=True,
            super_users=("User:ANONYMOUS", "User:mirrorflow"), tls_listeners=(listener,), scram_users=PASSWORDS)))
    try:
        with ThreadPoolExecutor(max_workers=2) as pool:
            list(pool.map(LocalCluster.start, clusters))
        yield Pair(clusters[0], clusters[1], ca.pem,
                   {c.spec.name: c.spec.tls_listeners[0].bootstrap_servers(c.spec.host) for c in clusters}, home)
    finally:
        for cluster in clusters:
            cluster.stop()


def _dag(dag_id: str, **conf: object) -> tuple[Any, dict[tuple[str, int], Any]]:
    from airflow.dag_processing.dagbag import DagBag

    run = DagBag(dag_folder=str(DAGS)).get_dag(dag_id).test(run_conf=conf or None)
    return run, {(ti.task_id, ti.map_index): ti for ti in run.get_task_instances()}


def _succeeds(dag_id: str, **conf: object) -> dict[tuple[str, int], Any]:
    run, tis = _dag(dag_id, **conf)
    assert run.state == "success", {key: ti.state for key, ti in tis.items()}
    return tis


def _allow(topic: str, principal: str, *operations: AclOperation) -> list[AclBinding]:
    return [AclBinding(ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, principal, "*", op,
                       AclPermissionType.ALLOW) for op in operations]


def _grant(bootstrap: str, bindings: list[AclBinding]) -> None:
    admin = admin_client(bootstrap)  # held until the futures are done
    for future in admin.create_acls(bindings).values():
        future.result(timeout=15)


def _grant_app(pair: Pair, cluster: str, topic: str, *operations: AclOperation) -> None:
    """Allow ``User:app`` ``operations`` on ``topic`` and wait until ``cluster``'s broker enforces them: the broker
    applies the ACLs after the controller answered, so a write at once can still be refused (a slow CI run was)."""
    _grant(pair.p if cluster == "primary" else pair.b, _allow(topic, "User:app", *operations))
    admin = AdminClient(pair.login(cluster, "app"))

    def allowed() -> bool:
        described = admin.describe_topics(TopicCollection([topic]), include_authorized_operations=True)
        try:
            granted = described[topic].result(timeout=15).authorized_operations or []
        except KafkaException:  # not yet allowed to describe it
            return False
        return set(operations) <= set(granted)

    wait_until(allowed, 30, f"the broker of {cluster} to let User:app {[op.name for op in operations]} {topic}")


def _acls_on(bootstrap: str, name: str) -> set[tuple[str, str, str]]:
    admin = admin_client(bootstrap)  # held until the future is done
    listed = admin.describe_acls(ANY_ACL).result(timeout=15)
    return {(b.principal, b.operation.name, b.permission_type.name) for b in listed if b.name == name}


def _holding(root: Path, *secrets: str) -> list[str]:
    """The files under ``root`` that contain any of ``secrets``."""
    return [str(path) for path in root.rglob("*") if path.is_file()
            and any(secret.encode() in path.read_bytes() for secret in secrets)]


def _write_as_app(pair: Pair, cluster: str, topic: str, records: list[Rec]) -> None:
    produce(pair.secure[cluster], topic, records, **{k: v for k, v in pair.login(cluster, "app").items()
                                                     if k != "bootstrap.servers"})


def _refused_write_as_app(pair: Pair, cluster: str, topic: str) -> str:
    """The error a producer logged in as ``app`` gets for one record to ``topic``."""
    producer = Producer({**pair.login(cluster, "app"), "acks": "all", "message.timeout.ms": "15000"})
    failures: list[str] = []
    producer.produce(topic, b"fenced?", partition=0,
                     on_delivery=lambda error, _msg: failures.append(str(error)) if error else None)
    producer.flush(30)
    return failures[0] if failures else ""


def test_acl_sync_checkpoint_sla_and_audit_dags_over_sasl_ssl_and_no_secret_in_spark_event_log(  # type: ignore[no-untyped-def]
        pair: Pair, airflow_db, task_environ, unique_name, tmp_path, monkeypatch, workers, capfd) -> None:
    topic, route, group = unique_name, f"sa-{unique_name[-8:]}", f"{unique_name}-app"
    hour_end = dt.datetime.now(dt.UTC).replace(minute=0, second=0, microsecond=0)
    first_ms = int(hour_end.timestamp() * 1000) - 1_800_000  # half an hour into the previous hour: audited
    records = [Rec(p, f"k{n}".encode(), f"v{p}-{n}".encode(), (("h", str(n).encode()),), first_ms + 1_000 * n)
               for n in range(20) for p in range(PARTITIONS)]
    create_topics(pair.p, {topic: PARTITIONS})
    _grant_app(pair, "primary", topic, AclOperation.WRITE, AclOperation.READ, AclOperation.DESCRIBE)
    _write_as_app(pair, "primary", topic, records)  # the application's own login: the ACLs let it write
    config = pair.config(tmp_path / "mirrorflow.yaml", [
        {"name": route, "source": "primary", "target": "backup", "topics": [topic],
         "checkpoints": {"groups": [group]}, "sla": {"heartbeat_age": 30, "heartbeat_interval": 0.5}}])
    monkeypatch.setenv("MIRRORFLOW_CONFIG", str(config))
    monkeypatch.delenv("MIRRORFLOW_WORK_DIR", raising=False)
    spark_conf, events = tmp_path / "spark-conf", tmp_path / "spark-events"
    spark_conf.mkdir()
    events.mkdir()
    (spark_conf / "spark-defaults.conf").write_text(f"spark.eventLog.enabled true\n"
                                                    f"spark.eventLog.dir {events.as_uri()}\n"
                                                    "spark.eventLog.compress false\n")  # to grep it
    monkeypatch.setenv("SPARK_CONF_DIR", str(spark_conf))  # spark-submit reads its defaults there

    _succeeds("mirrorflow_topic_discovery", route=route)  # the replica, made over SASL_SSL
    _succeeds("mirrorflow_metadata_sync", route=route)
    replica = f"primary.{topic}"
    assert _acls_on(pair.b, replica) == {("User:app", "READ", "ALLOW"), ("User:app", "DESCRIBE", "ALLOW")}

    workers.append(Worker(config, route, log_dir=tmp_path))
    wait_caught_up(pair.p, route, topic, read_source(pair.p, topic, PARTITIONS))
    consume_part(pair.p, group, topic, {0: 7, 1: 3})
    _succeeds("mirrorflow_offset_checkpoints", route=route)
    with sqlite3.connect(tmp_path / "state.db") as db:
        points = db.execute("select partition, source_offset, status from mf_checkpoint where route = ? and"
                            " group_id = ? order by partition", (route, group)).fetchall()
    assert points == [(0, 7, "exact"), (1, 3, "exact")]

    wait_until(lambda: _dag("mirrorflow_replication_sla", route=route)[0].state == "success", 90,
               "the SLA DAG to read fresh heartbeats over SASL_SSL")

    from airflow.dag_processing.dagbag import DagBag

    run = DagBag(dag_folder=str(DAGS)).get_dag("mirrorflow_replication_audit").test(
        logical_date=hour_end, run_conf={"route": route})
    states = {(ti.task_id, ti.map_index): ti.state for ti in run.get_task_instances()}
    assert run.state == "success", states
    with sqlite3.connect(tmp_path / "state.db") as db:
        audited = db.execute("select status, source_records, target_records, missing from mf_audit_run"
                             " where route = ?", (route,)).fetchall()
    assert audited == [("clean", len(records), len(records), 0)]

    logged = capfd.readouterr()
    secrets = tuple(PASSWORDS.values())
    logs = "".join(path.read_text() for path in events.rglob("*") if path.is_file())
    # What the UI shows is there (the environment, the plans of the audit's Kafka reads), so the check proves
    # something; Spark's plans name a Kafka source's topics, not its options.
    assert "SparkListenerEnvironmentUpdate" in logs and f"KafkaRelation(strategy=Assign[{topic}-" in logs
    assert not _holding(events, *secrets), "a password in Spark's event log (its UI)"
    assert not _holding(tmp_path / "runs", *secrets), "a password in the Spark job's spec or result files"
    assert not _holding(Path(os.environ["AIRFLOW_HOME"]), *secrets)
    assert not any(secret in logged.out + logged.err for secret in secrets)
    with sqlite3.connect(tmp_path / "state.db") as db:
        assert not any(secret in line for line in db.iterdump() for secret in secrets)


def test_fenced_failover_and_incremental_failback_dags_over_sasl_ssl(  # type: ignore[no-untyped-def]
        pair: Pair, airflow_db, unique_name, tmp_path, monkeypatch, workers) -> None:
    topic, route, group = unique_name, f"fo-{unique_name[-8:]}", f"{unique_name}-app"
    replica = f"primary.{topic}"
    create_topics(pair.p, {topic: PARTITIONS})
    _grant_app(pair, "primary", topic, AclOperation.WRITE, AclOperation.DESCRIBE)
    before = by_partition(make_records(PARTITIONS, 12, "before"), PARTITIONS)
    _write_as_app(pair, "primary", topic, [r for p in range(PARTITIONS) for r in before[p]])
    config = pair.config(tmp_path / "mirrorflow.yaml", [
        {"name": route, "source": "primary", "target": "backup", "topics": [topic],
         "checkpoints": {"groups": [group]}, "fence": {"watch": 2}}])
    monkeypatch.setenv("MIRRORFLOW_CONFIG", str(config))
    worker = Worker(config, route, log_dir=tmp_path)
    workers.append(worker)
    wait_caught_up(pair.p, route, topic, read_source(pair.p, topic, PARTITIONS))
    consume_part(pair.p, group, topic, {0: 5, 1: 9})

    tis = _succeeds("mirrorflow_failover", route=route, fence=True)
    over = tis[("finish", -1)].xcom_pull(task_ids="finish")
    assert over["status"] == "done", over
    assert [s["step"] for s in over["steps"] if s["status"] == "done"][:2] == ["check-source", "fence"], over
    wait_until(lambda: worker.process.poll() is not None, 60, "the route's worker to stop by itself")
    # The fence, raised over SASL_SSL: the application's login can no longer write on primary.
    assert "authoriz" in _refused_write_as_app(pair, "primary", topic).lower()
    assert committed(pair.b, group, replica, PARTITIONS) == {0: 5, 1: 9}  # exactly where it stood on primary

    # The applications run on backup: they write to a topic of the original name and read the replica on.
    after = by_partition(make_records(PARTITIONS, 6, "after"), PARTITIONS)
    create_topics(pair.b, {topic: PARTITIONS})
    _grant_app(pair, "backup", topic, AclOperation.WRITE, AclOperation.DESCRIBE)
    _write_as_app(pair, "backup", topic, [r for p in range(PARTITIONS) for r in after[p]])
    consume_part(pair.b, group, replica, {0: 12, 1: 12})  # on from 5 and 9, to the replica's end
    consume_part(pair.b, group, topic, {0: 2})

    tis = _succeeds("mirrorflow_failback", route=route)
    back = tis[("finish", -1)].xcom_pull(task_ids="finish")
    assert back["status"] == "done" and back["copied"] == sum(len(r) for r in after.values()), back
    stamped = {p: [Rec(r.partition, r.key, r.value, (*r.headers, ORIGIN), r.timestamp) for r in after[p]]
               for p in range(PARTITIONS)}
    on_primary = {p: [rec for _, rec in recs] for p, recs in read_source(pair.p, topic, PARTITIONS).items()}
    assert on_primary == {p: before[p] + stamped[p] for p in range(PARTITIONS)}
    resumed = resume_on_target(pair.p, group, topic, PARTITIONS)
    assert resumed == {0: stamped[0][2:], 1: stamped[1]}
    _write_as_app(pair, "primary", topic, [Rec(0, b"k", b"after the failback", (), 0)])  # the fence is lifted
    with sqlite3.connect(tmp_path / "state.db") as db:
        assert not any(secret in line for line in db.iterdump() for secret in PASSWORDS.values())
    assert not any(secret in worker.output() for secret in PASSWORDS.values())



def test_backfill_dag_copies_the_earlier_records_over_sasl_ssl(  # type: ignore[no-untyped-def]
        pair: Pair, airflow_db, task_environ, unique_name, tmp_path, monkeypatch, workers) -> None:
    """spark-submit of the backfill job, its Kafka source and our producer logging in over SASL_SSL."""
    topic, route = unique_name, f"bf-{unique_name[-8:]}"
    old, new = (by_partition(make_records(PARTITIONS, n, tag), PARTITIONS) for n, tag in ((8, "old"), (5, "new")))
    create_topics(pair.p, {topic: PARTITIONS})
    produce(pair.p, topic, [r for p in range(PARTITIONS) for r in old[p]])
    config = pair.config(tmp_path / "mirrorflow.yaml", [
        {"name": route, "source": "primary", "target": "backup", "topics": [topic], "start": "latest"}])
    monkeypatch.setenv("MIRRORFLOW_CONFIG", str(config))
    monkeypatch.delenv("MIRRORFLOW_WORK_DIR", raising=False)
    worker = Worker(config, route, log_dir=tmp_path)
    workers.append(worker)
    wait_until(lambda: all(f"{topic}[{p}]@8" in worker.output() for p in range(PARTITIONS)), 60,
               "the route to start at the end of each partition")
    produce(pair.p, topic, [r for p in range(PARTITIONS) for r in new[p]])
    wait_until(lambda: committed(pair.p, f"mirrorflow-{route}", topic, PARTITIONS) == {0: 13, 1: 13}, 90,
               "the route to copy the new records")

    tis = _succeeds("mirrorflow_backfill_topic", route=route, topic=topic, from_offset="0=0,1=0")
    assert {key[0]: ti.state for key, ti in tis.items()} == {
        "prepare": "success", "job_args": "success", "backfill_job": "success", "check": "success"}
    replica = {p: [rec for _, rec in recs] for p, recs in read_source(pair.b, f"primary.{topic}", PARTITIONS).items()}
    assert replica == {p: new[p] + old[p] for p in range(PARTITIONS)}
    assert not _holding(tmp_path / "runs", *PASSWORDS.values()), "a password in the Spark job's spec or result"
