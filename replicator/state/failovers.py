"""Repository functions of failover runs: take a session, return domain objects.

A run is saved after each step (one row, its steps and its offsets rewritten in
place), so a run that stopped midway shows where; a re-run loads it and goes on.
A route is *held* (``mirrorflow run`` refuses it) from the moment a run records it
stopped until that run is released.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Collection
from dataclasses import dataclass, replace

from sqlalchemy import select
from sqlalchemy.orm import Session

from replicator.domain.failover import FailoverMode, FailoverRequest, Step, StepRecord, StepStatus
from replicator.domain.failover_run import FailoverRun, PartitionLag, Rpo, RpoBasis, RunStatus, open_transactions
from replicator.domain.fence import FenceRecord
from replicator.domain.resume_point import Basis, GroupCommit, ResumePoint
from replicator.domain.target_group import TargetOutcome
from replicator.state.models import FailoverOffsetRow, FailoverRunRow, FailoverStepRow
from replicator.state.run_rows import row_to_save, stored_row
from replicator.state.times import utc


@dataclass(frozen=True, slots=True)
class RouteHold:
    """A failover run that stopped a route and was not released."""

    run_id: int
    route: str
    target: str
    status: str
    stopped_at: dt.datetime


def save_run(session: Session, run: FailoverRun) -> FailoverRun:
    """Insert or update ``run`` (never a dry run); returns it with its ``run_id``."""
    row = row_to_save(session, FailoverRunRow, run, "failover")
    req = run.request
    row.route, row.source_cluster, row.target_cluster, row.route_group = req.route, run.source, run.target, \
        run.route_group
    row.mode, row.groups, row.at = req.mode.value, None if req.groups is None else json.dumps(list(req.groups)), req.at
    row.margin_seconds, row.drain_timeout_seconds = req.margin_seconds, req.drain_timeout_seconds
    row.stop_timeout_seconds, row.status = req.stop_timeout_seconds, run.status.value
    row.stopped_at_step = None if run.stopped_at is None else run.stopped_at.value
    row.source_reachable, row.rto_seconds = run.source_reachable, run.rto_seconds
    rpo = run.rpo
    row.rpo_records, row.rpo_basis = (None, None) if rpo is None else (rpo.records, rpo.basis.value)
    row.rpo_as_of = None if rpo is None else rpo.as_of
    row.rpo_partitions = None if rpo is None else json.dumps([list(p) for p in rpo.partitions])
    row.lags = json.dumps([[x.topic, x.partition, x.end_offset, x.replicated, x.pending, x.open_records,
                            x.stable_end] for x in run.lags])
    row.notes = "\n".join(run.notes) or None
    row.triggered_at, row.route_stopped_at, row.finished_at = run.triggered_at, run.route_stopped_at, \
        run.finished_at
    row.abandoned_at = run.abandoned_at
    row.fence, row.accept_bypass = req.fence, req.accept_bypass
    row.topics = None if req.topics is None else json.dumps(list(req.topics))
    row.fence_record = None if run.fence is None else json.dumps(run.fence.to_dict())
    _save_steps(row, run.steps)
    _save_offsets(row, run.commits or tuple(GroupCommit(p, TargetOutcome.PLANNED) for p in run.points),
                  planned=bool(run.commits))
    session.flush()
    return replace(run, run_id=row.id)


def _save_steps(row: FailoverRunRow, steps: tuple[StepRecord[Step], ...]) -> None:
    # Updated in place: replacing the rows would insert before deleting, against the unique key.
    existing = {s.step: s for s in row.steps}
    for position, record in enumerate(steps):
        step_row = existing.get(record.step.value)
        if step_row is None:
            step_row = FailoverStepRow(step=record.step.value)
            row.steps.append(step_row)
        step_row.position, step_row.status, step_row.detail = position, record.status.value, record.detail
        step_row.error, step_row.started_at, step_row.finished_at = record.error, record.started_at, \
            record.finished_at


def _save_offsets(row: FailoverRunRow, commits: tuple[GroupCommit, ...], planned: bool) -> None:
    existing = {(o.group_id, o.target_topic, o.partition): o for o in row.offsets}
    wanted = {(c.point.group, c.point.target_topic, c.point.partition): c for c in commits}
    for key, gone in existing.items():
        if key not in wanted:
            row.offsets.remove(gone)
    for key, commit in wanted.items():
        offset_row = existing.get(key) or FailoverOffsetRow(group_id=key[0], target_topic=key[1], partition=key[2])
        if key not in existing:
            row.offsets.append(offset_row)
        p = commit.point
        offset_row.topic, offset_row.target_offset, offset_row.basis = p.topic, p.target_offset, p.basis.value
        offset_row.source_offset, offset_row.max_repeats, offset_row.as_of = p.source_offset, p.max_repeats, p.as_of
        offset_row.outcome = commit.outcome.value if planned else None
        offset_row.current_offset, offset_row.verified_offset = commit.current, commit.verified
        offset_row.error = commit.error


def load_run(session: Session, run_id: int) -> FailoverRun:
    """The stored run ``run_id``; UsageError when there is none."""
    return _to_domain(stored_row(session, FailoverRunRow, run_id, "failover"))


def unfinished_run(session: Session, route: str) -> FailoverRun | None:
    """The route's latest run that is running or failed (the one a re-run resumes), if any."""
    row = session.scalar(select(FailoverRunRow).where(
        FailoverRunRow.route == route,
        FailoverRunRow.status.in_([RunStatus.RUNNING.value, RunStatus.FAILED.value]))
        .order_by(FailoverRunRow.id.desc()).limit(1))
    return None if row is None else _to_domain(row)


