"""The plain-JSON form of a runbook's run record (failover, failback): what DAG tasks hand on and the
state DB keeps. Times are UTC ISO 8601 with a ``Z``; enums their values; dataclasses dicts."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import fields
from enum import StrEnum
from typing import Any

from replicator.domain.resume_point import Basis, ResumePoint


def plain(value: Any) -> Any:
    """``value`` as JSON-ready data."""
    if isinstance(value, dt.datetime):
        return iso(value)
    if isinstance(value, StrEnum):
        return value.value
    if isinstance(value, tuple | list):
        return [plain(v) for v in value]
    if hasattr(value, "__dataclass_fields__"):
        return {f.name: plain(getattr(value, f.name)) for f in fields(value)}
    return value


def iso(value: dt.datetime | None) -> str | None:
    """UTC ISO 8601 with a ``Z`` (None stays None)."""
    return None if value is None else value.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")


def parse_time(value: str | None) -> dt.datetime | None:
    """What :func:`iso` wrote (Python 3.11 reads the ``Z``)."""
    return None if value is None else dt.datetime.fromisoformat(value)


def required_time(value: str | None, what: str) -> dt.datetime:
    """A time that must be there; ValueError naming ``what`` otherwise."""
    parsed = parse_time(value)
    if parsed is None:
        raise ValueError(f"{what} is missing")
    return parsed


def point_from(p: Mapping[str, Any]) -> ResumePoint:
    """The resume point :func:`plain` wrote."""
    return ResumePoint(p["group"], p["topic"], p["partition"], p["target_topic"], p["target_offset"],
                       Basis(p["basis"]), p["source_offset"], p["max_repeats"], parse_time(p["as_of"]))
