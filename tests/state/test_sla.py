"""SLA states and events in the state DB, and check_route's alerting: once per change, re-sent until sent."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from replicator.config import Config, RouteConfig, parse_config
from replicator.domain.sla import Check, CheckState, EventKind, Observation, SlaEvent, State
from replicator.errors import MirrorFlowError
from replicator.runbooks.sla.run import AlertNotSent, check_route
from replicator.state import sla as repo
from replicator.state.store import StateStore

NOW = 1_790_000_000_000


def test_states_are_upserted_and_events_listed_pending_then_notified(state_url: str) -> None:
    with StateStore(state_url) as store:
        breach = SlaEvent("p2b", Check.LAG, EventKind.BREACH, NOW, "lag 200 records (limit 100)")
        with store.session() as session:
            [event_id] = repo.record_step(session, [CheckState("p2b", Check.LAG, State.BREACHED, NOW, "lag 200")],
                                          [breach], NOW)
        with store.session() as session:  # the same check again: one row, updated
            repo.record_step(session, [CheckState("p2b", Check.LAG, State.BREACHED, NOW, "lag 300")], [], NOW + 60_000)
        with store.session() as session:
            assert repo.check_states(session, "p2b") == {
                Check.LAG: CheckState("p2b", Check.LAG, State.BREACHED, NOW, "lag 300")}
            assert repo.check_states(session, "other") == {}
            [pending] = repo.pending_events(session, "p2b")
            assert (pending.id, pending.event, pending.notified_ms) == (event_id, breach, None)
            repo.mark_failed(session, event_id, "webhook http://h/…: HTTP 500")
        with store.session() as session:
            assert repo.pending_events(session, "p2b")[0].notify_error == "webhook http://h/…: HTTP 500"
            repo.mark_notified(session, event_id, NOW + 1_000)
        with store.session() as session:
            assert repo.pending_events(session, "p2b") == []
            [stored] = repo.sla_events(session, "p2b")
            assert (stored.event, stored.notified_ms, stored.notify_error) == (breach, NOW + 1_000, None)
            with pytest.raises(LookupError, match="SLA event 999 is not stored"):
                repo.mark_notified(session, 999, NOW)


class Observations:
    """Observations handed out in order, one per check_route call: total lag values."""

    def __init__(self, *lags: int) -> None:
        self.lags = list(lags)

    def __call__(self, _config: Config, route: RouteConfig, at_ms: int) -> Observation:
        return Observation(route.name, at_ms, heartbeat_ms=at_ms, total_lag=self.lags.pop(0))


class Inbox:
    """A notifier that keeps what it was given, or refuses while ``down``."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []
        self.down = False

    def __call__(self, context: Mapping[str, Any]) -> None:
        if self.down:
            raise MirrorFlowError("inbox down")
        event = context["sla_event"]
        assert context["dag_run"] == "run-1"
        self.events.append((event.check.value, event.kind.value))


def _config(url: str) -> Config:
    return parse_config(f"""
clusters: {{primary: {{bootstrap.servers: "a:1"}}, backup: {{bootstrap.servers: "b:1"}}}}
routes: [{{name: p2b, source: primary, target: backup, topics: [orders], sla: {{max_lag: 100}}}}]
state: {{url: "{url}"}}
""")


def test_check_route_alerts_once_per_change_and_resends_what_failed(state_url: str) -> None:
    config, inbox = _config(state_url), Inbox()
    observe = Observations(0, 500, 900, 700, 50, 10)

    def run(n: int) -> dict[str, Any]:
        return check_route(config, "p2b", {"dag_run": "run-1"}, [inbox], NOW + n * 60_000, observe)

    summary = run(0)
    assert summary["checks"] == {"heartbeat": "ok", "lag": "ok", "audit": "ok", "stuck": "ok"} and inbox.events == []
    assert run(1)["events"] == ["lag breach"]
    run(2)
    inbox.down = True
    assert run(3)["events"] == []  # still breached: nothing to send
    with pytest.raises(AlertNotSent, match=r"route p2b: 1 alert\(s\) not sent: lag recovery: Inbox: inbox down"):
        run(4)  # recovered, but the alert cannot go out
    inbox.down = False
    assert run(5)["alerts_sent"] == 1  # sent by the next check
    assert inbox.events == [("lag", "breach"), ("lag", "recovery")]
    with StateStore(state_url) as store:
        with store.session() as session:
            events = repo.sla_events(session, "p2b")
            states = repo.check_states(session, "p2b")
    assert [(e.event.kind, e.event.at_ms, e.notified_ms is not None) for e in events] == [
        (EventKind.RECOVERY, NOW + 4 * 60_000, True), (EventKind.BREACH, NOW + 60_000, True)]
    assert states[Check.LAG].state == State.OK and states[Check.LAG].since_ms == NOW + 4 * 60_000


def test_lag_samples_are_kept_for_a_week_per_route(state_url: str) -> None:
    from sqlalchemy import select

    from replicator.state.models import LagSampleRow

    day = 24 * 3600 * 1000
    with StateStore(state_url) as store:
        store.run(lambda s: repo.record_lag_samples(s, "r", 0, [("orders", 5), ("audit", 0)]))
        store.run(lambda s: repo.record_lag_samples(s, "other", 0, [("orders", 9)]))
        store.run(lambda s: repo.record_lag_samples(s, "r", 8 * day, [("orders", 3)]))  # the first are 8 days old
        with store.session() as session:
            kept = {(r.route, r.topic, r.lag) for r in session.scalars(select(LagSampleRow))}
    assert kept == {("r", "orders", 3), ("other", "orders", 9)}


def test_route_samples_are_kept_for_a_week_per_route_and_nothing_measured_stores_nothing(state_url: str) -> None:
    from sqlalchemy import select

    from replicator.state.models import RouteSampleRow

    day = 24 * 3600 * 1000
    with StateStore(state_url) as store:
        store.run(lambda s: repo.record_route_sample(s, "r", 0, 100, 1500))
        store.run(lambda s: repo.record_route_sample(s, "other", 0, 7, None))
        store.run(lambda s: repo.record_route_sample(s, "r", 8 * day, None, None))  # nothing measured
        store.run(lambda s: repo.record_route_sample(s, "r", 8 * day + 60_000, 160, 900))
        with store.session() as session:
            kept = {(r.route, r.copied, r.latency_ms) for r in session.scalars(select(RouteSampleRow))}
    assert kept == {("r", 160, 900), ("other", 7, None)}
