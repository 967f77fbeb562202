"""The whole plan of a route on plain data: steps, order, table, "done" checks, run summaries."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from replicator.domain.acl_spec import AclSpec
from replicator.domain.cluster_view import ClusterView
from replicator.domain.metadata_sync import (
    DISCOVERY_STEPS,
    METADATA_STEPS,
    SyncRules,
    SyncScope,
    plan_sync,
)
from replicator.domain.sync_plan import (
    AddPartitions,
    AlterTopicConfig,
    ConfigChange,
    CreateAcl,
    CreateTopic,
    DeleteTopic,
    ProtectReplica,
    SyncPlan,
)
from replicator.domain.sync_run import Outcome, RunStatus, SyncChange, SyncRun

READ_ORDERS = AclSpec("TOPIC", "orders", "LITERAL", "User:alice", "*", "READ", "ALLOW")
SCOPE = SyncScope("r", {"orders": 3, "audit": 1}, lambda t: f"primary.{t}")
SOURCE = ClusterView({"orders": 3, "audit": 1}, configs={"orders": {"retention.ms": "9"}, "audit": {}},
                     acls=frozenset({READ_ORDERS}))
TARGET = ClusterView({"primary.orders": 2}, configs={"primary.orders": {}}, acls=frozenset())


def kinds(plan: SyncPlan) -> list[str]:
    return [a.kind for a in plan.actions]


def test_full_plan_in_apply_order() -> None:
    plan = plan_sync(SCOPE, SOURCE, TARGET)
    assert kinds(plan) == ["create topic", "add partitions", "alter configs", "create acl"]
    assert not plan.is_empty


@pytest.mark.parametrize(
    ("steps", "expected"),
    [(DISCOVERY_STEPS, ["create topic", "add partitions"]), (METADATA_STEPS, ["alter configs", "create acl"])],
)
def test_steps_plan_apart(steps: frozenset[str], expected: list[str]) -> None:
    assert kinds(plan_sync(SCOPE, SOURCE, TARGET, steps=steps)) == expected  # type: ignore[arg-type]


def test_acls_off_and_source_without_authorizer() -> None:
    assert "create acl" not in kinds(plan_sync(SCOPE, SOURCE, TARGET, SyncRules(acls=False)))
    no_authorizer = ClusterView(SOURCE.partitions, configs=SOURCE.configs, acls=None)
    plan = plan_sync(SCOPE, no_authorizer, TARGET)
    assert "create acl" not in kinds(plan)
    assert plan.notes == ("ACLs not synced: the source cluster has no authorizer",)


def test_acls_are_not_planned_when_either_side_could_not_be_read() -> None:
    refused = ClusterView(TARGET.partitions, configs=TARGET.configs, acl_error="CLUSTER_AUTHORIZATION_FAILED: no")
    assert "create acl" not in kinds(plan_sync(SCOPE, SOURCE, refused))


def test_target_without_authorizer_is_noted() -> None:
    plan = plan_sync(SCOPE, SOURCE, ClusterView(TARGET.partitions, configs=TARGET.configs, acls=None))
    assert "create acl" in kinds(plan)
    assert "the target cluster has no authorizer: its ACLs cannot be created" in plan.notes


def test_read_only_replicas_deny_every_writer_but_the_replicator() -> None:
    write_orders = AclSpec("TOPIC", "orders", "LITERAL", "User:app", "*", "WRITE", "ALLOW")
    source = ClusterView(SOURCE.partitions, configs=SOURCE.configs, acls=frozenset({READ_ORDERS, write_orders}))
    mirror = AclSpec("TOPIC", "primary.", "PREFIXED", "User:mirror", "*", "ALL", "ALLOW")
    target = ClusterView(TARGET.partitions, configs=TARGET.configs, acls=frozenset({mirror}))
    # grant_write copies ALLOW WRITE for the application onto its replica: read_only denies it until a failover.
    plan = plan_sync(SCOPE, source, target, SyncRules(grant_write=True, read_only=True, writers=("User:mirror",)))
    protect = [a for a in plan.actions if isinstance(a, ProtectReplica)]
    assert {(a.acl.name, a.acl.principal, a.acl.operation, a.acl.permission) for a in protect} == {
        ("primary.orders", "User:app", "WRITE", "DENY")}
    assert protect[0].kind == "protect replica" and "sync.read_only" in protect[0].detail
    # No replicator named (it is a super user): one DENY for everyone per replica with ACLs.
    everyone = plan_sync(SCOPE, source, target, SyncRules(read_only=True))
    assert {(a.acl.name, a.acl.principal) for a in everyone.actions if isinstance(a, ProtectReplica)} == {
        ("primary.orders", "User:*"), ("primary.audit", "User:*")}
    bare = plan_sync(SCOPE, source, ClusterView(TARGET.partitions, configs=TARGET.configs, acls=None),
                     SyncRules(read_only=True))
    assert not [a for a in bare.actions if isinstance(a, ProtectReplica)]
    assert "read-only replicas: the target cluster has no authorizer, nothing denies writes to them" in bare.notes
    unguarded = plan_sync(SCOPE, SOURCE, TARGET, SyncRules(read_only=True))  # replicas without any ACL
    assert any("read-only replicas:" in n and "'primary.audit' has no ACL" in n for n in unguarded.notes)


def test_in_step_target_plans_nothing() -> None:
    target = ClusterView({"primary.orders": 3, "primary.audit": 1},
                         configs={"primary.orders": {"retention.ms": "9"}, "primary.audit": {}},
                         acls=frozenset({AclSpec("TOPIC", "primary.orders", "LITERAL", "User:alice", "*", "READ",
                                                 "ALLOW")}))
    plan = plan_sync(SCOPE, SOURCE, target)
    assert plan.is_empty
    assert plan.render() == "nothing to do"


def test_render_is_an_aligned_table() -> None:
    plan = SyncPlan("r", (AlterTopicConfig("t", (ConfigChange("a", "1", "2"),)), CreateTopic("primary.x", "x", 2)),
                    ("a note",))
    assert plan.render().splitlines() == [
        "action         resource         change",
        "create topic   topic primary.x  from x, 2 partitions",
        "alter configs  topic t          a: 1 -> 2",
        "note: a note",
    ]


@pytest.mark.parametrize(
    ("action", "done_on", "not_done_on"),
    [
        (CreateTopic("t", "s", 2, (("retention.ms", "5"),)),
         ClusterView({"t": 2}, configs={"t": {"retention.ms": "5"}}), ClusterView({"t": 2}, configs={"t": {}})),
        (AddPartitions("t", 1, 4), ClusterView({"t": 4}), ClusterView({"t": 3})),
        (AlterTopicConfig("t", (ConfigChange("a", "1", None), ConfigChange("b", None, "2"))),
         ClusterView({"t": 1}, configs={"t": {"b": "2"}}), ClusterView({"t": 1}, configs={"t": {"a": "1", "b": "2"}})),
        (CreateAcl(READ_ORDERS, READ_ORDERS), ClusterView({}, acls=frozenset({READ_ORDERS})), ClusterView({})),
        (DeleteTopic("t", "s"), ClusterView({}), ClusterView({}, names=frozenset({"t"}))),
    ],
)
def test_is_done(action: object, done_on: ClusterView, not_done_on: ClusterView) -> None:
    assert action.is_done(done_on)  # type: ignore[attr-defined]
    assert not action.is_done(not_done_on)  # type: ignore[attr-defined]


def test_run_status_and_json_summary() -> None:
    at = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    applied = SyncChange("create topic", "topic a", "from a, 1 partitions", Outcome.APPLIED)
    failed = SyncChange("alter configs", "topic b", "x: 1 -> 2", Outcome.FAILED, "INVALID_CONFIG: bad")
    assert SyncRun("r", "full", at, at, (applied,)).status == RunStatus.OK
    run = SyncRun("r", "full", at, at, (applied, failed))
    assert run.status == RunStatus.FAILED
    assert run.failure_report() == "alter configs topic b: INVALID_CONFIG: bad"
    summary = json.loads(json.dumps(run.summary()))
    assert summary["status"] == "failed" and summary["counts"] == {"applied": 1, "failed": 1, "planned": 0}
    assert summary["changes"][1]["error"] == "INVALID_CONFIG: bad"
    assert SyncRun("r", "full", at, at, (), dry_run=True).status == RunStatus.DRY_RUN
