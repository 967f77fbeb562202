"""The one shape of the runbook DAGs: start, a task per step, the params handed on, the next steps logged.

This module is itself the runbook the tests name (``start_run`` and ``step_of_run``
below), so the tasks' bodies run without a state DB or clusters.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest
from airflow.sdk import Param

from replicator.airflow import runbook_dag as shape

HERE = __name__


def start_run(config: object, **params: Any) -> dict[str, Any]:
    return {"config": config, "params": params, "request": {"route": params["route"]}, "run_id": 7}


def step_of_run(config: object, step: str, run: dict[str, Any]) -> dict[str, Any]:
    return {**run, "config": config, "last_step": step, "status": "done", "next_steps": "Point the apps at a."}


@pytest.mark.parametrize(("step", "expected"), [("check", "check"), ("reverse-copy", "reverse_copy"),
                                                ("final-checkpoint", "final_checkpoint")])
def test_a_step_runs_as_the_task_of_its_name_with_underscores(step: str, expected: str) -> None:
    assert shape.task_id(step) == expected


def test_the_dag_is_by_hand_one_run_at_a_time_start_then_a_task_per_step_in_order() -> None:
    params = {"route": Param("", type="string"), "dry_run": Param(False, type="boolean")}
    dag = shape.runbook_dag("mirrorflow_drill", HERE, ["check", "move-groups", "finish"], params, "### Drill")
    assert [(t.task_id, sorted(t.downstream_task_ids)) for t in dag.tasks] == [
        ("start", ["check"]), ("check", ["move_groups"]), ("move_groups", ["finish"]), ("finish", [])]
    assert (dag.dag_id, dag.schedule, dag.catchup, dag.max_active_runs, dag.tags, dag.doc_md) == (
        "mirrorflow_drill", None, False, 1, {"mirrorflow"}, "### Drill")
    assert {name: p.value for name, p in dag.params.items()} == {"route": "", "dry_run": False}


def test_start_hands_the_runbook_only_the_declared_params_and_no_config() -> None:
    run = shape.start_run(HERE, {"route": "r", "dry_run": True, "undeclared": 1}, ("route", "dry_run", "groups"))
    assert run["config"] is None  # the runbook reads MIRRORFLOW_CONFIG itself
    assert run["params"] == {"route": "r", "dry_run": True}  # groups not given: the runbook's default
    emptied = shape.start_run(HERE, {"route": "r", "dry_run": None, "groups": None}, ("route", "dry_run", "groups"))
    assert emptied["params"] == {"route": "r"}  # optional params emptied in the form: the runbook's defaults


@pytest.mark.parametrize("last", [False, True])
def test_a_step_runs_through_the_runbook_and_the_last_logs_what_to_do_next(
        caplog: pytest.LogCaptureFixture, last: bool) -> None:
    caplog.set_level(logging.INFO, logger="replicator.airflow.runbook_dag")
    done = shape.step_of_run(HERE, "finish", {"request": {"route": "r"}, "run_id": 7}, last)
    assert (done["config"], done["last_step"], done["status"]) == (None, "finish", "done")
    logged = [r.getMessage() for r in caplog.records]
    assert logged == (["next steps route=r run_id=7 status=done\nPoint the apps at a."] if last else [])
