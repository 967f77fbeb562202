"""Topic planning on plain data: create missing replicas, grow partitions, delete only on request."""

from __future__ import annotations

import pytest

from replicator.domain.cluster_view import ClusterView
from replicator.domain.config_sync import ConfigFilter
from replicator.domain.replication_policy import policy_for
from replicator.domain.sync_plan import AddPartitions, CreateTopic, DeleteTopic
from replicator.domain.topic_sync import plan_topics

PREFIX = policy_for("prefix", ".", ["primary", "backup"])


def prefixed(topic: str) -> str:
    return PREFIX.format_remote_topic("primary", topic)


def plan(selected: dict[str, int], target: dict[str, int], *, source_configs: dict[str, dict[str, str]] | None = None,
         errored: frozenset[str] = frozenset(), source_names: frozenset[str] | None = None,
         unreadable: dict[str, str] | None = None, exclude: tuple[str, ...] = (), **kwargs: object):  # type: ignore[no-untyped-def]
    source = ClusterView(selected, source_names if source_names is not None else frozenset(selected),
                         source_configs or {}, unreadable=unreadable or {})
    return plan_topics(selected, prefixed, source, ClusterView(target, errored), ConfigFilter(exclude),
                       **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("selected", "target", "expected"),
    [
        ({"orders": 3}, {}, [CreateTopic("primary.orders", "orders", 3)]),
        ({"orders": 3}, {"primary.orders": 3}, []),
        ({"orders": 6}, {"primary.orders": 3}, [AddPartitions("primary.orders", 3, 6)]),
        ({"orders": 3}, {"primary.orders": 6}, []),  # never shrunk
        ({"a": 1, "b": 2}, {"primary.a": 1, "orders": 9}, [CreateTopic("primary.b", "b", 2)]),
        ({}, {"primary.gone": 1}, []),  # nothing deleted by default
    ],
)
def test_create_and_grow(selected: dict[str, int], target: dict[str, int], expected: list[object]) -> None:
    assert plan(selected, target).actions == expected


def test_new_replica_carries_the_copyable_overrides_only() -> None:
    configs = {"orders": {"retention.ms": "1000", "min.insync.replicas": "2", "segment.bytes": "1048576",
                          "cleanup.policy": "compact"}}
    result = plan({"orders": 2}, {}, source_configs=configs, exclude=("segment\\..*",))
    assert result.actions == [
        CreateTopic("primary.orders", "orders", 2, (("cleanup.policy", "compact"), ("retention.ms", "1000")))
    ]


def test_more_target_partitions_is_a_note_not_an_action() -> None:
    result = plan({"orders": 3}, {"primary.orders": 6})
    assert result.actions == []
    assert result.notes == [
        "target topic primary.orders has 6 partitions, source orders has 3: left as is (Kafka cannot remove partitions)"
    ]


def test_target_topic_with_a_metadata_error_is_neither_created_nor_grown() -> None:
    result = plan({"orders": 3}, {}, errored=frozenset({"primary.orders"}))
    assert result.actions == []
    assert "primary.orders" in result.notes[0] and "error" in result.notes[0]


def test_source_topic_whose_configs_could_not_be_read_is_not_created_without_them() -> None:
    result = plan({"a": 1, "b": 1}, {}, unreadable={"a": "TOPIC_AUTHORIZATION_FAILED: denied"})
    assert result.actions == [CreateTopic("primary.b", "b", 1)]


@pytest.mark.parametrize(
    ("delete", "before", "source_names", "target", "expected"),
    [
        # opted in, replicated before, source gone, replica present: deleted
        (True, {"old"}, frozenset(), {"primary.old": 1}, [DeleteTopic("primary.old", "old")]),
        (False, {"old"}, frozenset(), {"primary.old": 1}, []),  # not opted in
        (True, set(), frozenset(), {"primary.old": 1}, []),  # never replicated by this route
        (True, {"old"}, frozenset({"old"}), {"primary.old": 1}, []),  # source listed (even with an error)
        (True, {"old"}, frozenset(), {}, []),  # replica already gone
    ],
)
def test_delete_only_replicas_whose_source_is_gone(delete: bool, before: set[str], source_names: frozenset[str],
                                                   target: dict[str, int], expected: list[object]) -> None:
    result = plan({}, target, source_names=source_names, delete=delete, replicated_before=before)
    assert result.actions == expected


def test_identity_and_mapping_policies_name_the_replicas() -> None:
    mapping = policy_for({"orders": "orders-dr"}, ".", [])
    source = ClusterView({"orders": 1, "audit": 1})
    result = plan_topics({"orders": 1, "audit": 1}, lambda t: mapping.format_remote_topic("primary", t), source,
                         ClusterView({}), ConfigFilter())
    assert [a.topic for a in result.actions] == ["audit", "orders-dr"]  # type: ignore[union-attr]
