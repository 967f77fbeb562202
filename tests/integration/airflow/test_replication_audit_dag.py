"""The audit DAG with dag.test(): spark-submit on the fresh Airflow's default (local) master, a clean audit.

One Spark run (spark-submit of spark_jobs/audit.py): its start-up is the cost.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import sqlite3
import time
from pathlib import Path

import pytest

from replicator.kafka.admin import create_topics
from tests.checkpoint_io import read_source, wait_caught_up
from tests.kafka_io import Rec, produce
from tests.records import write_config
from tests.support import Worker

pytestmark = [pytest.mark.airflow, pytest.mark.spark]

DAGS = Path(__file__).resolve().parents[3] / "dags"
PARTITIONS, PER_PARTITION = 2, 30


def test_hourly_audit_of_a_replicated_topic_is_clean(airflow_db, task_environ, primary, backup, unique_name, tmp_path,  # type: ignore[no-untyped-def]
                                                      monkeypatch, workers, capfd) -> None:
    from airflow.dag_processing.dagbag import DagBag
    from airflow.sdk import BaseHook
    from airflow.sdk.exceptions import AirflowNotFoundException

    with pytest.raises(AirflowNotFoundException):  # what the DAG must cope with on a fresh install
        BaseHook.get_connection("spark_default")
    topic, route = unique_name, f"a-{unique_name[-8:]}"
    hour_end = dt.datetime.now(dt.UTC).replace(minute=0, second=0, microsecond=0)
    first_ms = int(hour_end.timestamp() * 1000) - 1_800_000  # half an hour into the previous hour
    records = [Rec(p, f"k{n}".encode(), f"v{p}-{n}".encode(), (("h", str(n).encode()),), first_ms + 1_000 * n)
               for n in range(PER_PARTITION) for p in range(PARTITIONS)]
    records.append(Rec(0, b"later", b"not in the window", (), int(hour_end.timestamp() * 1000) + 5))
    create_topics(primary.bootstrap_servers, {topic: PARTITIONS})
    produce(primary.bootstrap_servers, topic, records)
    config = write_config(tmp_path / "mirrorflow.yaml", primary.bootstrap_servers, backup.bootstrap_servers,
                          [{"name": route, "source": "primary", "target": "backup", "topics": [topic]}])
    monkeypatch.setenv("MIRRORFLOW_CONFIG", str(config))
    monkeypatch.delenv("MIRRORFLOW_WORK_DIR", raising=False)
    workers.append(Worker(config, route, log_dir=tmp_path))
    wait_caught_up(primary.bootstrap_servers, route, topic, read_source(primary.bootstrap_servers, topic, PARTITIONS))

    began = time.monotonic()
    dag = DagBag(dag_folder=str(DAGS)).get_dag("mirrorflow_replication_audit")
    run = dag.test(logical_date=hour_end, run_conf={"route": route})
    print(f"audit DAG run took {time.monotonic() - began:.1f} s")
    states = {(ti.task_id, ti.map_index): ti.state for ti in run.get_task_instances()}
    assert run.state == "success", states
    assert states[("audit_route.audit_job", 0)] == states[("audit_route.record", 0)] == "success", states
    # A clean audit's log holds no ERROR line (#15: Spark's shutdown errors made a clean run look broken).
    logged = capfd.readouterr()
    spark_errors = [line for line in (logged.out + logged.err).splitlines()
                    if re.search(r"\d\d/\d\d/\d\d \d\d:\d\d:\d\d ERROR |RejectedExecutionException|"
                                 r"Python worker exited unexpectedly", line)]
    assert "INFO SparkContext: Running Spark version" in logged.out + logged.err  # Spark's log is read here
    assert not spark_errors, spark_errors[:5]

    with sqlite3.connect(tmp_path / "state.db") as db:
        rows = db.execute("select run_key, status, window_start, window_end, source_records, target_records,"
                          " missing, pending from mf_audit_run where route = ?", (route,)).fetchall()
    assert len(rows) == 1, rows
    run_key, status, start, end, source, target, missing, pending = rows[0]
    assert run_key == f"mirrorflow_replication_audit/{run.run_id}/{route}"
    assert (status, source, target, missing, pending) == ("clean", 60, 60, 0, 0)
    previous_hour = (hour_end - dt.timedelta(hours=1)).replace(tzinfo=None)
    assert (dt.datetime.fromisoformat(start[:19]), dt.datetime.fromisoformat(end[:19])) == (
        previous_hour, hour_end.replace(tzinfo=None))
    result = json.loads(next((tmp_path / "runs" / "audit").glob("*/result.json")).read_text())
    assert result["run_key"] == run_key
    assert "bootstrap" not in next((tmp_path / "runs" / "audit").glob("*/spec.json")).read_text()
