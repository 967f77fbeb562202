"""The row of a runbook's run (failover, failback): found by id, or new; what both repositories share."""

from __future__ import annotations

from typing import Any, TypeVar

from sqlalchemy.orm import Session

from replicator.domain.runbook import RunSteps
from replicator.errors import UsageError
from replicator.state.models import Base

Row = TypeVar("Row", bound=Base)


def row_to_save(session: Session, row_type: type[Row], run: RunSteps[Any], kind: str) -> Row:
    """The stored row of ``run``, or a new one added to the session; a dry run is never stored."""
    if run.request.dry_run:
        raise ValueError("a dry run is never stored")
    if run.run_id is None:
        row = row_type()
        session.add(row)
        return row
    return stored_row(session, row_type, run.run_id, kind)


def stored_row(session: Session, row_type: type[Row], run_id: int, kind: str) -> Row:
    """The row of run ``run_id``; UsageError when there is none."""
    row = session.get(row_type, run_id)
    if row is None:
        raise UsageError(f"{kind} run {run_id} is not in the state database")
    return row
