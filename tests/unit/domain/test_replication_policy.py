"""Target names of replicated topics, and loop prevention by name."""

from __future__ import annotations

import pytest

from replicator.domain.replication_policy import (
    IdentityPolicy,
    MappingPolicy,
    PrefixPolicy,
    ReplicationPolicy,
    policy_for,
)

CLUSTERS = frozenset({"primary", "backup", "dr"})
PREFIX = PrefixPolicy(".", CLUSTERS)

PREFIX_NAMES = [
    # topic, topic_source, upstream_topic, original_topic
    ("orders", None, None, "orders"),
    ("primary.orders", "primary", "orders", "orders"),
    ("payments.eu", None, None, "payments.eu"),  # local: "payments" is no cluster
    ("primary.payments.eu", "primary", "payments.eu", "payments.eu"),
    ("backup.primary.orders", "backup", "primary.orders", "orders"),
    ("dr.backup.primary.orders", "dr", "backup.primary.orders", "orders"),
    ("primaryx.orders", None, None, "primaryx.orders"),
    ("primary.", None, None, "primary."),  # nothing after the prefix: not a replica
    ("primary", None, None, "primary"),
]


@pytest.mark.parametrize(("topic", "source", "upstream", "original"), PREFIX_NAMES)
def test_prefix_reads_origin_from_name(
    topic: str, source: str | None, upstream: str | None, original: str
) -> None:
    assert PREFIX.topic_source(topic) == source
    assert PREFIX.upstream_topic(topic) == upstream
    assert PREFIX.original_topic(topic) == original
    assert PREFIX.is_remote(topic) is (source is not None)


PREFIX_CYCLES = [
    # topic, target cluster, cycle?
    ("orders", "backup", False),
    ("primary.orders", "primary", True),  # straight back
    ("primary.orders", "dr", False),
    ("backup.primary.orders", "primary", True),  # two hops back
    ("backup.primary.orders", "backup", True),
    ("backup.primary.orders", "dr", False),
    ("payments.eu", "payments", False),
]


@pytest.mark.parametrize(("topic", "target", "expected"), PREFIX_CYCLES)
def test_prefix_is_cycle_follows_every_hop(topic: str, target: str, expected: bool) -> None:
    assert PREFIX.is_cycle(topic, target) is expected


@pytest.mark.parametrize(
    ("separator", "source", "topic", "expected"),
    [
        (".", "primary", "orders", "primary.orders"),
        (".", "backup", "primary.orders", "backup.primary.orders"),
        ("_", "primary", "orders", "primary_orders"),
        ("--", "primary", "a.b", "primary--a.b"),
    ],
)
def test_prefix_format_round_trips(separator: str, source: str, topic: str, expected: str) -> None:
    policy = PrefixPolicy(separator, CLUSTERS)
    remote = policy.format_remote_topic(source, topic)
    assert remote == expected
    assert (policy.topic_source(remote), policy.upstream_topic(remote)) == (source, topic)


def test_prefix_cluster_names_may_hold_the_separator() -> None:
    policy = PrefixPolicy(".", frozenset({"us.east", "eu"}))
    assert policy.topic_source("us.east.orders") == "us.east"
    assert policy.original_topic("eu.us.east.orders") == "orders"
    assert policy.topic_source("us.orders") is None


@pytest.mark.parametrize(
    ("separator", "clusters", "message"),
    [
        ("", CLUSTERS, "separator"),
        (".", frozenset({"us", "us.east"}), "ambiguous"),
    ],
)
def test_prefix_rejects_unreadable_names(
    separator: str, clusters: frozenset[str], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        PrefixPolicy(separator, clusters)


def test_prefix_refuses_to_name_a_replica_of_an_unknown_cluster() -> None:
    with pytest.raises(ValueError, match="unknown source cluster 'elsewhere'"):
        PREFIX.format_remote_topic("elsewhere", "orders")


@pytest.mark.parametrize("topic", ["orders", "primary.orders", "backup.primary.orders"])
def test_identity_keeps_names_and_sees_no_origin(topic: str) -> None:
    policy = IdentityPolicy()
    assert policy.format_remote_topic("primary", topic) == topic
    assert policy.topic_source(topic) is None
    assert policy.upstream_topic(topic) is None
    assert policy.original_topic(topic) == topic
    assert policy.is_cycle(topic, "primary") is False
    assert policy.is_remote(topic) is False


@pytest.mark.parametrize(
    ("topic", "expected"),
    [("orders", "orders-replica"), ("payments", "pay"), ("other", "other")],
)
def test_mapping_renames_listed_topics_only(topic: str, expected: str) -> None:
    policy = MappingPolicy({"orders": "orders-replica", "payments": "pay"})
    assert policy.format_remote_topic("primary", topic) == expected
    assert policy.topic_source(expected) is None
    assert policy.is_cycle(expected, "primary") is False


@pytest.mark.parametrize(
    ("mapping", "message"),
    [
        ({"a": "x", "b": "x"}, "several topics map to x"),
        ({"a": ""}, "not topic: topic"),
        ({"mapping": {"a": "b"}}, "not topic: topic"),  # the config's wrapper, not unwrapped
    ],
)
def test_mapping_rejects_bad_mappings(mapping: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        MappingPolicy(mapping)  # type: ignore[arg-type]


def test_policies_are_hashable_values() -> None:
    assert MappingPolicy({"a": "x", "b": "y"}) == MappingPolicy({"b": "y", "a": "x"})
    assert MappingPolicy({"a": "x"}) != MappingPolicy({"a": "y"})
    policies = {
        PrefixPolicy(".", CLUSTERS),
        PrefixPolicy(".", CLUSTERS),
        IdentityPolicy(),
        IdentityPolicy(),
        MappingPolicy({"a": "x"}),
        MappingPolicy({"a": "x"}),
    }
    assert len(policies) == 3


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        ("prefix", PrefixPolicy("_", CLUSTERS)),
        ("identity", IdentityPolicy()),
        ({"a": "b"}, MappingPolicy({"a": "b"})),
    ],
)
def test_policy_for_builds_the_named_policy(
    kind: str | dict[str, str], expected: ReplicationPolicy
) -> None:
    assert policy_for(kind, "_", ["primary", "backup", "dr"]) == expected


@pytest.mark.parametrize("kind", ["Prefix", "mirror", "", 42, None])
def test_policy_for_rejects_unknown_kinds(kind: object) -> None:
    with pytest.raises(ValueError, match="unknown replication policy"):
        policy_for(kind, ".", CLUSTERS)  # type: ignore[arg-type]
