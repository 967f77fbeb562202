"""Repository functions of backfill runs: take a session, return domain objects; a run is upserted by its key.

A run is saved once its ranges are planned (``running``) and again when it ends, so
a retried task (same key) rewrites its own row, never adds a second one.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from sqlalchemy import select
from sqlalchemy.orm import Session

from replicator.domain.backfill_run import BackfillMode, BackfillRun, BackfillStatus, PartitionRange
from replicator.state.models import BackfillRunRow
from replicator.state.times import utc


def save_run(session: Session, run: BackfillRun) -> BackfillRun:
    """Insert ``run``, or update the run stored under its key; returns it."""
    row = session.scalar(select(BackfillRunRow).where(BackfillRunRow.run_key == run.run_key))
    if row is None:
        row = BackfillRunRow(run_key=run.run_key)
        session.add(row)
    row.route, row.topic, row.target_topic, row.mode = run.route, run.topic, run.target_topic, run.mode.value
    row.ranges = json.dumps([{"partition": r.partition, "start": r.start, "end": r.end, "clamped": r.clamped}
                             for r in run.ranges])
    row.status, row.records_written, row.records_total = run.status.value, run.written, run.total
    row.overlap_ok, row.started_at, row.finished_at, row.error = (run.overlap_ok, run.started_at,
                                                                  run.finished_at, run.error)
    session.flush()
    return run


def load_run(session: Session, run_key: str) -> BackfillRun | None:
    """The run stored under ``run_key``, if any."""
    row = session.scalar(select(BackfillRunRow).where(BackfillRunRow.run_key == run_key))
    return None if row is None else _run(row)


def runs(session: Session, route: str, topic: str | None = None,
         statuses: Iterable[BackfillStatus] | None = None, limit: int | None = None) -> list[BackfillRun]:
    """The runs of ``route`` (of ``topic``, in ``statuses``, when given), newest first."""
    query = select(BackfillRunRow).where(BackfillRunRow.route == route).order_by(BackfillRunRow.id.desc())
    if topic is not None:
        query = query.where(BackfillRunRow.topic == topic)
    if statuses is not None:
        query = query.where(BackfillRunRow.status.in_([s.value for s in statuses]))
    return [_run(row) for row in session.scalars(query.limit(limit))]


def _run(row: BackfillRunRow) -> BackfillRun:
    ranges = tuple(PartitionRange(int(r["partition"]), int(r["start"]), int(r["end"]), bool(r["clamped"]))
                   for r in json.loads(row.ranges))
    return BackfillRun(row.run_key, row.route, row.topic, row.target_topic, BackfillMode(row.mode), ranges,
                       utc(row.started_at), BackfillStatus(row.status), row.overlap_ok, row.records_written,
                       None if row.finished_at is None else utc(row.finished_at), row.error)

