"""Checkpoints in the state DB: one row per group partition, updated in place; runs and their figures."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from replicator.config import parse_config
from replicator.domain.checkpoint import Checkpoint, CheckpointStatus
from replicator.domain.checkpoint_run import CheckpointRun
from replicator.domain.target_group import TargetOffset, TargetOutcome
from replicator.runbooks.checkpoints.run import checkpoint_due
from replicator.state.checkpoints import checkpoints, last_run_started, record_checkpoint_run, save_checkpoints
from replicator.state.models import CheckpointRunRow
from replicator.state.store import StateStore

T0 = dt.datetime(2026, 11, 1, 12, 0, tzinfo=dt.UTC)
EXACT, BEHIND, UNKNOWN = CheckpointStatus.EXACT, CheckpointStatus.BEHIND, CheckpointStatus.UNKNOWN


def test_checkpoints_are_updated_in_place_and_untranslated_ones_skipped(state_url: str) -> None:
    first = [Checkpoint("app", "orders", 0, 10, "p.orders", 8, EXACT),
             Checkpoint("app", "orders", 1, 12, "p.orders", 9, BEHIND, 3),
             Checkpoint("app", "audit", 0, 4, "p.audit", None, UNKNOWN)]
    later = [Checkpoint("app", "orders", 1, 20, "p.orders", 17, EXACT),  # updated in the same call as ...
             Checkpoint("app", "orders", 2, 5, "p.orders", 5, EXACT)]  # ... a partition stored the first time
    with StateStore(state_url) as store:
        for _ in range(2):  # a retried task is harmless
            with store.session() as session:
                assert save_checkpoints(session, "r", first, T0) == 2
        with store.session() as session:
            assert save_checkpoints(session, "r", later, T0 + dt.timedelta(minutes=1)) == 2
            save_checkpoints(session, "other", first[:1], T0)
        with store.session() as session:
            stored = checkpoints(session, "r")
            assert checkpoints(session, "r", group="nobody") == []
        t1 = T0 + dt.timedelta(minutes=1)
        assert stored == [(first[0], T0), (later[0], t1), (later[1], t1)]
        assert stored[0][1].tzinfo is not None


def test_runs_keep_their_figures_and_the_latest_start(state_url: str) -> None:
    a = Checkpoint("a", "orders", 0, 10, "p.orders", 8, EXACT)
    b = Checkpoint("b", "orders", 0, 10, "p.orders", 8, EXACT)
    run = CheckpointRun("r", "primary", "backup", T0, T0 + dt.timedelta(seconds=2), ("a", "b", "c"),
                        (a, b, Checkpoint("c", "orders", 0, 1, "p.orders", None, UNKNOWN)),
                        (TargetOffset(a, TargetOutcome.WRITTEN), TargetOffset(b, TargetOutcome.ACTIVE_MEMBERS)))
    failed = CheckpointRun("r", "primary", "backup", T0 + dt.timedelta(minutes=1), T0 + dt.timedelta(minutes=1),
                           (), (), error="target 'backup': down")
    with StateStore(state_url) as store:
        with store.session() as session:
            assert last_run_started(session, "r") is None
            record_checkpoint_run(session, run)
            record_checkpoint_run(session, failed)
        with store.session() as session:
            rows = session.query(CheckpointRunRow).order_by(CheckpointRunRow.id).all()
            assert [(r.status, r.groups, r.checkpoints, r.untranslated, r.target_commits, r.skipped_groups, r.error)
                    for r in rows] == [("ok", 3, 2, 1, 1, "b: active members on backup", None),
                                       ("failed", 0, 0, 0, 0, None, "target 'backup': down")]
            assert last_run_started(session, "r") == T0 + dt.timedelta(minutes=1)


def test_a_checkpoint_is_due_after_the_routes_interval(state_url: str, tmp_path: Path) -> None:
    config = parse_config("clusters: {a: {bootstrap.servers: 'h:1'}, b: {bootstrap.servers: 'h:2'}}\n"
                          "routes: [{name: r, source: a, target: b, topics: [x], checkpoints: {interval: 100}}]\n"
                          f"state: {{url: '{state_url}'}}\n")
    assert checkpoint_due(config, "r", T0)
    with StateStore(state_url) as store:
        with store.session() as session:
            record_checkpoint_run(session, CheckpointRun("r", "a", "b", T0, T0, (), ()))
    assert not checkpoint_due(config, "r", T0 + dt.timedelta(seconds=50))
    assert checkpoint_due(config, "r", T0 + dt.timedelta(seconds=95))  # a scheduler's jitter is forgiven
