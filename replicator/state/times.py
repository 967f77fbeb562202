"""Times read back from the state DB."""

from __future__ import annotations

import datetime as dt


def utc(value: dt.datetime) -> dt.datetime:
    """``value`` as an aware UTC datetime: SQLite hands timezone-aware columns back naive (written in UTC)."""
    return value if value.tzinfo else value.replace(tzinfo=dt.UTC)
