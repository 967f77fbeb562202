"""The scale bench's reading of a worker's histograms (pure)."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry, Histogram, generate_latest

from bench.scale_metrics import LOOP_TURN, REFRESH, histograms, since, summary, tail


def _exposition(refresh: list[float], turns: list[float]) -> str:
    registry = CollectorRegistry()
    r = Histogram(REFRESH, "", ["route"], buckets=(0.1, 1, 60), registry=registry)
    t = Histogram(LOOP_TURN, "", ["route"], buckets=(0.05, 0.1, 0.5, 30), registry=registry)
    for value in refresh:
        r.labels("a").observe(value)
    for value in turns:
        t.labels("a").observe(value)
    return generate_latest(registry).decode()


def test_mean_worst_bound_and_stalls() -> None:
    found = histograms(_exposition([0.05, 0.5, 0.6], [0.01] * 8 + [0.2, 0.4]), (REFRESH, LOOP_TURN))
    refresh, turns = summary(found[REFRESH]), summary(found[LOOP_TURN])
    assert refresh["count"] == 3 and refresh["mean_s"] == pytest.approx(0.383, abs=1e-3)
    assert refresh["worst"] == "<=1" and refresh["worst_le_s"] == 1.0
    assert turns["over"] == 2 and turns["share_over"] == pytest.approx(0.2) and turns["worst"] == "<=0.5"


@pytest.mark.parametrize(("values", "worst"), [([], "-"), ([100.0], ">60"), ([0.01], "<=0.1")])
def test_worst_bound_edges(values: list[float], worst: str) -> None:
    assert summary(histograms(_exposition(values, []), (REFRESH,))[REFRESH])["worst"] == worst


def test_since_keeps_only_the_window() -> None:
    before = histograms(_exposition([], [0.3]), (LOOP_TURN,))[LOOP_TURN]
    after = histograms(_exposition([], [0.3, 0.01, 0.01]), (LOOP_TURN,))[LOOP_TURN]
    window = summary(since(after, before))
    assert window["count"] == 2 and window["over"] == 0 and window["worst"] == "<=0.05"


def test_tail_counts_the_observations_over_each_bound_above_the_idle_wait() -> None:
    hist = {"count": 10.0, "sum": 1.0, "buckets": {0.05: 6.0, 0.1: 8.0, 0.25: 9.0, 1.0: 10.0, float("inf"): 10.0}}
    assert tail(hist) == {"0.1": 2, "0.25": 1, "1": 0}
