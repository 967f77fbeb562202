"""Repository functions of failback runs: take a session, return domain objects.

A run is saved after each step (its row rewritten in place), so a run that stopped
midway shows where, and a re-run loads it and goes on.
"""

from __future__ import annotations

import json

from sqlalchemy import select
from sqlalchemy.orm import Session

from replicator.domain.failback import FailbackRun, FailbackStatus, run_from_dict
from replicator.state.models import FailbackRunRow
from replicator.state.run_rows import row_to_save, stored_row


def save_run(session: Session, run: FailbackRun) -> FailbackRun:
    """Insert or update ``run`` (never a dry run); returns it with its ``run_id``."""
    row = row_to_save(session, FailbackRunRow, run, "failback")
    row.route, row.mode = run.request.route, run.request.mode.value
    row.primary_cluster, row.backup_cluster = run.primary, run.backup
    row.status, row.stopped_at_step = run.status.value, None if run.stopped_at is None else run.stopped_at.value
    row.failover_run_id, row.records_copied = run.failover_run_id, run.copied
    row.unreplicated_records, row.not_copied_records = run.unreplicated_records, run.not_copied
    row.rto_seconds, row.triggered_at, row.finished_at = run.rto_seconds, run.triggered_at, run.finished_at
    failed = [s for s in run.steps if s.error]
    row.error = failed[-1].error if failed and run.status == FailbackStatus.FAILED else None
    row.run_json = "{}"
    session.flush()
    stored = FailbackRun(**{**{f: getattr(run, f) for f in run.__dataclass_fields__}, "run_id": row.id})
    row.run_json = json.dumps(stored.to_dict())
    session.flush()
    return stored


def load_run(session: Session, run_id: int) -> FailbackRun:
    """The stored run ``run_id``; UsageError when there is none."""
    return run_from_dict(json.loads(stored_row(session, FailbackRunRow, run_id, "failback").run_json))


def unfinished_run(session: Session, route: str) -> FailbackRun | None:
    """The route's latest run that is running or failed (the one a re-run resumes), if any."""
    row = session.scalar(select(FailbackRunRow).where(
        FailbackRunRow.route == route,
        FailbackRunRow.status.in_([FailbackStatus.RUNNING.value, FailbackStatus.FAILED.value]))
        .order_by(FailbackRunRow.id.desc()).limit(1))
    return None if row is None else run_from_dict(json.loads(row.run_json))


def runs(session: Session, route: str | None = None, limit: int = 20) -> list[FailbackRun]:
    """The latest runs (of ``route``, or all), newest first."""
    query = select(FailbackRunRow).order_by(FailbackRunRow.id.desc()).limit(limit)
    if route is not None:
        query = query.where(FailbackRunRow.route == route)
    return [run_from_dict(json.loads(r.run_json)) for r in session.scalars(query)]
