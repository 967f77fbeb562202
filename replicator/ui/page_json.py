"""The Replication page's data as JSON, for scripts and dashboards (the page's REST twin; pure)."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Mapping
from typing import Any

from replicator.ui.page import ReplicationPage


def _plain(value: Any) -> Any:
    if isinstance(value, dt.datetime):
        aware = value if value.tzinfo else value.replace(tzinfo=dt.UTC)
        return aware.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    return value


def page_json(page: ReplicationPage) -> dict[str, Any]:
    """Every section of the page as plain JSON (times in UTC ISO 8601), the same rows the page shows."""
    out: dict[str, Any] = _plain(page)
    return out
