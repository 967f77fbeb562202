"""The DAG forms' patterns take what the runbooks' parsers take, and refuse what they refuse (``from: yesterday``
was caught only after the run was triggered)."""

from __future__ import annotations

import re

import pytest

from replicator.airflow import param_schemas as schemas
from replicator.domain.failover import parse_duration, parse_instant
from replicator.errors import UsageError
from replicator.runbooks.audit.window import parse_time
from replicator.runbooks.backfill.plan import parse_offset_ranges


def _takes(parse: object, value: str) -> bool:
    try:
        parse(value)  # type: ignore[operator]
    except (UsageError, ValueError):
        return False
    return True


@pytest.mark.parametrize("value", ["2026-11-27", "2026-11-27T10:00:00Z", "2026-11-27T10:00", "2026-11-27 10:00:00",
                                   "2026-11-27T10:00:00.123+01:00", "now", "NOW", "yesterday", "27/11/2026",
                                   "2026-11-27T10", "", "1h"])
def test_the_time_pattern_agrees_with_the_windows_parser(value: str) -> None:
    assert bool(re.match(schemas.TIME, value)) == _takes(lambda v: parse_time(v, "from"), value), value


@pytest.mark.parametrize("value", ["2026-11-01T12:00:00Z", "2026-11-01T12:00", "2026-11-01 12:00:00+01:00",
                                   "2026-11-01", "now", "noon", "2026-11-01T12:00:00Zx"])
def test_the_instant_pattern_takes_only_what_a_failover_reads(value: str) -> None:
    matched = bool(re.match(schemas.INSTANT, value))
    assert not matched or _takes(lambda v: parse_instant(v, "at"), value), value
    assert matched == (value not in ("2026-11-01", "now", "noon", "2026-11-01T12:00:00Zx")), value


@pytest.mark.parametrize("value", ["60", "60s", " 5m ", "1h", "1d", "-5", "5 min", ""])
def test_the_duration_pattern_agrees_with_parse_duration(value: str) -> None:
    assert bool(re.match(schemas.DURATION, value)) == _takes(parse_duration, value), value


@pytest.mark.parametrize("value", ["0=5", "0=5,1=7", " 0 = 5 , 1=7 ", "0:5", "0=", "a=1", "0=5,", ""])
def test_the_offsets_pattern_agrees_with_the_backfill_parser(value: str) -> None:
    assert bool(re.match(schemas.OFFSETS, value)) == _takes(lambda v: parse_offset_ranges(v, None), value), value
