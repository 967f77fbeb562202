"""The target's groups: where they stand, the resume offsets committed into them, and read back.

The writer and the rules are the checkpoints' (:func:`replicator.kafka.group_offsets.commit`,
:func:`replicator.domain.failover.plan_commits`): a group with active members on
the target is never written (and the broker refuses a commit without a member id
into such a group anyway), a group is never moved backwards.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence

from replicator.config import Config, RouteConfig
from replicator.domain.checkpoint import Partition
from replicator.domain.resume_point import GroupCommit, ResumePoint, offsets_to_write, plan_commits
from replicator.domain.target_group import TargetOutcome
from replicator.errors import ClusterError
from replicator.kafka.group_members import active_members
from replicator.kafka.group_offsets import commit, for_each_group, read_committed

log = logging.getLogger(__name__)


def _target(config: Config, route: RouteConfig) -> tuple[dict[str, str], str]:
    return config.cluster(route.target).client_properties(), f"route {route.name}: target {route.target!r}"


def plan(config: Config, route: RouteConfig, points: Sequence[ResumePoint]) -> tuple[GroupCommit, ...]:
    """What becomes of each point, from the target groups' members and committed offsets now."""
    properties, what = _target(config, route)
    groups = sorted({p.group for p in points if p.target_offset is not None})
    members = active_members(properties, groups, what)
    committed = for_each_group(lambda g: read_committed(properties, g, _partitions(points, g), what),
                               [g for g in groups if not members[g]])
    return plan_commits(points, members, committed)


def write(config: Config, route: RouteConfig, commits: Sequence[GroupCommit]) -> tuple[GroupCommit, ...]:
    """Commit each group's planned offsets; a refused group is marked failed (with why), the others go on."""
    properties, what = _target(config, route)

    def write_group(group: str) -> tuple[TargetOutcome, str | None]:
        try:
            commit(properties, group, offsets_to_write(commits, group), what)
        except ClusterError as exc:
            log.warning("target group not written route=%s group=%s error=%s", route.name, group, exc)
            return TargetOutcome.FAILED, str(exc)
        return TargetOutcome.WRITTEN, None

    outcome = for_each_group(write_group, sorted({c.point.group for c in commits
                                                  if c.outcome == TargetOutcome.PLANNED}))
    return tuple(dataclasses.replace(c, outcome=outcome[c.point.group][0], error=outcome[c.point.group][1])
                 if c.outcome == TargetOutcome.PLANNED else c for c in commits)


def read_back(config: Config, route: RouteConfig, commits: Sequence[GroupCommit]) -> dict[str, dict[Partition, int]]:
    """The committed offsets now of the groups and partitions that were written or kept ahead."""
    properties, what = _target(config, route)
    checked = (TargetOutcome.WRITTEN, TargetOutcome.UP_TO_DATE, TargetOutcome.TARGET_AHEAD)
    groups = sorted({c.point.group for c in commits if c.outcome in checked})
    return for_each_group(lambda g: read_committed(
        properties, g, [c.target for c in commits if c.point.group == g and c.outcome in checked], what), groups)


def _partitions(points: Sequence[ResumePoint], group: str) -> list[Partition]:
    return [(p.target_topic, p.partition) for p in points if p.group == group and p.target_offset is not None]
