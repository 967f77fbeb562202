"""Backfills: copy a historical range of a route's topic to its replica with Spark, then audit it.

:func:`run_backfill` does it in one process (``mirrorflow backfill``). The DAG splits
it around ``SparkSubmitOperator``: :func:`prepare_backfill_spec` writes the job's
spec, ``spark_jobs/backfill.py --spec ... --output ...`` copies and checks the copy by
offsets, :func:`backfill_result` judges it. The range never reaches into what the route copies itself,
nor into what a done or running backfill copied (runs are recorded in ``mf_backfill_run``), unless the
caller says so (``overlap_ok``).
"""

from __future__ import annotations

from replicator.runbooks.backfill.run import (
    BackfillIncomplete,
    BackfillJobError,
    backfill_result,
    prepare_backfill_spec,
    run_backfill,
)

__all__ = ["BackfillIncomplete", "BackfillJobError", "backfill_result", "prepare_backfill_spec", "run_backfill"]
