"""The offset-checkpoints DAG with dag.test(): a group's offsets reach the target group and the state DB."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from replicator.kafka.admin import create_topics
from tests.checkpoint_io import consume_part, read_source, resume_on_target, wait_caught_up
from tests.kafka_io import committed, produce
from tests.records import make_records
from tests.support import Worker

pytestmark = pytest.mark.airflow

DAGS = Path(__file__).resolve().parents[3] / "dags"


def _run(**conf: object):  # type: ignore[no-untyped-def]
    from airflow.dag_processing.dagbag import DagBag

    run = DagBag(dag_folder=str(DAGS)).get_dag("mirrorflow_offset_checkpoints").test(run_conf=conf or None)
    return run, {(ti.task_id, ti.map_index): ti.state for ti in run.get_task_instances()}


def test_checkpoint_dag_moves_a_group_to_the_target(airflow_db, primary, backup, unique_name, tmp_path,  # type: ignore[no-untyped-def]
                                                    monkeypatch, workers) -> None:
    topic, group, route, partitions = unique_name, f"{unique_name}-app", f"d-{unique_name[-8:]}", 2
    create_topics(primary.bootstrap_servers, {topic: partitions})
    produce(primary.bootstrap_servers, topic, make_records(partitions, 40, "dag"))
    source = read_source(primary.bootstrap_servers, topic, partitions)
    commits = consume_part(primary.bootstrap_servers, group, topic, {0: 25, 1: 10})
    config = tmp_path / "mirrorflow.yaml"
    config.write_text(json.dumps({
        "clusters": {"primary": {"bootstrap.servers": primary.bootstrap_servers},
                     "backup": {"bootstrap.servers": backup.bootstrap_servers}},
        "routes": [{"name": route, "source": "primary", "target": "backup", "topics": [topic],
                    "checkpoints": {"groups": [group], "write_target_groups": True}}],
        "state": {"url": f"sqlite:///{tmp_path / 'state.db'}"}}))
    monkeypatch.setenv("MIRRORFLOW_CONFIG", str(config))
    workers.append(Worker(config, route, log_dir=tmp_path))
    wait_caught_up(primary.bootstrap_servers, route, topic, source)

    run, states = _run()
    assert run.state == "success" and states[("checkpoint", 0)] == "success", states
    replica = f"primary.{topic}"
    assert committed(backup.bootstrap_servers, group, replica, partitions) == commits  # same offsets: empty target
    with sqlite3.connect(tmp_path / "state.db") as db:
        rows = db.execute("select partition, source_offset, target_offset, status from mf_checkpoint "
                          "where group_id = ? order by partition", (group,)).fetchall()
    assert rows == [(0, 25, 25, "exact"), (1, 10, 10, "exact")]
    resumed = resume_on_target(backup.bootstrap_servers, group, replica, partitions)
    for p in range(partitions):
        assert resumed[p] == [rec for _, rec in source[p][commits[p]:]], f"partition {p} resumes after its last record"

    run, states = _run()  # a minute has not passed: not due
    assert run.state == "success" and ("checkpoint", 0) not in states
