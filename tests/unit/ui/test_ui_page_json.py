"""The Replication page's JSON: the same data as the page, times in UTC ISO 8601."""

from __future__ import annotations

import datetime as dt
import json

from replicator.ui.page import Lag, Point, ReplicationPage, Series
from replicator.ui.page_json import page_json

T0 = dt.datetime(2026, 11, 26, 2, 0, tzinfo=dt.UTC)


def test_every_section_is_plain_json_with_utc_times() -> None:
    page = ReplicationPage(
        routes=("r",), route="r", topics=("orders",),
        series=(Series("orders", (Point(T0, 10, 9, 1, 0),)),),
        findings=({"topic": "orders", "partition": 1, "missing_offsets": "40-41", "bucket_start": T0},),
        failbacks=({"id": 1, "mode": "resync", "triggered_at": T0.replace(tzinfo=None)},),
        lag=Lag(1234, "lag 1234 records", T0, True))
    data = json.loads(json.dumps(page_json(page)))
    assert data["route"] == "r" and data["routes"] == ["r"]
    assert data["series"] == [{"topic": "orders", "points": [
        {"at": "2026-11-26T02:00:00Z", "source": 10, "target": 9, "missing": 1, "duplicates": 0}]}]
    assert data["findings"][0]["missing_offsets"] == "40-41" and data["findings"][0]["bucket_start"].endswith("Z")
    assert data["failbacks"][0]["triggered_at"] == "2026-11-26T02:00:00Z"  # a naive DB time is UTC
    assert data["lag"] == {"records": 1234, "detail": "lag 1234 records", "measured_at": "2026-11-26T02:00:00Z",
                           "breached": True}
