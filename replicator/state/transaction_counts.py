"""Repository functions of the transactions an exactly-once route's workers committed and aborted.

Each worker process counts its own and stores the counts as they stand (a row per run, upserted by the
run's key): a write stored twice, or kept while the DB was away and stored late, is harmless. A route's
totals are the sums over its rows, every run of every worker since the route began.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from replicator.state.models import TransactionCountRow
from replicator.state.times import utc


@dataclass(frozen=True, slots=True)
class RunCounts:
    """One worker process's transactions so far."""

    run_key: str
    route: str
    worker: str
    committed: int
    aborted: int
    started_at: dt.datetime
    updated_at: dt.datetime


@dataclass(frozen=True, slots=True)
class TransactionTotals:
    """A route's transactions, over every run of its workers; ``since``: the first run's start."""

    committed: int
    aborted: int
    since: dt.datetime | None


def save_counts(session: Session, counts: RunCounts) -> None:
    """Store the run's counts as they stand (never lower than what is stored: a late write of older counts
    changes nothing)."""
    row = session.scalar(select(TransactionCountRow).where(TransactionCountRow.run_key == counts.run_key))
    if row is None:
        row = TransactionCountRow(run_key=counts.run_key, route=counts.route, worker=counts.worker, committed=0,
                                  aborted=0, started_at=counts.started_at, updated_at=counts.updated_at)
        session.add(row)
    row.committed, row.aborted = max(row.committed, counts.committed), max(row.aborted, counts.aborted)
    row.updated_at = max(utc(row.updated_at), counts.updated_at)
    session.flush()


def totals(session: Session, route: str) -> TransactionTotals:
    """The route's transactions committed and aborted, every run of every worker summed."""
    committed, aborted, since = session.execute(
        select(func.coalesce(func.sum(TransactionCountRow.committed), 0),
               func.coalesce(func.sum(TransactionCountRow.aborted), 0),
               func.min(TransactionCountRow.started_at)).where(TransactionCountRow.route == route)).one()
    return TransactionTotals(int(committed), int(aborted), None if since is None else utc(since))
