"""The write fence on plain data: who it denies, what it refuses to fence, what counts as a write past it."""

from __future__ import annotations

import datetime as dt

from replicator.domain.acl_spec import AclSpec
from replicator.domain.fence import Bypass, FenceRecord, bypassed, fence_acl, moved, plan_fence


def acl(name: str, operation: str = "WRITE", principal: str = "User:app", pattern: str = "LITERAL",
        permission: str = "ALLOW") -> AclSpec:
    return AclSpec("TOPIC", name, pattern, principal, "*", operation, permission)


SOURCE = [acl("orders"), acl("orders", "READ", "User:reader"), acl("ord", "ALL", "User:etl", "PREFIXED"),
          acl("orders", principal="User:admin"), acl("payments", "READ", "User:reader")]


def test_with_no_principal_exempt_one_deny_for_everyone_per_topic() -> None:
    plan = plan_fence("primary", ["orders", "payments"], SOURCE, exempt=())
    assert plan.acls == (fence_acl("orders", "User:*"), fence_acl("payments", "User:*"))
    assert plan.acls[0] == AclSpec("TOPIC", "orders", "LITERAL", "User:*", "*", "WRITE", "DENY")
    assert not plan.problems and plan.describe() == "DENY WRITE to User:* on orders, payments"


def test_with_exempt_principals_each_other_writer_is_denied_by_name_prefixed_and_all_included() -> None:
    plan = plan_fence("primary", ["orders", "payments"], SOURCE, exempt=["User:admin"])
    # User:reader may only read: nothing to deny; payments has no writer but super users.
    assert set(plan.acls) == {fence_acl("orders", "User:app"), fence_acl("orders", "User:etl")}
    assert not plan.problems and plan.unguarded == ()


def test_a_deny_already_there_is_not_added_again_so_lifting_never_takes_it() -> None:
    plan = plan_fence("primary", ["orders"], [*SOURCE, fence_acl("orders", "User:app")], exempt=["User:admin"])
    assert plan.acls == (fence_acl("orders", "User:etl"),)


def test_a_topic_everyone_may_write_cannot_spare_the_exempt_refused_naming_it() -> None:
    acls = [acl("*", principal="User:*"), acl("orders")]
    plan = plan_fence("primary", ["orders"], acls, exempt=["User:admin"])
    assert plan.problems and "topic 'orders'" in plan.problems[0] and "ALLOW User:* WRITE" in plan.problems[0]
    assert "User:admin" in plan.problems[0]
    assert plan_fence("primary", ["orders"], acls, exempt=()).acls == (fence_acl("orders", "User:*"),)


def test_a_topic_without_acls_is_left_alone_unless_the_broker_opens_such_topics_to_everyone() -> None:
    closed = plan_fence("primary", ["loose"], SOURCE, exempt=())
    assert closed.acls == () and closed.unguarded == ("loose",) and not closed.problems
    opened = plan_fence("primary", ["loose"], SOURCE, exempt=(), everyone_if_no_acl=True)
    assert opened.acls == () and "allow.everyone.if.no.acl.found" in opened.problems[0]
    assert "cluster 'primary'" in opened.problems[0] and "'loose'" in opened.problems[0]


def test_only_records_read_in_a_moved_range_count_as_written_past_the_fence() -> None:
    before = {("orders", 0): 10, ("orders", 1): 5, ("orders", 2): 7}
    after = {("orders", 0): 22, ("orders", 1): 6, ("orders", 2): 7}
    ranges = moved(before, after)
    assert ranges == {("orders", 0): (10, 22), ("orders", 1): (5, 6)}
    # orders-1 moved by an abort marker only: no record was read there.
    found = bypassed(ranges, {("orders", 0): 11, ("orders", 1): 0})
    assert found == (Bypass("orders", 0, 11, 10, 22),)
    assert found[0].describe() == "orders-0: 11 records (offsets 10..21)"


def test_the_fence_record_goes_through_json_unchanged() -> None:
    record = FenceRecord("primary", (fence_acl("orders", "User:app"),), dt.datetime(2026, 11, 27, tzinfo=dt.UTC),
                         (Bypass("orders", 0, 3, 10, 13),), dt.datetime(2026, 11, 27, 1, tzinfo=dt.UTC))
    assert FenceRecord.from_dict(record.to_dict()) == record
