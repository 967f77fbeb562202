"""Which consumer groups get checkpoints: whole-id patterns, MirrorMaker 2's exclusions plus our own."""

from __future__ import annotations

import pytest

from replicator.domain.group_filter import GroupFilter, requested_group_problems


@pytest.mark.parametrize(
    ("group", "kept"),
    [
        ("orders-app", True),
        ("console-consumer-1234", False),
        ("connect-sink", False),
        ("__internal", False),
        ("mirrorflow-primary-to-backup", False),
        ("my-mirrorflow-reader", True),  # whole-id match: only ids starting with mirrorflow-
    ],
)
def test_defaults(group: str, kept: bool) -> None:
    assert GroupFilter().should_checkpoint_group(group) is kept


def test_patterns_match_whole_ids_and_select_sorts_once() -> None:
    only = GroupFilter(("app-.*", "billing"), ("app-test-.*",))
    assert only.select(["billing-2", "app-2", "billing", "app-test-1", "app-1", "app-1"]) == ["app-1", "app-2",
                                                                                              "billing"]


def test_requested_groups_must_exist_and_pass_the_filter() -> None:
    existing = ["app", "mirrorflow-r", "other"]
    assert requested_group_problems(["app", "app"], existing, GroupFilter()) == []
    problems = requested_group_problems(["nope", "mirrorflow-r"], existing, GroupFilter())
    assert problems[0] == "no consumer group 'nope'"
    assert problems[1].startswith("group 'mirrorflow-r' is excluded by checkpoints.groups/exclude_groups")
    assert "'mirrorflow-.*'" in problems[1]
