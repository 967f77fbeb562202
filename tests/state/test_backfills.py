"""Backfill runs in the state DB: recorded once planned, refused where a done or running run copied the
offsets (unless overlap_ok), upserted by key, marked done or failed; SQLite and PostgreSQL."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from replicator.config import Config, load_config
from replicator.domain.backfill_run import BackfillMode, BackfillStatus, PartitionRange
from replicator.errors import UsageError
from replicator.runbooks.backfill.runs import begin_run, finish_run
from replicator.runbooks.backfill.spec import BackfillSpec
from replicator.state.backfills import load_run, runs
from replicator.state.store import StateStore

T0 = dt.datetime(2026, 11, 26, 3, 0, 5, tzinfo=dt.UTC)


@pytest.fixture
def config(state_url: str, tmp_path: Path) -> Config:
    path = tmp_path / "m.yaml"
    path.write_text(json.dumps({  # JSON is YAML
        "clusters": {"primary": {"bootstrap.servers": "127.0.0.1:1"}, "backup": {"bootstrap.servers": "127.0.0.1:2"}},
        "routes": [{"name": "r", "source": "primary", "target": "backup", "topics": ["t"]}],
        "state": {"url": state_url}}))
    return load_config(path, {})


def _spec(key: str, *ranges: tuple[int, int, int]) -> BackfillSpec:
    return BackfillSpec(key, "r", "primary", "backup", "t", "primary.t",
                        tuple(PartitionRange(p, a, b) for p, a, b in ranges))


def _stored(config: Config, route: str = "r") -> list[tuple[str, str, int | None, bool]]:
    with StateStore(config.state.url) as store:
        return store.run(lambda s: [(r.run_key, r.status.value, r.written, r.overlap_ok) for r in runs(s, route)])


def test_a_second_run_over_the_same_offsets_is_refused_naming_the_first(config: Config) -> None:
    begin_run(config, _spec("first", (0, 0, 12), (1, 0, 12)), BackfillMode.TIME, False, now=T0)
    finish_run(config, "first", {"written": {"0": 12, "1": 12}})
    with pytest.raises(UsageError) as refused:
        begin_run(config, _spec("second", (0, 5, 20)), BackfillMode.OFFSETS, False)
    assert str(refused.value).startswith("backfill of t refused: partition 0: offsets 5-12 were copied by backfill"
                                         " run first (done, started 2026-11-26 03:00:05Z, its offsets 0-12)")
    assert "--overlap-ok" in str(refused.value)
    assert _stored(config) == [("first", "done", 24, False)]  # the refused run left nothing
    begin_run(config, _spec("beside", (0, 12, 20)), BackfillMode.OFFSETS, False)  # right after: allowed
    begin_run(config, _spec("again", (0, 0, 12)), BackfillMode.OFFSETS, True)  # the user's word
    assert _stored(config) == [("again", "running", None, True), ("beside", "running", None, False),
                               ("first", "done", 24, False)]


def test_a_failed_run_does_not_block_and_a_retried_run_keeps_one_row(config: Config) -> None:
    begin_run(config, _spec("k", (0, 0, 10)), BackfillMode.TIME, False)
    begin_run(config, _spec("k", (0, 0, 10)), BackfillMode.TIME, False)  # a retried task: same key
    with pytest.raises(UsageError, match=r"are being copied by backfill run k .running"):
        begin_run(config, _spec("other", (0, 9, 10)), BackfillMode.TIME, False)
    failed = finish_run(config, "k", None, "the Spark job failed")
    assert failed is not None and failed.status == BackfillStatus.FAILED and failed.finished_at is not None
    begin_run(config, _spec("other", (0, 0, 10)), BackfillMode.TIME, False)
    assert _stored(config) == [("other", "running", None, False), ("k", "failed", None, False)]
    with StateStore(config.state.url) as store:
        stored = store.run(lambda s: load_run(s, "k"))
    assert stored is not None and stored.error == "the Spark job failed" and stored.total == 10
    assert stored.ranges == (PartitionRange(0, 0, 10),) and stored.mode == BackfillMode.TIME
    assert finish_run(config, "never-recorded", None, "x") is None


def test_a_job_that_wrote_no_result_marks_its_run_failed(config: Config, tmp_path: Path) -> None:
    """The DAG's last task runs after a failed job too: no result file, the run is failed, not left running."""
    from replicator.runbooks.backfill.run import BackfillJobError, backfill_result

    begin_run(config, _spec("dag/run-1", (0, 0, 10)), BackfillMode.OFFSETS, False)
    with pytest.raises(BackfillJobError, match="backfill run dag/run-1: the backfill's Spark job wrote no result"):
        backfill_result(config, tmp_path / "result.json", "dag/run-1")
    assert _stored(config) == [("dag/run-1", "failed", None, False)]
    begin_run(config, _spec("dag/run-2", (0, 0, 10)), BackfillMode.OFFSETS, False)  # so it does not block
