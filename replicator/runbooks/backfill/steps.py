"""The backfill DAG's two library steps around its ``spark-submit``: plan, record the run and write the
spec; judge the result and mark the run done or failed (also when the job failed and wrote none).

Files go to the run's folder (``replicator.runbooks.audit.scheduled.run_folder``: ``$MIRRORFLOW_WORK_DIR``
or ``runs/`` next to the config), one per run key, so a retried task rewrites them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from replicator.config import resolve_config_path
from replicator.paths import SPARK_JOBS_DIR
from replicator.runbooks.audit.scheduled import run_folder
from replicator.runbooks.backfill.plan import parse_offset_ranges
from replicator.runbooks.backfill.run import backfill_result, prepare_backfill_spec

BACKFILL_JOB = SPARK_JOBS_DIR / "backfill.py"


def prepare_job(params: Mapping[str, Any], run_key: str, config: str | None = None) -> dict[str, Any]:
    """Write the spec of the backfill the DAG's params ask for; the job's arguments and result file."""
    if not params.get("route") or not params.get("topic"):
        raise ValueError("params route and topic are required")  # Airflow shows it on the task
    config_path = str(resolve_config_path(config, os.environ).resolve())
    folder = run_folder("backfill", run_key, config_path)
    offsets = (parse_offset_ranges(str(params["from_offset"]), params.get("to_offset") or None)
               if params.get("from_offset") else None)
    spec = prepare_backfill_spec(config_path, str(params["route"]), str(params["topic"]), folder / "spec.json",
                                 params.get("from") or None, params.get("to") or None, offsets=offsets,
                                 overlap_ok=bool(params.get("overlap_ok")), run_key=run_key)
    result = folder / "result.json"
    result.unlink(missing_ok=True)  # a stale result of an earlier try must not be judged
    return {"route": spec.route, "topic": spec.topic, "total": spec.total, "result": str(result),
            "run_key": spec.run_key, "config": config_path,
            "args": ["--spec", str(folder / "spec.json"), "--output", str(result)]}


def judge_job(prepared: Mapping[str, Any]) -> dict[str, Any]:
    """The job's result, its run marked done; BackfillIncomplete when records are missing on the replica
    after the copy, BackfillJobError when the job wrote no result (the run is marked failed)."""
    return backfill_result(prepared["config"], prepared["result"], prepared["run_key"])
