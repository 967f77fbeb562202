"""Failback runs in the state DB: a failed run is resumed by the same request; --restart abandons it."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from replicator.config import Config, load_config
from replicator.domain.failback import FailbackMode, FailbackRequest, FailbackRun, FailbackStep
from replicator.domain.runbook import RunStatus, StepRecord, StepStatus
from replicator.errors import UsageError
from replicator.runbooks.failback.run import start
from replicator.state.failbacks import load_run, save_run, unfinished_run
from replicator.state.store import StateStore

T0 = dt.datetime(2026, 11, 1, 12, 0, tzinfo=dt.UTC)


def _config(tmp_path: Path, state_url: str) -> Config:
    path = tmp_path / "m.yaml"  # clusters nobody listens on: nothing here may need them
    path.write_text(json.dumps({
        "clusters": {"a": {"bootstrap.servers": "127.0.0.1:1"}, "b": {"bootstrap.servers": "127.0.0.1:2"}},
        "routes": [{"name": "r", "source": "a", "target": "b", "topics": ["t"]}], "state": {"url": state_url}}))
    return load_config(path)


def _failed_run(store: StateStore) -> FailbackRun:
    run = FailbackRun.new(FailbackRequest("r"), "a", "b", T0)
    run = run.with_step(StepRecord(FailbackStep.CHECK, StepStatus.FAILED, "", "cluster 'a' is unreachable"))
    return store.run(lambda session: save_run(session, run))


def test_the_same_failback_resumes_its_failed_run(state_url: str, tmp_path: Path) -> None:
    config = _config(tmp_path, state_url)
    with StateStore(state_url) as store:
        failed, said = _failed_run(store), list[str]()
        run = start(config, FailbackRequest("r", drain_timeout_seconds=5), say=said.append)
        assert run.run_id == failed.run_id and run.request.drain_timeout_seconds == 5
        assert said == [f"resuming failback run {failed.run_id} of route r (stopped at check)"]


def test_restart_abandons_the_unfinished_failback_and_starts_a_new_one(state_url: str, tmp_path: Path) -> None:
    config = _config(tmp_path, state_url)
    with StateStore(state_url) as store:
        failed, said = _failed_run(store), list[str]()
        with pytest.raises(UsageError, match="with mode incremental: run it again with that mode to finish it, "
                                             "or add --restart to abandon it and start anew"):
            start(config, FailbackRequest("r", FailbackMode.RESYNC), say=said.append)
        run = start(config, FailbackRequest("r", FailbackMode.RESYNC), restart=True, say=said.append)
        with store.session() as session:
            old, unfinished = load_run(session, failed.run_id or 0), unfinished_run(session, "r")
        assert old.status == RunStatus.ABANDONED and old.abandoned_at is not None
        assert unfinished is not None and unfinished.run_id == run.run_id != failed.run_id
        assert run.status == RunStatus.RUNNING and run.request.mode == FailbackMode.RESYNC
        assert said == [f"failback run {failed.run_id} abandoned (--restart)",
                        f"failback run {run.run_id} of route r: b -> a, mode resync"]
