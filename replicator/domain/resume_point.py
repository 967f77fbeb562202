"""Where a group resumes on the target after a failover, and what becomes of it in the target's group.

A resume point comes from a checkpoint's translation (exact, behind, ...) or from
offsets-for-times (mode ``timestamp``). Committing it follows the rules of
:mod:`replicator.domain.target_group` -- the same as the checkpoints' -- and the
verify step reads it back.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum

from replicator.domain.checkpoint import Checkpoint, CheckpointStatus, Partition
from replicator.domain.target_group import TargetGroupState, TargetOutcome, plan_target_group


class Basis(StrEnum):
    """Why a group resumes at its offset: a checkpoint's translation, or a timestamp."""

    EXACT = CheckpointStatus.EXACT.value
    BEHIND = CheckpointStatus.BEHIND.value
    BEFORE_FIRST_SYNC = CheckpointStatus.BEFORE_FIRST_SYNC.value
    UNKNOWN = CheckpointStatus.UNKNOWN.value
    TIMESTAMP = "timestamp"


@dataclass(frozen=True, slots=True)
class ResumePoint:
    """Where ``group`` resumes on one replica partition (``target_offset`` None: nowhere known)."""

    group: str
    topic: str  # the source topic
    partition: int
    target_topic: str
    target_offset: int | None
    basis: Basis
    source_offset: int | None = None
    max_repeats: int | None = 0  # None: not bounded (timestamp)
    as_of: dt.datetime | None = None  # when the checkpoint was taken

    def describe(self) -> str:
        """A few words for a table."""
        if self.basis == Basis.BEHIND:
            return f"≤{self.max_repeats} may repeat"
        return {Basis.EXACT: "exact", Basis.BEFORE_FIRST_SYNC: "before first copied record",
                Basis.UNKNOWN: "no offset sync: not moved", Basis.TIMESTAMP: "by timestamp"}.get(self.basis, "-")


def points_from_checkpoints(stored: Iterable[tuple[Checkpoint, dt.datetime]]) -> tuple[ResumePoint, ...]:
    """Resume points of checkpoints and the time each was taken, sorted."""
    return tuple(sorted(
        (ResumePoint(c.group, c.topic, c.partition, c.target_topic, c.target_offset, Basis(c.status.value),
                     c.source_offset, c.max_repeats, at) for c, at in stored),
        key=lambda p: (p.group, p.topic, p.partition)))


def timestamp_point(group: str, topic: str, target_topic: str, partition: int, found: int | None, end: int,
                    instant: dt.datetime) -> ResumePoint:
    """The first offset at or after ``instant`` (``found``; None when every record is older: the end)."""
    return ResumePoint(group, topic, partition, target_topic, end if found is None else found, Basis.TIMESTAMP,
                       None, None, instant)


@dataclass(frozen=True, slots=True)
class GroupCommit:
    """One resume point and what became of it in the target's group."""

    point: ResumePoint
    outcome: TargetOutcome
    current: int | None = None  # the group's committed offset before
    error: str | None = None
    verified: int | None = None  # read back after the commit

    @property
    def target(self) -> Partition:
        """The replica partition."""
        return self.point.target_topic, self.point.partition


def plan_commits(points: Sequence[ResumePoint], members: Mapping[str, int],
                 committed: Mapping[str, Mapping[Partition, int]]) -> tuple[GroupCommit, ...]:
    """The outcome of each point, by the target-group rules (the same as the checkpoints')."""
    out: list[GroupCommit] = []
    for group in sorted({p.group for p in points}):
        own = [p for p in points if p.group == group]
        state = TargetGroupState(group, members.get(group, 0), committed.get(group, {}))
        for point, planned in zip(own, plan_target_group([_as_checkpoint(p) for p in own], state), strict=True):
            out.append(GroupCommit(point, planned.outcome, planned.current))
    return tuple(out)


def _as_checkpoint(point: ResumePoint) -> Checkpoint:
    # The rules look only at the group, the replica partition and the offsets; a
    # timestamp point is "behind" in spirit: nothing skipped, repeats unbounded.
    status = CheckpointStatus.BEHIND if point.basis == Basis.TIMESTAMP else CheckpointStatus(point.basis.value)
    return Checkpoint(point.group, point.topic, point.partition, point.source_offset or 0, point.target_topic,
                      point.target_offset, status, point.max_repeats or 0)


def offsets_to_write(commits: Iterable[GroupCommit], group: str) -> dict[Partition, int]:
    """Replica partition -> offset to commit, for ``group``'s planned commits."""
    return {c.target: c.point.target_offset for c in commits
            if c.point.group == group and c.outcome == TargetOutcome.PLANNED and c.point.target_offset is not None}


# What a commit step leaves that the verify step reads back, and what it must then find.
_WRITTEN = (TargetOutcome.WRITTEN, TargetOutcome.UP_TO_DATE)


def verify_commits(commits: Sequence[GroupCommit], read_back: Mapping[str, Mapping[Partition, int]]
                   ) -> tuple[tuple[GroupCommit, ...], list[str]]:
    """Each commit with the offset read back, and one line per one that is not where it should be."""
    out, problems = [], []
    for commit in commits:
        if commit.outcome not in (*_WRITTEN, TargetOutcome.TARGET_AHEAD):
            out.append(commit)
            continue
        found = read_back.get(commit.point.group, {}).get(commit.target)
        wanted = commit.point.target_offset
        ok = found is not None and wanted is not None and (
            found == wanted if commit.outcome in _WRITTEN else found >= wanted)
        if not ok:
            problems.append(f"group {commit.point.group} {commit.point.target_topic}-{commit.point.partition}: "
                            f"committed {found}, expected {'' if commit.outcome in _WRITTEN else '>= '}{wanted}")
        out.append(replace(commit, verified=found))
    return tuple(out), problems
