"""`mirrorflow sync` and the sync functions the DAGs call, on a real pair of clusters with the authorizer on.

One pair for this module (the session's pair has no authorizer); every test works on
its own topics (a route per test whose pattern matches only them) and its own state DB.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewPartitions,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

from replicator.cli.main import main
from replicator.kafka.admin import admin_client
from replicator.runbooks.sync.read import ALL_ACLS
from replicator.runbooks.sync.run import SyncFailed, discover_topics, sync_metadata, sync_route
from replicator.state import repository
from replicator.state.store import StateStore
from tests.kafka_io import wait_until
from tests.records import write_config
from tests.support import free_port, start_pair

pytestmark = pytest.mark.kafka

ROUTE = "primary-to-backup"
DYNAMIC_TOPIC_CONFIG = 1  # ConfigSource of a topic-level override


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """Two clusters with the StandardAuthorizer (our clients connect as the super user ANONYMOUS)."""
    home = tmp_path_factory.mktemp("secured-pair")
    started = start_pair(home, {"primary": free_port(), "backup": free_port()}, authorizer=True, heap="384m")
    try:
        yield started[0].spec.bootstrap_servers, started[1].spec.bootstrap_servers
    finally:
        for cluster in started:
            cluster.stop()


@pytest.fixture
def admins(secured: tuple[str, str]) -> tuple[AdminClient, AdminClient]:
    return admin_client(secured[0]), admin_client(secured[1])


def config_for(tmp_path: Path, secured: tuple[str, str], prefix: str, **sync: object) -> Path:
    route = {"name": ROUTE, "source": "primary", "target": "backup", "topics": [re.escape(prefix) + r"\..*"],
             "sync": sync}
    return write_config(tmp_path / "mirrorflow.yaml", secured[0], secured[1], [route])


def create(admin: AdminClient, topic: str, partitions: int, **configs: str) -> None:
    for future in admin.create_topics([NewTopic(topic, partitions, -1, config=configs)]).values():
        future.result(timeout=15)


def alter(admin: AdminClient, topic: str, **changes: str | None) -> None:
    entries = [ConfigEntry(k.replace("_", "."), v, incremental_operation=AlterConfigOpType.SET if v is not None
                           else AlterConfigOpType.DELETE) for k, v in changes.items()]
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=entries)
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(timeout=15)


def overrides(admin: AdminClient, topic: str) -> dict[str, str]:
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    entries = admin.describe_configs([resource])[resource].result(timeout=15)
    return {k: e.value for k, e in entries.items() if int(getattr(e.source, "value", e.source)) == DYNAMIC_TOPIC_CONFIG}


def partitions(admin: AdminClient, topic: str) -> int | None:
    meta = admin.list_topics(topic, timeout=10).topics.get(topic)
    return len(meta.partitions) if meta is not None and meta.error is None else None


def acls_on(admin: AdminClient, name: str) -> set[tuple[str, str, str, str, str]]:
    listed = admin.describe_acls(ALL_ACLS).result(timeout=15)
    return {(b.restype.name, b.resource_pattern_type.name, b.principal, b.operation.name, b.permission_type.name)
            for b in listed if b.name == name}


def grant(admin: AdminClient, *bindings: AclBinding) -> None:
    for future in admin.create_acls(list(bindings)).values():
        future.result(timeout=15)
    wanted = set(bindings)
    wait_until(lambda: wanted <= set(admin.describe_acls(ALL_ACLS).result(timeout=15)), 15, "source ACLs listed")


def kinds(summary: dict[str, object]) -> list[tuple[str, str]]:
    return [(c["kind"], c["resource"]) for c in summary["changes"]]  # type: ignore[attr-defined, index]


def test_new_topic_appears_with_partitions_and_copyable_configs(tmp_path: Path, secured: tuple[str, str],
                                                                admins: tuple[AdminClient, AdminClient],
                                                                unique_name: str) -> None:
    source, target = admins
    config = config_for(tmp_path, secured, unique_name, exclude_configs=[r"segment\.ms"])
    create(source, f"{unique_name}.orders", 3, **{"retention.ms": "3600000", "cleanup.policy": "compact",
                                                   "max.message.bytes": "200000", "segment.ms": "7200000",
                                                   "min.insync.replicas": "1"})
    summary = sync_route(config, ROUTE)
    replica = f"primary.{unique_name}.orders"
    assert summary["status"] == "ok" and kinds(summary) == [("create topic", f"topic {replica}")]
    assert partitions(target, replica) == 3
    # copied: the overrides; not copied: MM2's default exclusion and the route's own
    assert overrides(target, replica) == {"retention.ms": "3600000", "cleanup.policy": "compact",
                                          "max.message.bytes": "200000"}
    assert sync_route(config, ROUTE)["changes"] == []  # a second run plans nothing
    with StateStore(f"sqlite:///{tmp_path / 'state.db'}") as store:
        with store.session() as session:
            runs = repository.sync_runs(session, ROUTE)
            topics = repository.route_topics(session, ROUTE)
    assert [len(r.changes) for r in runs] == [0, 1] and runs[1].changes[0].outcome == "applied"
    assert [(t.topic, t.added_by) for t in topics] == [(f"{unique_name}.orders", "discovery")]


def test_config_change_and_partition_increase_follow(tmp_path: Path, secured: tuple[str, str],
                                                     admins: tuple[AdminClient, AdminClient],
                                                     unique_name: str) -> None:
    source, target = admins
    config = config_for(tmp_path, secured, unique_name)
    topic, replica = f"{unique_name}.events", f"primary.{unique_name}.events"
    create(source, topic, 2, **{"retention.ms": "1000000", "retention.bytes": "50000000"})
    sync_route(config, ROUTE)
    for future in source.create_partitions([NewPartitions(topic, 4)]).values():
        future.result(timeout=15)
    alter(source, topic, retention_ms="2000000", segment_ms="3600000", retention_bytes=None)
    wait_until(lambda: partitions(source, topic) == 4, 15, "source partitions listed")

    discovered = discover_topics(config, ROUTE)  # the DAGs' discovery step: topics only
    assert [(c["kind"], c["detail"]) for c in discovered["changes"]] == [("add partitions", "partitions: 2 -> 4")]
    assert partitions(target, replica) == 4
    synced = sync_metadata(config, ROUTE)  # the metadata step: the config diff, old -> new
    assert [c["detail"] for c in synced["changes"]] == [
        "retention.bytes: 50000000 -> (unset); retention.ms: 1000000 -> 2000000; segment.ms: (unset) -> 3600000"
    ]
    assert overrides(target, replica) == {"retention.ms": "2000000", "segment.ms": "3600000"}
    assert sync_route(config, ROUTE)["changes"] == []


def test_acls_follow_mapped_without_write(tmp_path: Path, secured: tuple[str, str],
                                          admins: tuple[AdminClient, AdminClient], unique_name: str) -> None:
    source, target = admins
    config = config_for(tmp_path, secured, unique_name, principals={"User:alice": "User:alice-dr"})
    topic, replica, group = f"{unique_name}.orders", f"primary.{unique_name}.orders", f"{unique_name}-app"
    create(source, topic, 1)

    def binding(kind: ResourceType, name: str, principal: str, operation: AclOperation,
                pattern: ResourcePatternType = ResourcePatternType.LITERAL) -> AclBinding:
        return AclBinding(kind, name, pattern, principal, "*", operation, AclPermissionType.ALLOW)

    grant(source,
          binding(ResourceType.TOPIC, topic, "User:alice", AclOperation.READ),
          binding(ResourceType.TOPIC, topic, "User:bob", AclOperation.ALL),
          binding(ResourceType.TOPIC, topic, "User:carol", AclOperation.WRITE),
          binding(ResourceType.TOPIC, unique_name, "User:dave", AclOperation.DESCRIBE, ResourcePatternType.PREFIXED),
          binding(ResourceType.GROUP, group, "User:alice", AclOperation.READ))
    summary = sync_route(config, ROUTE)
    assert summary["status"] == "ok"
    assert acls_on(target, replica) == {
        ("TOPIC", "LITERAL", "User:alice-dr", "READ", "ALLOW"),  # principal mapped
        ("TOPIC", "LITERAL", "User:bob", "READ", "ALLOW"),  # ALL downgraded to READ
        ("TOPIC", "LITERAL", "User:dave", "DESCRIBE", "ALLOW"),  # a prefix, made literal on the replica
    }  # and carol's WRITE is not granted
    assert acls_on(target, group) == {("GROUP", "LITERAL", "User:alice-dr", "READ", "ALLOW")}
    assert acls_on(target, unique_name) == set()  # the prefix itself is not copied
    assert sync_route(config, ROUTE)["changes"] == []


def test_failing_topic_is_reported_and_the_others_still_sync(tmp_path: Path, secured: tuple[str, str],
                                                             admins: tuple[AdminClient, AdminClient],
                                                             unique_name: str,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    source, target = admins
    # max.compaction.lag.ms is the target's business here: never copied, never touched
    config = config_for(tmp_path, secured, unique_name, exclude_configs=[r"max\.compaction\.lag\.ms"])
    good, bad = f"{unique_name}.good", f"{unique_name}.bad"
    create(source, good, 1)
    create(source, bad, 1)
    sync_route(config, ROUTE)
    alter(target, f"primary.{bad}", max_compaction_lag_ms="1000")
    # valid on the source; on the target it would exceed that topic's max.compaction.lag.ms
    for topic in (good, bad):
        alter(source, topic, min_compaction_lag_ms="5000", retention_ms="7200000")

    assert main(["sync", "--config", str(config)]) == 1
    err = capsys.readouterr().err
    assert f"alter configs topic primary.{bad}: INVALID_CONFIG" in err and "min.compaction.lag.ms" in err
    assert f"topic primary.{good}" not in err
    assert overrides(target, f"primary.{good}") == {"min.compaction.lag.ms": "5000", "retention.ms": "7200000"}
    assert overrides(target, f"primary.{bad}") == {"max.compaction.lag.ms": "1000"}

    with pytest.raises(SyncFailed) as caught:  # what a DAG task sees: the run fails, naming topic and reason
        sync_metadata(config, ROUTE)
    assert f"primary.{bad}" in str(caught.value) and "INVALID_CONFIG" in str(caught.value)
    assert [c["outcome"] for c in caught.value.summary["changes"]] == ["failed"]


def test_dry_run_changes_nothing(tmp_path: Path, secured: tuple[str, str], admins: tuple[AdminClient, AdminClient],
                                 unique_name: str, capsys: pytest.CaptureFixture[str]) -> None:
    source, target = admins
    config = config_for(tmp_path, secured, unique_name)
    topic, replica = f"{unique_name}.orders", f"primary.{unique_name}.orders"
    create(source, topic, 2, **{"retention.ms": "3600000"})

    assert main(["sync", "--config", str(config), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert f"route {ROUTE}: primary -> backup (dry run)" in out
    assert re.search(rf"create topic +topic {re.escape(replica)} +from {re.escape(topic)}, 2 partitions, "
                     r"retention.ms=3600000", out)
    assert partitions(target, replica) is None
    with StateStore(f"sqlite:///{tmp_path / 'state.db'}") as store:
        with store.session() as session:
            assert repository.sync_runs(session, ROUTE) == []

    assert main(["sync", "--config", str(config), "--json"]) == 0
    (summary,) = json.loads(capsys.readouterr().out)
    assert summary["status"] == "ok" and summary["counts"]["applied"] == 1
    assert main(["sync", "--config", str(config), "--dry-run"]) == 0
    assert "nothing to do" in capsys.readouterr().out


def test_replicas_are_deleted_only_when_the_route_opts_in(tmp_path: Path, secured: tuple[str, str],
                                                          admins: tuple[AdminClient, AdminClient],
                                                          unique_name: str) -> None:
    source, target = admins
    topic, replica = f"{unique_name}.old", f"primary.{unique_name}.old"
    keep = config_for(tmp_path, secured, unique_name)
    create(source, topic, 1)
    sync_route(keep, ROUTE)
    for future in source.delete_topics([topic]).values():
        future.result(timeout=15)
    wait_until(lambda: partitions(source, topic) is None, 15, "source topic gone")
    assert sync_route(keep, ROUTE)["changes"] == []
    assert partitions(target, replica) == 1

    delete = config_for(tmp_path, secured, unique_name, delete_topics=True)  # same state DB
    assert kinds(sync_route(delete, ROUTE)) == [("delete topic", f"topic {replica}")]
    assert partitions(target, replica) is None
    assert sync_route(delete, ROUTE)["changes"] == []


@pytest.mark.airflow
def test_metadata_sync_dag_maps_an_acl(airflow_db: None, tmp_path: Path, secured: tuple[str, str],
                                       admins: tuple[AdminClient, AdminClient], unique_name: str,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The DAGs against the authorizer pair: discovery creates the replica, the metadata
    sync maps the source's ACL onto it (READ kept, WRITE not granted), a second run plans nothing."""
    from airflow.dag_processing.dagbag import DagBag

    source, target = admins
    monkeypatch.setenv("MIRRORFLOW_CONFIG", str(config_for(tmp_path, secured, unique_name)))
    topic, replica = f"{unique_name}.payments", f"primary.{unique_name}.payments"
    create(source, topic, 2)
    grant(source, *(AclBinding(ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, "User:erin", "*", op,
                               AclPermissionType.ALLOW) for op in (AclOperation.READ, AclOperation.WRITE)))
    bag = DagBag(dag_folder=str(Path(__file__).resolve().parents[3] / "dags"))
    assert bag.get_dag("mirrorflow_topic_discovery").test().state == "success"
    assert partitions(target, replica) == 2
    run = bag.get_dag("mirrorflow_metadata_sync").test()
    assert run.state == "success"
    assert acls_on(target, replica) == {("TOPIC", "LITERAL", "User:erin", "READ", "ALLOW")}
    again = bag.get_dag("mirrorflow_metadata_sync").test()
    applied = next(ti for ti in again.get_task_instances() if ti.task_id == "apply")
    assert applied.xcom_pull(task_ids="apply", map_indexes=0)["applied"] is False
