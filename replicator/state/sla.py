"""Repository functions of SLA checks: take a session, return domain objects.

The states are upserted by (route, check); an event is stored in the same
transaction as the state change that caused it, and marked once its alert is sent,
so a retried task re-sends what was not sent and never invents a second alert.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from replicator.domain.sla import Check, CheckState, EventKind, RecordedEvent, SlaEvent, State
from replicator.state.models import LagSampleRow, RouteSampleRow, SlaEventRow, SlaStateRow

LAG_HISTORY_DAYS = 7  # lag samples older than this go when new ones are stored


def _at(ms: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC)


def _ms(value: dt.datetime) -> int:
    # SQLite hands timezone-aware columns back naive; they were written in UTC.
    aware = value if value.tzinfo else value.replace(tzinfo=dt.UTC)
    return round(aware.timestamp() * 1000)


def check_states(session: Session, route: str) -> dict[Check, CheckState]:
    """The stored state of each check of ``route`` (a check never evaluated is absent)."""
    rows = session.scalars(select(SlaStateRow).where(SlaStateRow.route == route))
    return {Check(r.check): CheckState(r.route, Check(r.check), State(r.state), _ms(r.since), r.detail)
            for r in rows}


def record_step(session: Session, states: Iterable[CheckState], events: Iterable[SlaEvent],
                checked_ms: int) -> list[int]:
    """Upsert ``states`` and store ``events`` (not yet notified); returns the events' ids."""
    for state in states:
        row = session.scalar(select(SlaStateRow).where(SlaStateRow.route == state.route,
                                                       SlaStateRow.check == state.check.value))
        if row is None:
            row = SlaStateRow(route=state.route, check=state.check.value)
            session.add(row)
        row.state, row.since, row.detail = state.state.value, _at(state.since_ms), state.detail
        row.checked_at = _at(checked_ms)
    rows = [SlaEventRow(route=e.route, check=e.check.value, kind=e.kind.value, at=_at(e.at_ms), detail=e.detail)
            for e in events]
    session.add_all(rows)
    session.flush()
    return [row.id for row in rows]


def _recorded(row: SlaEventRow) -> RecordedEvent:
    event = SlaEvent(row.route, Check(row.check), EventKind(row.kind), _ms(row.at), row.detail)
    return RecordedEvent(row.id, event, None if row.notified_at is None else _ms(row.notified_at), row.notify_error)


def pending_events(session: Session, route: str) -> list[RecordedEvent]:
    """The route's events whose alert has not gone out yet, oldest first."""
    rows = session.scalars(select(SlaEventRow).where(SlaEventRow.route == route, SlaEventRow.notified_at.is_(None))
                           .order_by(SlaEventRow.at, SlaEventRow.id))
    return [_recorded(r) for r in rows]


def mark_notified(session: Session, event_id: int, at_ms: int) -> None:
    """The alert of event ``event_id`` went out."""
    row = session.get(SlaEventRow, event_id)
    if row is None:
        raise LookupError(f"SLA event {event_id} is not stored")
    row.notified_at, row.notify_error = _at(at_ms), None


def mark_failed(session: Session, event_id: int, error: str) -> None:
    """The alert of event ``event_id`` could not be sent (``error`` must hold no secret)."""
    row = session.get(SlaEventRow, event_id)
    if row is None:
        raise LookupError(f"SLA event {event_id} is not stored")
    row.notify_error = error


def sla_events(session: Session, route: str, limit: int = 50) -> list[RecordedEvent]:
    """The route's breaches and recoveries, newest first."""
    rows = session.scalars(select(SlaEventRow).where(SlaEventRow.route == route)
                           .order_by(SlaEventRow.at.desc(), SlaEventRow.id.desc()).limit(limit))
    return [_recorded(r) for r in rows]


def record_route_sample(session: Session, route: str, at_ms: int, copied: int | None, latency_ms: int | None) -> None:
    """Store what was measured at ``at_ms`` (records copied so far, the latency; None: not measured); drop the
    route's samples older than ``LAG_HISTORY_DAYS``."""
    at = _at(at_ms)
    if copied is not None or latency_ms is not None:
        session.add(RouteSampleRow(route=route, at=at, copied=copied, latency_ms=latency_ms))
    session.execute(delete(RouteSampleRow).where(RouteSampleRow.route == route,
                                                 RouteSampleRow.at < at - dt.timedelta(days=LAG_HISTORY_DAYS)))


def record_lag_samples(session: Session, route: str, at_ms: int, lags: Iterable[tuple[str, int]]) -> None:
    """Store each topic's lag measured at ``at_ms``; drop the route's samples older than ``LAG_HISTORY_DAYS``."""
    at = _at(at_ms)
    session.add_all(LagSampleRow(route=route, topic=topic, at=at, lag=lag) for topic, lag in lags)
    session.execute(delete(LagSampleRow).where(LagSampleRow.route == route,
                                               LagSampleRow.at < at - dt.timedelta(days=LAG_HISTORY_DAYS)))
