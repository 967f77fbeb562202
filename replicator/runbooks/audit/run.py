"""Audit a route: in one call (:func:`run_audit`), or in the three steps the DAG runs around spark-submit.

Each returns the run's summary (plain JSON) after storing the run in the state DB,
and raises :class:`AuditFailed` (carrying that summary) when source records are
missing on the target. Duplicates and extra records are reported, not failures:
at-least-once replication allows the first, and the second is not a loss.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from replicator.config import Config, load_config
from replicator.domain.audit import Status
from replicator.domain.audit_report import AuditReport
from replicator.errors import UsageError
from replicator.runbooks.audit.errors import AuditFailed
from replicator.runbooks.audit.spec import read_json
from replicator.runbooks.audit.window import TimeInput, audit_window

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)
ConfigInput = Config | str | os.PathLike[str]


def _config(config: ConfigInput) -> tuple[Config, str | None]:
    """The config, and the file it came from (the environment is read here, at the entry)."""
    if isinstance(config, Config):
        return config, None
    return load_config(Path(config), os.environ), str(Path(config).resolve())


def run_audit(config: ConfigInput, route: str, start: TimeInput, end: TimeInput, topics: Iterable[str] | None = None,
              bucket: str = "1m", *, run_key: str | None = None, spark: SparkSession | None = None,
              master: str | None = None, progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Audit ``route`` over ``[start, end)`` with an in-process Spark job; store and judge the result."""
    from replicator.runbooks.audit.local_spark import run_in_process
    from replicator.runbooks.audit.prepare import prepare_spec

    cfg, path = _config(config)
    window = audit_window(start, end, bucket)
    spec = prepare_spec(cfg, route, window, topics, run_key, path)
    log.info("audit route=%s window=%s topics=%d run_key=%s", route, window.describe(), len(spec.topics),
             spec.run_key)
    return judge(cfg, run_in_process(spec, cfg, spark, master, progress))


def prepare_audit_spec(config: str | os.PathLike[str], route: str, start: TimeInput, end: TimeInput,
                       spec_path: str | os.PathLike[str], topics: Iterable[str] | None = None, bucket: str = "1m",
                       run_key: str | None = None) -> str:
    """Write the spec file for ``spark_jobs/audit.py --spec`` (a retried task with one ``run_key`` is one run)."""
    from replicator.runbooks.audit.prepare import prepare_spec

    cfg, path = _config(config)
    spec = prepare_spec(cfg, route, audit_window(start, end, bucket), topics, run_key, path)
    return str(spec.write(spec_path))


def record_audit_result(config: ConfigInput, result_path: str | os.PathLike[str]) -> dict[str, Any]:
    """Store the result file the job wrote and judge it (AuditFailed on loss)."""
    data = read_json(result_path, "audit result")
    try:
        report = AuditReport.from_dict(data)
    except (KeyError, TypeError, ValueError) as exc:
        raise UsageError(f"audit result {result_path}: malformed: {exc!r}") from None
    return judge(_config(config)[0], report)


def judge(config: Config, report: AuditReport) -> dict[str, Any]:
    """Record ``report`` in the state DB; its summary, or AuditFailed when records are missing."""
    from replicator.state.audits import record_audit
    from replicator.state.store import StateStore

    with StateStore(config.state.url) as store:
        store.run(lambda session: record_audit(session, report))
    summary = report.summary()
    log.info("audit recorded route=%s run_key=%s status=%s missing=%d duplicates=%d extra=%d pending=%d",
             report.route, report.run_key, report.status.value, report.counts.missing, report.counts.duplicates,
             report.counts.extra, report.counts.pending)
    if report.status == Status.MISSING:
        raise AuditFailed(summary)
    return summary
