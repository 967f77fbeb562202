"""The audit window from user input: two times (ISO 8601, or ``now``) and a bucket size."""

from __future__ import annotations

import datetime as dt

import pendulum

from replicator.domain.audit import parse_bucket
from replicator.domain.audit_report import AuditWindow
from replicator.errors import UsageError

TimeInput = str | dt.datetime


def parse_time(value: TimeInput, what: str) -> int:
    """Epoch ms of ``value``: a datetime (naive = UTC), ``now``, or an ISO 8601 text (no offset = UTC)."""
    if isinstance(value, dt.datetime):
        aware = value if value.tzinfo else value.replace(tzinfo=dt.UTC)
        return round(aware.timestamp() * 1000)
    text = value.strip()
    if text.lower() == "now":
        return round(pendulum.now("UTC").timestamp() * 1000)
    try:
        parsed = pendulum.parse(text, tz="UTC")
    except ValueError:  # pendulum's ParserError included
        parsed = None
    if isinstance(parsed, dt.datetime):
        return round(parsed.timestamp() * 1000)
    if isinstance(parsed, dt.date):  # a day alone: its midnight, UTC
        return round(pendulum.datetime(parsed.year, parsed.month, parsed.day, tz="UTC").timestamp() * 1000)
    raise UsageError(f"{what}: cannot read {text!r} as a time (ISO 8601 like 2026-11-27T10:00:00Z, or now)")


def audit_window(start: TimeInput, end: TimeInput, bucket: str | int = "1m",
                 names: tuple[str, str] = ("start", "end")) -> AuditWindow:
    """The window ``[start, end)`` in buckets (``1m``, ``30s``, ... or ms); UsageError naming what is wrong."""
    start_ms, end_ms = parse_time(start, names[0]), parse_time(end, names[1])
    try:
        bucket_ms = bucket if isinstance(bucket, int) else parse_bucket(bucket)
        return AuditWindow(start_ms, end_ms, bucket_ms)
    except ValueError as exc:
        detail = str(exc).removeprefix("audit window: ")
        if end_ms <= start_ms:
            detail = f"{names[0]} {start!s} is not before {names[1]} {end!s}"
        raise UsageError(detail) from None
