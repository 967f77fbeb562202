"""The backfill DAG with dag.test(): spark-submit of spark_jobs/backfill.py on the fresh Airflow's local
default; the records written before a `start: latest` route began reach the replica once, after its copies.
A range reaching into the route's copies fails the run before any Spark job, and so does the same backfill
again (the first run is recorded, done, with its count)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from replicator.domain.backfill_run import BackfillRun, BackfillStatus
from tests.kafka_io import Rec, read_all
from tests.late_route import started_late

pytestmark = [pytest.mark.airflow, pytest.mark.spark]

DAGS = Path(__file__).resolve().parents[3] / "dags"
PARTITIONS, OLD, NEW = 2, 8, 3


def _records(first_ms: int, count: int, tag: str) -> dict[int, list[Rec]]:
    return {p: [Rec(p, None if n % 3 == 0 else f"{tag}{n}".encode(), f"{tag}{p}-{n}".encode(),
                    (("h", f"{n}".encode()), ("n", None)) if n % 2 else (), first_ms + 1_000 * n)
                for n in range(count)] for p in range(PARTITIONS)}


def _run(**conf: object):  # type: ignore[no-untyped-def]
    from airflow.dag_processing.dagbag import DagBag

    run = DagBag(dag_folder=str(DAGS)).get_dag("mirrorflow_backfill_topic").test(run_conf=conf)
    return run, {ti.task_id: ti.state for ti in run.get_task_instances()}


def test_backfill_dag_copies_the_earlier_records_once(airflow_db, task_environ, primary, backup, unique_name, tmp_path,  # type: ignore[no-untyped-def]
                                                     monkeypatch, workers) -> None:
    topic, route, now = unique_name, f"b-{unique_name[-8:]}", int(time.time() * 1000)
    old, new = _records(now - 3_600_000, OLD, "old"), _records(now, NEW, "new")
    config = started_late(primary.bootstrap_servers, backup.bootstrap_servers, tmp_path, topic, route, old, new,
                          keep=workers).config
    monkeypatch.setenv("MIRRORFLOW_CONFIG", str(config))

    run, states = _run(route=route, topic=topic, from_offset="0=0,1=0", to_offset="0=9")
    assert run.state == "failed" and states["prepare"] == "failed", states  # 9 > 8, where the route began
    assert states.get("backfill_job") != "success", states

    began = time.monotonic()
    run, states = _run(route=route, topic=topic, from_offset="0=0,1=0")
    print(f"backfill DAG run took {time.monotonic() - began:.1f} s")
    assert run.state == "success" and states == {"prepare": "success", "job_args": "success",
                                                 "backfill_job": "success", "check": "success"}, states
    replica = read_all(backup.bootstrap_servers, f"primary.{topic}", PARTITIONS)
    assert replica == {p: new[p] + old[p] for p in range(PARTITIONS)}
    [first] = _runs(config, route)
    assert (first.status, first.written, first.total, first.run_key.startswith("mirrorflow_backfill_topic/")) == (
        BackfillStatus.DONE, PARTITIONS * OLD, PARTITIONS * OLD, True)

    run, states = _run(route=route, topic=topic, from_offset="0=0,1=0")  # the same again: refused, no job
    assert run.state == "failed" and states["prepare"] == "failed", states
    assert states.get("backfill_job") != "success" and states.get("check") != "success", states
    assert read_all(backup.bootstrap_servers, f"primary.{topic}", PARTITIONS) == replica
    assert [r.run_key for r in _runs(config, route)] == [first.run_key]


def _runs(config: Path, route: str) -> list[BackfillRun]:
    from replicator.config import load_config
    from replicator.state.backfills import runs
    from replicator.state.store import StateStore

    with StateStore(load_config(config, {}).state.url) as store:
        return store.run(lambda s: runs(s, route))