def runs(session: Session, route: str, limit: int = 20) -> list[FailoverRun]:
    """The route's latest runs, newest first."""
    rows = session.scalars(select(FailoverRunRow).where(FailoverRunRow.route == route)
                           .order_by(FailoverRunRow.id.desc()).limit(limit))
    return [_to_domain(r) for r in rows]


def route_hold(session: Session, route: str) -> RouteHold | None:
    """The latest run that stopped ``route`` and was not released (None: the route may run)."""
    row = session.scalar(select(FailoverRunRow).where(
        FailoverRunRow.route == route, FailoverRunRow.route_stopped_at.is_not(None),
        FailoverRunRow.released_at.is_(None)).order_by(FailoverRunRow.id.desc()).limit(1))
    if row is None or row.route_stopped_at is None:
        return None
    return RouteHold(row.id, row.route, row.target_cluster, row.status, utc(row.route_stopped_at))


def topics_run(session: Session, route: str, topics: Collection[str]) -> int | None:
    """The latest finished per-topic failover run of ``route`` that moved one of ``topics``."""
    rows = session.scalars(select(FailoverRunRow).where(
        FailoverRunRow.route == route, FailoverRunRow.topics.is_not(None),
        FailoverRunRow.status == RunStatus.DONE.value).order_by(FailoverRunRow.id.desc()))
    return next((row.id for row in rows if set(json.loads(row.topics or "[]")) & set(topics)), None)


def release_route(session: Session, route: str, at: dt.datetime) -> list[int]:
    """Release every run holding ``route``; returns their ids (empty: it was not held)."""
    rows = session.scalars(select(FailoverRunRow).where(
        FailoverRunRow.route == route, FailoverRunRow.route_stopped_at.is_not(None),
        FailoverRunRow.released_at.is_(None))).all()
    for row in rows:
        row.released_at = at
    session.flush()
    return sorted(r.id for r in rows)


def _to_domain(row: FailoverRunRow) -> FailoverRun:
    request = FailoverRequest(row.route, None if row.groups is None else tuple(json.loads(row.groups)),
                              FailoverMode(row.mode), _maybe(row.at), row.margin_seconds,
                              row.drain_timeout_seconds, row.stop_timeout_seconds, fence=bool(row.fence),
                              accept_bypass=bool(row.accept_bypass),
                              topics=None if row.topics is None else tuple(json.loads(row.topics)))
    steps = tuple(StepRecord(Step(s.step), StepStatus(s.status), s.detail, s.error, _maybe(s.started_at),
                             _maybe(s.finished_at)) for s in row.steps)
    offsets = sorted(row.offsets, key=lambda o: (o.group_id, o.topic, o.partition))
    commits = tuple(GroupCommit(_point(o), TargetOutcome(o.outcome), o.current_offset, o.error, o.verified_offset)
                    for o in offsets if o.outcome is not None)
    lags = tuple(PartitionLag(*x) for x in json.loads(row.lags or "[]"))
    rpo = None if row.rpo_basis is None else Rpo(
        row.rpo_records, RpoBasis(row.rpo_basis), _maybe(row.rpo_as_of),
        tuple((t, p, n) for t, p, n in json.loads(row.rpo_partitions or "[]")),
        open_transactions(lags) if row.rpo_basis == RpoBasis.MEASURED.value else ())
    return FailoverRun(
        request, row.source_cluster, row.target_cluster, row.route_group, utc(row.triggered_at), steps, row.id,
        row.source_reachable, tuple(_point(o) for o in offsets), commits,
        lags, rpo, _maybe(row.route_stopped_at), _maybe(row.finished_at), _maybe(row.abandoned_at),
        tuple(row.notes.splitlines()) if row.notes else (), _fence(row),
    )


def _fence(row: FailoverRunRow) -> FenceRecord | None:
    return None if row.fence_record is None else FenceRecord.from_dict(json.loads(row.fence_record))


def raised_fences(session: Session, route: str) -> list[tuple[int, FenceRecord]]:
    """(run id, fence) of the route's failover runs whose fence is still raised, oldest first."""
    rows = session.scalars(select(FailoverRunRow).where(
        FailoverRunRow.route == route, FailoverRunRow.fence_record.is_not(None)).order_by(FailoverRunRow.id))
    return [(row.id, fence) for row in rows if (fence := _fence(row)) is not None and fence.lifted_at is None]


def save_fence(session: Session, run_id: int, fence: FenceRecord) -> None:
    """Record what became of run ``run_id``'s fence (lifted)."""
    row = stored_row(session, FailoverRunRow, run_id, "failover")
    row.fence_record = json.dumps(fence.to_dict())
    session.flush()


def _point(o: FailoverOffsetRow) -> ResumePoint:
    return ResumePoint(o.group_id, o.topic, o.partition, o.target_topic, o.target_offset, Basis(o.basis),
                       o.source_offset, o.max_repeats, _maybe(o.as_of))


def _maybe(value: dt.datetime | None) -> dt.datetime | None:
    return None if value is None else utc(value)

