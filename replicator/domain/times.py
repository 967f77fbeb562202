"""How MirrorFlow shows an instant to people: one format, in UTC, everywhere (pure)."""

from __future__ import annotations

import datetime as dt


def utc_text(value: dt.datetime) -> str:
    """``2026-11-26 03:00:05Z``: UTC (a naive value is taken as UTC)."""
    aware = value if value.tzinfo else value.replace(tzinfo=dt.UTC)
    return aware.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M:%SZ")
