"""Whether a checkpoint is committed into the target cluster's group of the same name.

The rules (MirrorMaker 2's, made explicit):

- a group with active members on the target is never written: its consumers own
  their positions there (they failed over already, or another application uses
  the name). The whole group is left alone and reported;
- an untranslated checkpoint (``unknown``) is never written;
- a target group is never moved backwards: when its committed offset is ahead of
  the translation, it consumed on the target since, or the source group was
  rewound; rewinding a target group is an operator's explicit act
  (``kafka-consumer-groups --reset-offsets``), not a side effect of a checkpoint;
- equal offsets are left as they are (nothing to write).

The broker is the last guard: a commit without a member id into a group that has
members is refused (``UNKNOWN_MEMBER_ID``), so a consumer joining between the
look and the commit is never overwritten either.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from replicator.domain.checkpoint import Checkpoint, Partition


class TargetOutcome(StrEnum):
    """What became of one checkpoint in the target group."""

    PLANNED = "planned"  # to be committed (or, in a dry run, would be)
    WRITTEN = "written"
    FAILED = "failed"
    UP_TO_DATE = "up-to-date"
    TARGET_AHEAD = "target-ahead"
    ACTIVE_MEMBERS = "active-members"
    UNTRANSLATED = "untranslated"


@dataclass(frozen=True, slots=True)
class TargetGroupState:
    """The target cluster's group of a name: active members and committed offsets (target partitions)."""

    group: str
    members: int
    committed: Mapping[Partition, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class TargetOffset:
    """One checkpoint and what becomes of it in the target group."""

    checkpoint: Checkpoint
    outcome: TargetOutcome
    current: int | None = None  # the target group's committed offset before, if any
    error: str | None = None

    def describe(self) -> str:
        """A few words for a table."""
        target = self.checkpoint.target_offset
        return {
            TargetOutcome.PLANNED: f"to commit {target}",
            TargetOutcome.WRITTEN: f"committed {target}",
            TargetOutcome.FAILED: f"failed: {self.error}",
            TargetOutcome.UP_TO_DATE: "already there",
            TargetOutcome.TARGET_AHEAD: f"kept: target group ahead at {self.current}",
            TargetOutcome.ACTIVE_MEMBERS: "kept: group has active members on the target",
            TargetOutcome.UNTRANSLATED: "-",
        }[self.outcome]


def plan_target_group(checkpoints: Sequence[Checkpoint], state: TargetGroupState) -> list[TargetOffset]:
    """The outcome of each of one group's checkpoints (see the module's rules)."""
    out = []
    for checkpoint in checkpoints:
        if checkpoint.group != state.group:
            raise ValueError(f"checkpoint of group {checkpoint.group!r} planned for group {state.group!r}")
        current = state.committed.get((checkpoint.target_topic, checkpoint.partition))
        out.append(TargetOffset(checkpoint, _outcome(checkpoint, state.members, current), current))
    return out


def _outcome(checkpoint: Checkpoint, members: int, current: int | None) -> TargetOutcome:
    target = checkpoint.target_offset
    if target is None:
        return TargetOutcome.UNTRANSLATED
    if members > 0:
        return TargetOutcome.ACTIVE_MEMBERS
    if current is None or current < target:
        return TargetOutcome.PLANNED
    return TargetOutcome.UP_TO_DATE if current == target else TargetOutcome.TARGET_AHEAD


def offsets_to_commit(plan: Sequence[TargetOffset]) -> dict[Partition, int]:
    """Target partition -> offset, for the planned entries of one group's plan."""
    return {
        (t.checkpoint.target_topic, t.checkpoint.partition): t.checkpoint.target_offset
        for t in plan
        if t.outcome == TargetOutcome.PLANNED and t.checkpoint.target_offset is not None
    }
