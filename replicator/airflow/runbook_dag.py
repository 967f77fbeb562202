"""The DAG of a runbook run step by step (``mirrorflow_failover``, ``mirrorflow_failback``): one shape for all.

Triggered by hand, one run at a time: task ``start`` starts the run from the DAG's
params (or resumes the route's unfinished one), then one task per step runs it
through the runbook engine and hands the run on to the next as plain JSON (its XCom
return value). What a step decided goes to the runbook's logger, hence the task
log; the last task's log ends with what the applications do next. A step that
failed fails its task with the runbook's error (where the run stopped, how to
resume it): triggering the DAG again with the same params resumes the run there.

A runbook is named by its module (``replicator.runbooks.failover.run``), which has
``start_run(config, **params)`` and ``step_of_run(config, step, run)``; it is
imported inside the tasks only, so the DAG processor never loads Kafka's clients or
SQLAlchemy. Imported inside DAG files' functions (Airflow is a heavy import).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from importlib import import_module
from typing import Any

import pendulum
from airflow.sdk import DAG, Param, task

from replicator.airflow.task_errors import said_in_one_line

log = logging.getLogger(__name__)

START_DATE = pendulum.datetime(2026, 1, 1, tz="UTC")

Run = dict[str, Any]  # a run as plain JSON: what each task returns and the next one takes


def runbook_dag(dag_id: str, runbook: str, steps: Sequence[str], params: Mapping[str, Param], doc: str,
                description: str | None = None) -> DAG:
    """The DAG ``dag_id``: ``start``, then a task per step of ``runbook`` (``reverse-copy``: ``reverse_copy``);
    ``description`` is what the DAG list shows."""
    with DAG(dag_id=dag_id, schedule=None, start_date=START_DATE, catchup=False, max_active_runs=1,
             tags=["mirrorflow"], description=description, doc_md=doc, params=dict(params)) as built:
        run = _start_task(runbook, tuple(params))()
        for step in steps:
            run = _step_task(runbook, step, last=step == steps[-1])(run)
    return built


def _start_task(runbook: str, names: tuple[str, ...]) -> Callable[[], Any]:
    @task(task_id="start")
    @said_in_one_line
    def start(params: Mapping[str, Any] | None = None) -> Run:
        return start_run(runbook, params or {}, names)

    return start


def _step_task(runbook: str, step: str, last: bool) -> Callable[[Any], Any]:
    @task(task_id=task_id(step))
    @said_in_one_line
    def run_step(run: Run) -> Run:
        return step_of_run(runbook, step, run, last)

    return run_step


def task_id(step: str) -> str:
    """The task of a step: ``commit-offsets`` runs as ``commit_offsets``."""
    return step.replace("-", "_")


def start_run(runbook: str, params: Mapping[str, Any], names: Iterable[str]) -> Run:
    """Task ``start``: the run of ``runbook`` started (or resumed) with the DAG's params ``names``; an optional
    param left empty in the form (null) takes the runbook's own default."""
    given = {name: params.get(name) for name in names}
    started: Run = import_module(runbook).start_run(
        None, **{name: value for name, value in given.items() if value is not None or name == "route"})
    return started


def step_of_run(runbook: str, step: str, run: Run, last: bool) -> Run:
    """A step's task: ``step`` of ``run`` (as stored) run; the last one logs what the applications do next."""
    done: Run = import_module(runbook).step_of_run(None, step, run)
    if last:
        log.info("next steps route=%s run_id=%s status=%s\n%s", done["request"]["route"], done["run_id"],
                 done["status"], done["next_steps"])
    return done
