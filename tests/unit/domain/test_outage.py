"""The outage watch: out of reach for ``hold_after`` seconds, and only then, is a reason to hold."""

from __future__ import annotations

import pytest

from replicator.domain.outage import OutageWatch


@pytest.mark.parametrize(("events", "now", "due"), [
    ([], 100.0, None),
    ([("unreachable", 10.0)], 14.9, None),
    ([("unreachable", 10.0)], 15.0, 5.0),
    ([("unreachable", 10.0), ("unreachable", 13.0)], 15.0, 5.0),  # the first report counts
    ([("unreachable", 10.0), ("answers", 12.0)], 20.0, None),
    ([("unreachable", 10.0), ("answers", 12.0), ("unreachable", 14.0)], 18.0, None),  # a new outage, 4 s old
    ([("unreachable", 10.0), ("answers", 12.0), ("unreachable", 14.0)], 19.5, 5.5),
])
def test_due(events: list[tuple[str, float]], now: float, due: float | None) -> None:
    watch = OutageWatch(hold_after=5.0)
    for kind, at in events:
        watch.unreachable(at) if kind == "unreachable" else watch.answers(at)
    assert watch.due(now) == due


@pytest.mark.parametrize(("events", "now", "due"), [
    ([("silent", 10.0)], 14.9, None),
    ([("silent", 10.0)], 20.0, 10.0),  # a request unanswered for its 10 s timeout: out of reach since it went
    ([("answers", 13.0), ("silent", 10.0)], 20.0, 7.0),  # something came after it went: silent since then
    ([("answers", 8.0), ("silent", 10.0)], 20.0, 10.0),
    ([("unreachable", 9.0), ("silent", 10.0)], 20.0, 11.0),  # an error reported first counts
])
def test_a_request_that_timed_out_dates_the_outage_from_when_it_went(
        events: list[tuple[str, float]], now: float, due: float | None) -> None:
    watch = OutageWatch(hold_after=5.0)
    for kind, at in events:
        {"unreachable": watch.unreachable, "answers": watch.answers, "silent": watch.silent_since}[kind](at)
    assert watch.due(now) == due
