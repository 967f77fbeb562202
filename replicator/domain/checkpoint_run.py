"""The record of one checkpoint run of a route: what was translated and written where.

What the state DB stores (``mf_checkpoint_run``), what ``mirrorflow checkpoint``
prints and what the function the DAG calls returns (``summary``, plain JSON).
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from dataclasses import dataclass
from typing import Any

from replicator.domain.checkpoint import Checkpoint, CheckpointStatus
from replicator.domain.sync_run import RunStatus
from replicator.domain.target_group import TargetOffset, TargetOutcome


@dataclass(frozen=True, slots=True)
class CheckpointRun:
    """One run: the groups seen, their checkpoints, and (if the route writes them) the target groups."""

    route: str
    source: str
    target: str
    started_at: dt.datetime
    finished_at: dt.datetime
    groups: tuple[str, ...]
    checkpoints: tuple[Checkpoint, ...]
    target_offsets: tuple[TargetOffset, ...] = ()  # empty unless checkpoints.write_target_groups
    dry_run: bool = False
    error: str | None = None  # why the run stopped before it was done

    @property
    def status(self) -> RunStatus:
        """``dry-run``; ``failed`` when the run stopped or a target commit failed; else ``ok``."""
        if self.dry_run:
            return RunStatus.DRY_RUN
        if self.error or self.failed_groups:
            return RunStatus.FAILED
        return RunStatus.OK

    @property
    def translated(self) -> tuple[Checkpoint, ...]:
        """The checkpoints that have a target offset (the ones stored)."""
        return tuple(c for c in self.checkpoints if c.translated)

    @property
    def skipped_groups(self) -> dict[str, str]:
        """Groups left alone on the target because they have active members there -> why."""
        return {t.checkpoint.group: f"active members on {self.target}"
                for t in self.target_offsets if t.outcome == TargetOutcome.ACTIVE_MEMBERS}

    @property
    def failed_groups(self) -> dict[str, str]:
        """Groups whose commit on the target failed -> the error."""
        return {t.checkpoint.group: t.error or "failed"
                for t in self.target_offsets if t.outcome == TargetOutcome.FAILED}

    def target_offsets_by_key(self) -> dict[tuple[str, str, int], TargetOffset]:
        """What became of each checkpoint in its target group, by (group, topic, partition)."""
        return {(t.checkpoint.group, t.checkpoint.topic, t.checkpoint.partition): t for t in self.target_offsets}

    def counts(self) -> dict[str, int]:
        """Checkpoints per status (``exact``, ``behind``, ...)."""
        statuses = Counter(c.status for c in self.checkpoints)
        return {s.value: statuses[s] for s in CheckpointStatus}

    def target_counts(self) -> dict[str, int]:
        """Checkpoints per outcome in the target groups (``written``, ``target-ahead``, ...)."""
        outcomes = Counter(t.outcome for t in self.target_offsets)
        return {o.value: outcomes[o] for o in TargetOutcome}

    def summary(self) -> dict[str, Any]:
        """The run as plain JSON-serialisable data."""
        by_key = self.target_offsets_by_key()
        rows = []
        for c in self.checkpoints:
            entry = by_key.get((c.group, c.topic, c.partition))
            rows.append({
                "group": c.group, "topic": c.topic, "partition": c.partition, "source_offset": c.source_offset,
                "target_topic": c.target_topic, "target_offset": c.target_offset, "status": c.status.value,
                "max_repeats": c.max_repeats,
                "target_group": None if entry is None else entry.outcome.value,
                "target_group_offset_before": None if entry is None else entry.current,
            })
        return {
            "route": self.route, "source": self.source, "target": self.target, "status": self.status.value,
            "started_at": self.started_at.isoformat(), "finished_at": self.finished_at.isoformat(),
            "groups": list(self.groups), "counts": self.counts(), "target_group_counts": self.target_counts(),
            "checkpoints": rows,
            "skipped_groups": self.skipped_groups, "failed_groups": self.failed_groups, "error": self.error,
        }
