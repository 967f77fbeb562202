"""Audits of a route's replicas: prepare (topics, committed offsets), run the Spark job, record, judge.

:func:`run_audit` does it all in one process (``mirrorflow audit``). The DAG splits
it around a ``SparkSubmitOperator``: :func:`prepare_audit_spec` writes the job's
spec file, ``spark_jobs/audit.py --spec ... --output ...`` writes the result file,
:func:`record_audit_result` stores it and raises :class:`AuditFailed` on loss.
"""

from __future__ import annotations

from replicator.runbooks.audit.errors import AuditFailed, AuditJobError
from replicator.runbooks.audit.run import prepare_audit_spec, record_audit_result, run_audit

__all__ = ["AuditFailed", "AuditJobError", "prepare_audit_spec", "record_audit_result", "run_audit"]
