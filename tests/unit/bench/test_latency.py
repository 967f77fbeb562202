"""The latency bench's pure parts: added over the floor, shares within bounds, the load's first record."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))  # the bench's scripts import by file name

from latency_figures import added_over_floor, histogram_shares, load_start, paired_added, shares_within


@pytest.mark.parametrize(
    ("peer", "floor", "expected"),
    [
        ({"p50_ms": 12.0, "p99_ms": 40.0}, {"p50_ms": 4.0, "p99_ms": 15.0}, {"p50_ms": 8.0, "p99_ms": 25.0}),
        ({"p50_ms": 3.0, "p99_ms": 10.0}, {"p50_ms": 4.0, "p99_ms": 10.0}, {"p50_ms": -1.0, "p99_ms": 0.0}),
        ({"p50_ms": None, "p99_ms": 10.0}, {"p50_ms": 4.0, "p99_ms": None}, {"p50_ms": None, "p99_ms": None}),
        ({}, {"p50_ms": 4.0, "p99_ms": 9.0}, {"p50_ms": None, "p99_ms": None}),
    ],
)
def test_added_over_floor(peer: dict[str, float], floor: dict[str, float], expected: dict[str, float]) -> None:
    assert added_over_floor(peer, floor) == expected


@pytest.mark.parametrize(
    ("latencies", "bounds", "expected"),
    [
        ([1.0, 5.0, 6.0, 30.0], (5, 10, 25), {"5": 0.5, "10": 0.75, "25": 0.75}),
        ([], (5,), {"5": None}),
        ([0.5, 0.5], (2.5,), {"2.5": 1.0}),
    ],
)
def test_shares_within(latencies: list[float], bounds: tuple[float, ...], expected: dict[str, float]) -> None:
    assert shares_within(latencies, bounds) == expected


def test_histogram_shares() -> None:
    hist = {"count": 8.0, "buckets": {0.005: 2.0, 0.01: 6.0, 0.025: 8.0, float("inf"): 8.0}}
    assert histogram_shares(hist, (5, 10, 25, 50)) == {"5": 0.25, "10": 0.75, "25": 1.0, "50": None}
    assert histogram_shares({"count": 0.0, "buckets": {0.005: 0.0}}, (5,)) == {"5": None}


@pytest.mark.parametrize(
    ("samples", "launched", "expected"),
    [
        ([(100, 1.0), (2000, 3.0), (1500, 2.0)], 1000, 1500),  # the probe created at 100 is older
        ([(100, 1.0)], 1000, None),
        ([], 0, None),
    ],
)
def test_load_start(samples: list[tuple[int, float]], launched: float, expected: int | None) -> None:
    assert load_start(samples, launched) == expected


def test_paired_added() -> None:
    floor = {(0, 1): (1000, 5.0), (0, 2): (1001, 6.0), (1, 1): (1002, 4.0), (1, 2): (900, 3.0)}
    peer = {(0, 1): (1000, 12.0), (0, 2): (1001, 7.0), (1, 1): (1500, 20.0), (1, 2): (900, 9.0), (2, 0): (1003, 1.0)}
    # (1, 1): CreateTimes differ (not the same record); (1, 2): created before the window; (2, 0): floor never saw it
    assert paired_added(floor, peer, 950, 2000) == [1.0, 7.0]
    assert paired_added(floor, peer, 0, 2000) == [1.0, 6.0, 7.0]
    assert paired_added({}, peer, 0, 2000) == []
