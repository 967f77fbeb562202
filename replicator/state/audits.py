"""Repository functions of audits: take a session, return domain objects; a run is upserted by its key.

Recording a report whose ``run_key`` is already stored replaces that run and its
results, so a retried task (same key) leaves one run, never two.
"""

from __future__ import annotations

import datetime as dt
import json

import pendulum
from sqlalchemy import select
from sqlalchemy.orm import Session

from replicator.domain.audit import BucketKey, BucketResult, Status
from replicator.domain.audit_report import AuditReport, AuditRunInfo, AuditWindow, Counts
from replicator.domain.offset_ranges import OffsetRange, format_ranges, parse_ranges
from replicator.state.models import AuditResultRow, AuditRunRow
from replicator.state.times import utc

RANGES_STORED = 100  # offset ranges kept per list and bucket; the counts are always exact


def _at(ms: int) -> dt.datetime:
    return pendulum.from_timestamp(ms / 1000, tz="UTC")


def _ms(value: dt.datetime) -> int:
    aware = utc(value)
    return round(aware.timestamp() * 1000)


def record_audit(session: Session, report: AuditReport) -> int:
    """Store ``report`` (replacing a run stored under the same key); returns the run's id."""
    old = session.scalar(select(AuditRunRow).where(AuditRunRow.run_key == report.run_key))
    if old is not None:
        session.delete(old)
        session.flush()
    counts, window = report.counts, report.window
    run = AuditRunRow(
        run_key=report.run_key, route=report.route, status=report.status.value,
        window_start=_at(window.start_ms), window_end=_at(window.end_ms), bucket_seconds=window.bucket_ms // 1000,
        topics=json.dumps(dict(sorted(report.topics.items()))), source_records=counts.source,
        target_records=counts.target, pending=counts.pending, missing=counts.missing,
        duplicates=counts.duplicates, extra=counts.extra, notes="\n".join(report.notes) or None,
        started_at=_at(report.started_ms), finished_at=_at(report.finished_ms),
    )
    run.results = [_result_row(report, r) for r in sorted(report.results, key=lambda r: r.key)]
    session.add(run)
    session.flush()
    return run.id


def _result_row(report: AuditReport, result: BucketResult) -> AuditResultRow:
    def text(ranges: tuple[OffsetRange, ...]) -> str | None:
        return format_ranges(ranges, RANGES_STORED) or None

    key = result.key
    return AuditResultRow(
        route=report.route, topic=key.topic, target_topic=report.topics.get(key.topic, key.topic),
        partition=key.partition, bucket_start=_at(key.start_ms), status=result.status.value,
        source_count=result.source_count, target_count=result.target_count, pending=result.pending,
        missing_count=result.missing_count, duplicate_count=result.duplicate_count,
        extra_count=result.extra_count, missing_offsets=text(result.missing),
        duplicate_offsets=text(result.duplicated), extra_offsets=text(result.extra),
    )


def audit_report(session: Session, run_key: str) -> AuditReport | None:
    """The stored run ``run_key`` with every bucket (offset lists as stored: the first ranges)."""
    run = session.scalar(select(AuditRunRow).where(AuditRunRow.run_key == run_key))
    if run is None:
        return None
    results = tuple(
        BucketResult(BucketKey(r.topic, r.partition, _ms(r.bucket_start)), r.source_count, r.target_count,
                     r.pending, r.missing_count, r.duplicate_count, r.extra_count, parse_ranges(r.missing_offsets),
                     parse_ranges(r.duplicate_offsets), parse_ranges(r.extra_offsets))
        for r in sorted(run.results, key=lambda r: (r.topic, r.partition, r.bucket_start))
    )
    notes = tuple(run.notes.splitlines()) if run.notes else ()
    return AuditReport(run.run_key, run.route, _window(run), json.loads(run.topics), results,
                       _ms(run.started_at), _ms(run.finished_at), notes)


def _window(run: AuditRunRow) -> AuditWindow:
    return AuditWindow(_ms(run.window_start), _ms(run.window_end), run.bucket_seconds * 1000)


def audit_runs(session: Session, route: str, limit: int = 20) -> list[AuditRunInfo]:
    """The route's latest audit runs, newest first."""
    rows = session.scalars(select(AuditRunRow).where(AuditRunRow.route == route)
                           .order_by(AuditRunRow.started_at.desc(), AuditRunRow.id.desc()).limit(limit))
    return [
        AuditRunInfo(r.run_key, r.route, _window(r), Status(r.status),
                     Counts(r.source_records, r.target_records, r.pending, r.missing, r.duplicates, r.extra),
                     _ms(r.started_at), _ms(r.finished_at))
        for r in rows
    ]
