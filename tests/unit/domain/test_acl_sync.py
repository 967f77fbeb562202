"""ACL sync on plain data: topic ACLs follow the replicas, WRITE is not granted, groups are copied."""

from __future__ import annotations

import pytest

from replicator.domain.acl_spec import AclSpec
from replicator.domain.acl_sync import plan_acls, target_acls
from replicator.domain.replication_policy import policy_for
from replicator.domain.sync_plan import CreateAcl

PREFIX = policy_for("prefix", ".", ["primary", "backup"])


def prefixed(topic: str) -> str:
    return PREFIX.format_remote_topic("primary", topic)


def acl(name: str, operation: str = "READ", *, kind: str = "TOPIC", pattern: str = "LITERAL",
        principal: str = "User:alice", permission: str = "ALLOW", host: str = "*") -> AclSpec:
    return AclSpec(kind, name, pattern, principal, host, operation, permission)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        # a literal topic ACL moves to the replica's name
        (acl("orders"), {acl("primary.orders")}),
        (acl("orders", "DESCRIBE"), {acl("primary.orders", "DESCRIBE")}),
        (acl("orders", "DESCRIBE_CONFIGS", host="10.0.0.1"),
         {acl("primary.orders", "DESCRIBE_CONFIGS", host="10.0.0.1")}),
        # replicas are written by the replicator only: ALLOW WRITE is dropped, ALLOW ALL becomes READ
        (acl("orders", "WRITE"), set()),
        (acl("orders", "ALL"), {acl("primary.orders", "READ")}),
        # DENY entries restrict: copied as they are
        (acl("orders", "WRITE", permission="DENY"), {acl("primary.orders", "WRITE", permission="DENY")}),
        (acl("orders", "ALL", permission="DENY"), {acl("primary.orders", "ALL", permission="DENY")}),
        # a prefix or * becomes literal ACLs on the replicas it covers, and nothing wider
        (acl("pay", pattern="PREFIXED"), {acl("primary.payments.eu"), acl("primary.payments.us")}),
        (acl("*"), {acl("primary.orders"), acl("primary.payments.eu"), acl("primary.payments.us")}),
        (acl("nomatch", pattern="PREFIXED"), set()),
        # topics the route does not replicate get nothing
        (acl("audit"), set()),
        # group ACLs are copied as they are, whatever their pattern
        (acl("app", kind="GROUP"), {acl("app", kind="GROUP")}),
        (acl("app-", kind="GROUP", pattern="PREFIXED"), {acl("app-", kind="GROUP", pattern="PREFIXED")}),
        # other resources are not a route's business
        (acl("kafka-cluster", "ALTER", kind="CLUSTER"), set()),
        (acl("tx", "WRITE", kind="TRANSACTIONAL_ID"), set()),
    ],
)
def test_target_acls(source: AclSpec, expected: set[AclSpec]) -> None:
    wanted = target_acls([source], ["orders", "payments.eu", "payments.us"], prefixed)
    assert set(wanted) == expected
    assert all(origin == source for origin in wanted.values())


def test_grant_write_copies_write_and_all_as_they_are() -> None:
    wanted = target_acls([acl("orders", "WRITE"), acl("orders", "ALL")], ["orders"], prefixed, grant_write=True)
    assert set(wanted) == {acl("primary.orders", "WRITE"), acl("primary.orders", "ALL")}


def test_principals_are_mapped_on_topics_and_groups() -> None:
    principals = {"User:alice": "User:alice-dr"}
    wanted = target_acls([acl("orders"), acl("app", kind="GROUP"), acl("orders", principal="User:bob")],
                         ["orders"], prefixed, principals)
    assert set(wanted) == {acl("primary.orders", principal="User:alice-dr"),
                           acl("app", kind="GROUP", principal="User:alice-dr"),
                           acl("primary.orders", principal="User:bob")}


def test_identity_policy_keeps_names() -> None:
    identity = policy_for("identity", ".", [])
    wanted = target_acls([acl("orders")], ["orders"], lambda t: identity.format_remote_topic("primary", t))
    assert set(wanted) == {acl("orders")}


def test_plan_creates_only_what_the_target_lacks_and_never_deletes() -> None:
    source = [acl("orders"), acl("orders", "DESCRIBE")]
    existing = [acl("primary.orders"), acl("primary.other", "ALTER")]
    assert plan_acls(source, existing, ["orders"], prefixed) == [
        CreateAcl(acl("primary.orders", "DESCRIBE"), acl("orders", "DESCRIBE"))
    ]
    everything = [acl("primary.orders"), acl("primary.orders", "DESCRIBE")]
    assert plan_acls(source, everything, ["orders"], prefixed) == []


def test_two_source_acls_granting_the_same_replica_acl_plan_it_once() -> None:
    actions = plan_acls([acl("orders"), acl("ord", pattern="PREFIXED")], [], ["orders"], prefixed)
    assert [a.acl for a in actions] == [acl("primary.orders")]


def test_detail_names_the_source_acl_when_it_was_mapped() -> None:
    (action,) = plan_acls([acl("orders", "ALL")], [], ["orders"], prefixed)
    assert action.resource == "topic primary.orders"
    assert action.detail == "ALLOW User:alice READ from * (source: topic orders: ALLOW User:alice ALL from *)"
    (group,) = plan_acls([acl("app", kind="GROUP")], [], [], prefixed)
    assert group.detail == "ALLOW User:alice READ from *"
