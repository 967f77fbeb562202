"""What the SLA DAG calls per route: observe, evaluate, record, alert on transitions only."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from replicator.config import Config, ConfigRef, RouteConfig, as_config
from replicator.domain.sla import Observation, SlaEvent, evaluate, step
from replicator.errors import MirrorFlowError
from replicator.runbooks.sla.notifiers import EVENT_KEY, LogNotifier, WebhookNotifier
from replicator.runbooks.sla.observe import heartbeat_topic_on_target, observe_route

log = logging.getLogger(__name__)

Notifier = Callable[[Mapping[str, Any]], None]
Observer = Callable[[Config, RouteConfig, int], Observation]


class AlertNotSent(MirrorFlowError):
    """An alert failed to go out; it stays pending and is sent again by the next check."""

    retriable = True


def route_notifiers(route: RouteConfig) -> list[Notifier]:
    """The log notifier, plus the webhook when ``sla.webhook`` is set."""
    notifiers: list[Notifier] = [LogNotifier()]
    if route.sla.webhook is not None:
        notifiers.append(WebhookNotifier(route.sla.webhook.get_secret_value()))
    return notifiers


def check_route(config: ConfigRef, route_name: str, context: Mapping[str, Any] | None = None,
                notifiers: Sequence[Notifier] | None = None, now_ms: int | None = None,
                observe: Observer = observe_route) -> dict[str, object]:
    """Check one route's SLA now; alert each breach and recovery once. Returns a summary.

    ``context`` is the Airflow context handed to the notifiers (with the event under
    ``sla_event``); ``notifiers`` replace the route's own (log, and the webhook if set);
    ``observe`` measures the route (the clusters and the state DB by default).
    Raises AlertNotSent after trying every pending alert when one could not be sent.
    """
    from replicator.state import sla as repo
    from replicator.state.store import StateStore

    loaded = as_config(config)
    route = loaded.route(route_name)
    at_ms = int(time.time() * 1000) if now_ms is None else now_ms
    observation = observe(loaded, route, at_ms)
    results = evaluate(observation, route.sla.thresholds, heartbeat_topic_on_target(loaded, route))
    with StateStore(loaded.state.url) as store:
        def record(session: Any) -> list[SlaEvent]:
            states, events = step(repo.check_states(session, route.name), results, route.name, at_ms)
            repo.record_step(session, states, events, at_ms)
            repo.record_lag_samples(session, route.name, at_ms, observation.topic_lags)
            repo.record_route_sample(session, route.name, at_ms, observation.copied, observation.latency_ms)
            return events

        events = store.run(record)
        for result in results:
            log.info("sla check route=%s check=%s breached=%s detail=%r", route.name, result.check.value,
                     result.breached, result.detail)
        chosen = route_notifiers(route) if notifiers is None else notifiers
        sent, failures = _send_pending(store, route.name, chosen, context or {})
    if failures:
        raise AlertNotSent(f"route {route.name}: {len(failures)} alert(s) not sent: " + "; ".join(failures))
    return {"route": route.name, "checks": {r.check.value: ("breached" if r.breached else "ok") for r in results},
            "details": {r.check.value: r.detail for r in results},
            "events": [f"{e.check.value} {e.kind.value}" for e in events], "alerts_sent": sent}


class SlaBreached(MirrorFlowError):
    """A check of the route is breached: the DAG's task fails, so Airflow's own failure alerting (the red run,
    callbacks, email) sees it too -- on every run while it lasts; the notifiers alert once per change."""


def fail_if_breached(summary: Mapping[str, Any]) -> dict[str, Any]:
    """``summary`` (of :func:`check_route`) as it is; SlaBreached naming each breached check and why."""
    breached = [f"{check}: {summary['details'][check]}" for check, state in summary["checks"].items()
                if state == "breached"]
    if breached:
        raise SlaBreached(f"route {summary['route']}: SLA breached: " + "; ".join(breached))
    return dict(summary)


def _send_pending(store: Any, route: str, notifiers: Sequence[Notifier],
                  context: Mapping[str, Any]) -> tuple[int, list[str]]:
    """Send every unsent event of the route through every notifier, oldest first."""
    from replicator.state import sla as repo

    with store.session() as session:
        pending = repo.pending_events(session, route)
    sent, failures = 0, []
    for recorded in pending:
        error = _notify_all(notifiers, {**context, EVENT_KEY: recorded.event})
        with store.session() as session:
            if error is None:
                repo.mark_notified(session, recorded.id, int(time.time() * 1000))
                sent += 1
            else:
                repo.mark_failed(session, recorded.id, error)
                failures.append(f"{recorded.event.check.value} {recorded.event.kind.value}: {error}")
    return sent, failures


def _notify_all(notifiers: Sequence[Notifier], context: Mapping[str, Any]) -> str | None:
    """None when every notifier took the event, else the first failure (its message holds no secret)."""
    for notifier in notifiers:
        try:
            notifier(context)
        except MirrorFlowError as exc:
            return f"{getattr(notifier, 'name', type(notifier).__name__)}: {exc}"
        except Exception as exc:  # noqa: BLE001 - a provider's notifier: its message may hold a secret
            log.warning("notifier failed notifier=%s error_type=%s", type(notifier).__name__, type(exc).__name__)
            return f"{type(notifier).__name__}: {type(exc).__name__}"
    return None
