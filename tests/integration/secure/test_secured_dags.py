"""DAG tasks against secured clusters (dag.test()): they work with the settings of the config, a refused login
fails the task naming the cluster and the cause, and no password lands in a task's output, its rendered fields,
its XComs or Airflow's metadata DB and logs."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from replicator.kafka.admin import create_topics
from tests.integration.secure.conftest import PASSWORDS, Secured
from tests.kafka_io import end_offsets

pytestmark = [pytest.mark.airflow, pytest.mark.kafka]

DAGS = Path(__file__).resolve().parents[3] / "dags"
WRONG = "Wrong-Pa55word-for-the-dag"


def _run(dag_id: str, **conf: object):  # type: ignore[no-untyped-def]
    from airflow.dag_processing.dagbag import DagBag

    dag = DagBag(dag_folder=str(DAGS)).get_dag(dag_id)
    run = dag.test(run_conf=conf or None)
    return run, {(ti.task_id, ti.map_index): ti for ti in run.get_task_instances()}


def _airflow_home_holds(secret: str) -> list[str]:
    """The files under $AIRFLOW_HOME (metadata DB: rendered fields, XComs; task logs) that contain ``secret``."""
    found = []
    for path in Path(os.environ["AIRFLOW_HOME"]).rglob("*"):
        if path.is_file() and secret.encode() in path.read_bytes():
            found.append(str(path))
    return found


def test_sync_dags_run_against_secured_clusters_and_a_refused_login_fails_in_one_line(  # type: ignore[no-untyped-def]
        airflow_db, secured: Secured, unique_name, tmp_path, monkeypatch, capsys, caplog) -> None:
    topic, route = unique_name, f"s-{unique_name}"[:60]
    create_topics(secured.plaintext, {topic: 2})
    monkeypatch.setenv("EU_SCRAM_PASSWORD", PASSWORDS["mirrorflow"])
    config = tmp_path / "mirrorflow.yaml"

    def write(password: str) -> None:
        config.write_text(json.dumps({
            "clusters": {"eu": {**secured.scram(), "sasl.password": password}, "us": secured.mtls()},
            "routes": [{"name": route, "source": "eu", "target": "us", "topics": [topic]}],
            "state": {"url": f"sqlite:///{tmp_path / 'state.db'}"}}))

    write("${EU_SCRAM_PASSWORD}")
    monkeypatch.setenv("MIRRORFLOW_CONFIG", str(config))
    run, tis = _run("mirrorflow_topic_discovery", route=route)
    assert run.state == "success", {k: t.state for k, t in tis.items()}
    assert end_offsets(secured.plaintext, f"eu.{topic}", 2) == {0: 0, 1: 0}  # the replica, made over TLS
    run, tis = _run("mirrorflow_metadata_sync", route=route)
    assert run.state == "success", {k: t.state for k, t in tis.items()}

    write(WRONG)
    run, tis = _run("mirrorflow_metadata_sync", route=route)
    assert run.state == "failed"
    said = capsys.readouterr()
    shown = said.out + said.err + caplog.text
    # The task's own words: one ERROR line naming the cluster and the cause (then it exits: Airflow logs "Task
    # exited", no traceback; how dag.test() prints that in this process depends on the logging set up by earlier
    # tests, so it is not asserted here: tests/unit/airflow/test_task_errors.py).
    said_by_task = [line for line in shown.splitlines() if "mirrorflow.task" in line]  # structlog or caplog
    assert said_by_task, shown[-3000:]  # (the same line may reach both structlog's output and caplog)
    assert all("source cluster 'eu'" in line and "authentication failed" in line for line in said_by_task)
    for secret in (PASSWORDS["mirrorflow"], WRONG):
        assert secret not in shown
        assert not _airflow_home_holds(secret)
