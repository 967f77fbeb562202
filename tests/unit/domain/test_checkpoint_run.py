"""A checkpoint run's record: status, skipped and failed groups, and its JSON summary."""

from __future__ import annotations

import datetime as dt
import json

from replicator.domain.checkpoint import Checkpoint, CheckpointStatus
from replicator.domain.checkpoint_run import CheckpointRun
from replicator.domain.target_group import TargetOffset, TargetOutcome

T0 = dt.datetime(2026, 11, 1, 12, 0, tzinfo=dt.UTC)
A0 = Checkpoint("a", "orders", 0, 10, "p.orders", 8, CheckpointStatus.EXACT)
A1 = Checkpoint("a", "orders", 1, 12, "p.orders", 9, CheckpointStatus.BEHIND, 3)
B0 = Checkpoint("b", "orders", 0, 4, "p.orders", None, CheckpointStatus.UNKNOWN)
C0 = Checkpoint("c", "orders", 0, 4, "p.orders", 2, CheckpointStatus.EXACT)


def run(*targets: TargetOffset, dry_run: bool = False, error: str | None = None) -> CheckpointRun:
    return CheckpointRun("r", "primary", "backup", T0, T0 + dt.timedelta(seconds=1), ("a", "b", "c"),
                         (A0, A1, B0, C0), targets, dry_run, error)


def test_status() -> None:
    written = TargetOffset(A0, TargetOutcome.WRITTEN)
    failed = TargetOffset(A1, TargetOutcome.FAILED, None, "UNKNOWN_MEMBER_ID: Unknown member")
    assert run(written).status.value == "ok"
    assert run(written, failed).status.value == "failed"
    assert run(error="target 'backup': down").status.value == "failed"
    assert run(failed, dry_run=True).status.value == "dry-run"


def test_summary_is_plain_json_with_every_checkpoint_and_its_target_outcome() -> None:
    summary = run(TargetOffset(A0, TargetOutcome.WRITTEN, 5), TargetOffset(A1, TargetOutcome.WRITTEN),
                  TargetOffset(B0, TargetOutcome.UNTRANSLATED), TargetOffset(C0, TargetOutcome.ACTIVE_MEMBERS)
                  ).summary()
    assert json.loads(json.dumps(summary)) == summary
    assert summary["counts"] == {"exact": 2, "behind": 1, "before-first-sync": 0, "unknown": 1}
    assert summary["target_group_counts"]["written"] == 2 and summary["target_group_counts"]["active-members"] == 1
    assert summary["skipped_groups"] == {"c": "active members on backup"} and summary["failed_groups"] == {}
    assert summary["checkpoints"][0] == {
        "group": "a", "topic": "orders", "partition": 0, "source_offset": 10, "target_topic": "p.orders",
        "target_offset": 8, "status": "exact", "max_repeats": 0, "target_group": "written",
        "target_group_offset_before": 5,
    }
    assert summary["checkpoints"][2]["target_offset"] is None


def test_without_target_groups_the_outcome_is_none_and_only_translated_are_kept() -> None:
    plain = run()
    assert plain.translated == (A0, A1, C0)
    assert all(row["target_group"] is None for row in plain.summary()["checkpoints"])
