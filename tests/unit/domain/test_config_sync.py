"""Topic config sync on plain data: MirrorMaker 2's exclusions plus the route's, diffs old -> new."""

from __future__ import annotations

import pytest

from replicator.domain.config_sync import (
    DEFAULT_EXCLUDED_CONFIGS,
    ConfigFilter,
    diff_configs,
    plan_configs,
)
from replicator.domain.sync_plan import AlterTopicConfig, ConfigChange


@pytest.mark.parametrize(
    ("name", "extra", "copied"),
    [
        ("retention.ms", (), True),
        ("cleanup.policy", (), True),
        ("segment.bytes", (), True),
        ("min.insync.replicas", (), False),
        ("message.timestamp.type", (), False),
        ("unclean.leader.election.enable", (), False),
        ("leader.replication.throttled.replicas", (), False),
        ("follower.replication.throttled.replicas", (), False),
        ("message.timestamp.difference.max.ms", (), False),
        ("retention.bytes", ("retention\\.bytes",), False),  # a user addition, as a regex
        ("retention.bytes", ("retention.bytes",), False),  # or a plain name
        ("retention.ms", ("retention",), True),  # whole-name match: a fragment excludes nothing
        ("compression.zstd.level", ("compression\\..*",), False),
    ],
)
def test_filter(name: str, extra: tuple[str, ...], copied: bool) -> None:
    assert ConfigFilter(extra).should_replicate_config_property(name) is copied


def test_defaults_are_mirrormaker2s() -> None:
    assert len(DEFAULT_EXCLUDED_CONFIGS) == 6
    assert ConfigFilter().copyable({"min.insync.replicas": "2", "retention.ms": "5"}) == {"retention.ms": "5"}


@pytest.mark.parametrize(
    ("source", "target", "expected"),
    [
        ({}, {}, ()),
        ({"retention.ms": "100"}, {"retention.ms": "100"}, ()),
        ({"retention.ms": "100"}, {}, (ConfigChange("retention.ms", None, "100"),)),
        ({"retention.ms": "200"}, {"retention.ms": "100"}, (ConfigChange("retention.ms", "100", "200"),)),
        # the source dropped its override: the target's goes too (back to the target's default)
        ({}, {"retention.ms": "100"}, (ConfigChange("retention.ms", "100", None),)),
        # excluded properties are neither copied nor removed
        ({"min.insync.replicas": "2"}, {}, ()),
        ({}, {"min.insync.replicas": "2"}, ()),
        ({"a": "1", "c": "3"}, {"b": "2", "c": "9"},
         (ConfigChange("a", None, "1"), ConfigChange("b", "2", None), ConfigChange("c", "9", "3"))),
    ],
)
def test_diff(source: dict[str, str], target: dict[str, str], expected: tuple[ConfigChange, ...]) -> None:
    assert diff_configs(source, target, ConfigFilter()) == expected


def test_plan_configs_per_pair_skipping_topics_not_described() -> None:
    source = {"orders": {"retention.ms": "1"}, "audit": {"retention.ms": "2"}, "new": {"retention.ms": "3"}}
    target = {"primary.orders": {"retention.ms": "1"}, "primary.audit": {}}
    pairs = [("orders", "primary.orders"), ("audit", "primary.audit"), ("new", "primary.new"),
             ("gone", "primary.gone")]
    assert plan_configs(pairs, source, target, ConfigFilter()) == [
        AlterTopicConfig("primary.audit", (ConfigChange("retention.ms", None, "2"),))
    ]


def test_change_reads_old_to_new() -> None:
    action = AlterTopicConfig("t", (ConfigChange("a", None, "1"), ConfigChange("b", "2", None)))
    assert action.detail == "a: (unset) -> 1; b: 2 -> (unset)"
