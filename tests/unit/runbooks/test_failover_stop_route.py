"""The failover's stop-route step asks the operator to stop workers only when they do not stop by themselves."""

from __future__ import annotations

import dataclasses
import datetime as dt
import itertools

import pytest

from replicator.config import parse_config
from replicator.domain.failover import FailoverRequest
from replicator.domain.failover_run import FailoverRun
from replicator.runbooks.context import Ctx
from replicator.runbooks.engine import StepFailed
from replicator.runbooks.failover import steps

CONFIG = parse_config("clusters: {a: {bootstrap.servers: 'h:1'}, b: {bootstrap.servers: 'h:2'}}\n"
                      "routes: [{name: r, source: a, target: b, topics: [t]}]\n")
T0 = dt.datetime(2026, 11, 1, 12, 0, tzinfo=dt.UTC)


def stop(monkeypatch: pytest.MonkeyPatch, workers: list[int], seconds_per_look: float,
         said: list[str] | None = None) -> list[str]:
    """stop_route against a group whose member count goes ``workers``; what it said."""
    said = [] if said is None else said
    clock = itertools.count(0.0, seconds_per_look)
    counts = iter(workers)
    monkeypatch.setattr(steps.source, "route_workers", lambda *_: next(counts))
    monkeypatch.setattr(steps.source, "measure_lags", lambda *_: ())
    monkeypatch.setattr(steps.time, "monotonic", lambda: next(clock))
    monkeypatch.setattr(steps.time, "sleep", lambda _s: None)
    run = FailoverRun.new(FailoverRequest("r"), "a", "b", "mirrorflow-r", T0)
    run = dataclasses.replace(run, source_reachable=True)
    ctx = Ctx(CONFIG, CONFIG.routes[0], said.append, lambda r: r)
    steps.stop_route(ctx, run)
    return said


def test_workers_leaving_by_themselves_are_not_asked_to_stop(monkeypatch: pytest.MonkeyPatch) -> None:
    said = stop(monkeypatch, [2, 1, 0], seconds_per_look=1.0)
    waits = [line for line in said if "still in group" in line]
    assert len(waits) == 2 and all("they stop by themselves once they see the route held" in w for w in waits)
    assert not any("SIGTERM" in line for line in said)


def test_workers_that_stay_are_asked_to_stop_then_the_step_fails_naming_them(monkeypatch: pytest.MonkeyPatch) -> None:
    said: list[str] = []
    with pytest.raises(StepFailed, match="1 worker\\(s\\) still in group 'mirrorflow-r'"):
        stop(monkeypatch, [1] * 100, seconds_per_look=4.0, said=said)
    waits = [line for line in said if "still in group" in line]
    assert "they stop by themselves" in waits[0] and "stop them (SIGTERM)" in waits[-1]
