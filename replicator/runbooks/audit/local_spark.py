"""The audit job in this process: the CLI's way (the DAG submits ``spark_jobs/audit.py`` instead)."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from replicator.config import Config
from replicator.domain.audit_report import AuditReport
from replicator.paths import SPARK_JOBS_DIR
from replicator.runbooks.audit.errors import AuditJobError
from replicator.runbooks.audit.spec import AuditSpec

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def _spark_jobs_importable() -> None:
    # spark_jobs/ is not installed with the package: it sits next to it in the checkout.
    if importlib.util.find_spec("spark_jobs") is None:
        sys.path.insert(0, str(SPARK_JOBS_DIR.parent))


def run_in_process(spec: AuditSpec, config: Config, spark: SparkSession | None = None, master: str | None = None,
                   progress: Callable[[str], None] | None = None) -> AuditReport:
    """Run the job on ``spark``, else on the active session, else on one started (and stopped) here."""
    _spark_jobs_importable()
    from py4j.protocol import Py4JError  # type: ignore[import-untyped]
    from pyspark.errors import PySparkException
    from pyspark.sql import SparkSession

    from spark_jobs.audit import audit
    from spark_jobs.runner import failure_line
    from spark_jobs.session import build_session

    say = progress or (lambda _line: None)
    session = spark or SparkSession.getActiveSession()
    owned = session is None
    properties = (config.cluster(spec.source_cluster).client_properties(),
                  config.cluster(spec.target_cluster).client_properties())
    try:
        if session is None:
            session = build_session("mirrorflow-audit", master)
            session.sparkContext.setLogLevel("ERROR")  # the job reports what matters itself
        say(f"spark job started: master {session.sparkContext.master}, UI {session.sparkContext.uiWebUrl or '-'},"
            f" {len(spec.topics)} topics")
        return audit(session, spec, properties, say)
    except (Py4JError, PySparkException) as exc:
        first = failure_line(exc)
        raise AuditJobError(f"route {spec.route}: the audit's Spark job failed: {first}") from None
    finally:
        if owned and session is not None:
            session.stop()
