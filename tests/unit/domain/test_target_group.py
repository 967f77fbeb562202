"""When a checkpoint is committed into the target's group: never into an active group, never backwards."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from replicator.domain.checkpoint import Checkpoint, CheckpointStatus
from replicator.domain.target_group import (
    TargetGroupState,
    TargetOffset,
    TargetOutcome,
    offsets_to_commit,
    plan_target_group,
)

EXACT = CheckpointStatus.EXACT


def cp(partition: int, target: int | None, status: CheckpointStatus = EXACT) -> Checkpoint:
    return Checkpoint("app", "orders", partition, 100, "primary.orders", target,
                      CheckpointStatus.UNKNOWN if target is None else status)


CASES = [
    # name, target offset, members, current committed on the target, outcome
    ("new group", 5, 0, None, TargetOutcome.PLANNED),
    ("target behind", 5, 0, 3, TargetOutcome.PLANNED),
    ("already there", 5, 0, 5, TargetOutcome.UP_TO_DATE),
    ("target ahead: never backwards", 5, 0, 9, TargetOutcome.TARGET_AHEAD),
    ("active members", 5, 2, 3, TargetOutcome.ACTIVE_MEMBERS),
    ("active members, no offset yet", 5, 1, None, TargetOutcome.ACTIVE_MEMBERS),
    ("untranslated", None, 0, None, TargetOutcome.UNTRANSLATED),
    ("untranslated in an active group", None, 3, None, TargetOutcome.UNTRANSLATED),
]


@pytest.mark.parametrize(("target", "members", "current", "outcome"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_outcome(target: int | None, members: int, current: int | None, outcome: TargetOutcome) -> None:
    committed = {} if current is None else {("primary.orders", 0): current}
    [entry] = plan_target_group([cp(0, target)], TargetGroupState("app", members, committed))
    assert (entry.outcome, entry.current) == (outcome, current)


def test_behind_and_before_first_sync_are_written_too() -> None:
    plan = plan_target_group([cp(0, 7, CheckpointStatus.BEHIND), cp(1, 0, CheckpointStatus.BEFORE_FIRST_SYNC)],
                             TargetGroupState("app", 0))
    assert offsets_to_commit(plan) == {("primary.orders", 0): 7, ("primary.orders", 1): 0}


def test_offsets_to_commit_only_the_planned_ones() -> None:
    plan = plan_target_group([cp(0, 5), cp(1, 5), cp(2, None)],
                             TargetGroupState("app", 0, {("primary.orders", 1): 8}))
    assert offsets_to_commit(plan) == {("primary.orders", 0): 5}


def test_another_groups_checkpoint_is_refused() -> None:
    with pytest.raises(ValueError, match="checkpoint of group 'app' planned for group 'other'"):
        plan_target_group([cp(0, 5)], TargetGroupState("other", 0))


@pytest.mark.parametrize(
    ("entry", "words"),
    [
        (TargetOffset(cp(0, 5), TargetOutcome.PLANNED), "to commit 5"),
        (TargetOffset(cp(0, 5), TargetOutcome.WRITTEN, 3), "committed 5"),
        (TargetOffset(cp(0, 5), TargetOutcome.FAILED, None, "UNKNOWN_MEMBER_ID: x"), "failed: UNKNOWN_MEMBER_ID: x"),
        (TargetOffset(cp(0, 5), TargetOutcome.TARGET_AHEAD, 9), "kept: target group ahead at 9"),
        (TargetOffset(cp(0, 5), TargetOutcome.ACTIVE_MEMBERS), "kept: group has active members on the target"),
    ],
)
def test_describe(entry: TargetOffset, words: str) -> None:
    assert entry.describe() == words


@given(st.lists(st.tuples(st.none() | st.integers(0, 50), st.none() | st.integers(0, 50)), min_size=1, max_size=8),
       st.integers(0, 3))
def test_never_into_an_active_group_never_backwards(pairs: list[tuple[int | None, int | None]],
                                                    members: int) -> None:
    checkpoints = [cp(n, target) for n, (target, _) in enumerate(pairs)]
    committed = {("primary.orders", n): current for n, (_, current) in enumerate(pairs) if current is not None}
    commits = offsets_to_commit(plan_target_group(checkpoints, TargetGroupState("app", members, committed)))
    if members:
        assert commits == {}
    for (topic, partition), offset in commits.items():
        assert topic == "primary.orders" and offset == pairs[partition][0]
        assert committed.get((topic, partition), -1) < offset
    assert len(commits) == sum(t is not None and (c is None or c < t) for t, c in pairs) * (members == 0)
