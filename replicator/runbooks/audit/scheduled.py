"""The audit DAG's two library steps around its ``spark-submit``: write the spec, read the result.

The spec and result files of a run sit in ``$MIRRORFLOW_WORK_DIR`` (default: the
folder ``runs/`` next to the config file), one folder per run key, so a retried task
rewrites the same files and records the same audit run. With an executor whose
workers are on several hosts, that folder must be shared.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

from replicator.config import resolve_config_path
from replicator.paths import SPARK_JOBS_DIR
from replicator.runbooks.audit.run import prepare_audit_spec, record_audit_result
from replicator.runbooks.audit.window import TimeInput

WORK_DIR_ENV = "MIRRORFLOW_WORK_DIR"
AUDIT_JOB = SPARK_JOBS_DIR / "audit.py"


def run_folder(kind: str, run_key: str, config: str | None = None) -> Path:
    """The folder of one job run's files: ``<work dir>/<kind>/<digest of run_key>``."""
    config_path = resolve_config_path(config, os.environ).resolve()
    base = Path(os.environ.get(WORK_DIR_ENV) or config_path.parent / "runs")
    folder = base / kind / hashlib.sha256(run_key.encode()).hexdigest()[:20]
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def audit_run_key(dag_id: str, run_id: str, route: str) -> str:
    """One key per (DAG run, route): a retry of a task continues the same audit run."""
    return f"{dag_id}/{run_id}/{route}"


def prepare_job(route: str, start: TimeInput, end: TimeInput, run_key: str, config: str | None = None,
                bucket: str = "1m") -> dict[str, Any]:
    """Write the spec of ``route``'s audit over ``[start, end)``; the job's arguments and result file."""
    config_path = str(resolve_config_path(config, os.environ).resolve())
    folder = run_folder("audit", run_key, config_path)
    spec = prepare_audit_spec(config_path, route, start, end, folder / "spec.json", bucket=bucket, run_key=run_key)
    result = folder / "result.json"
    result.unlink(missing_ok=True)  # a stale result of an earlier try must not be recorded
    return {"route": route, "result": str(result), "args": ["--spec", spec, "--output", str(result)]}


def record_job(prepared: dict[str, Any], config: str | None = None) -> dict[str, Any]:
    """Store the result the job wrote; AuditFailed when source records are missing on the target."""
    return record_audit_result(resolve_config_path(config, os.environ).resolve(), prepared["result"])
