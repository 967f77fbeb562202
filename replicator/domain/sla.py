"""Replication SLAs: per-route thresholds, what an observation breaches, and the alert state machine.

Each (route, check) is ``ok`` or ``breached``. An alert fires only on a change:
ok → breached (a *breach*) and breached → ok (a *recovery*); a check that stays
breached over many evaluations stays silent, so there is never an alert storm.
A check that cannot be measured (a cluster unreadable, no heartbeat found) counts
as breached: absence of proof is not health.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from enum import StrEnum


class Check(StrEnum):
    """What an SLA looks at."""

    HEARTBEAT = "heartbeat"  # age of the newest heartbeat on the target (end-to-end latency)
    LAG = "lag"  # records on the source not copied yet (committed offsets)
    AUDIT = "audit"  # the route's latest audit found no missing record
    STUCK = "stuck"  # no partition of the route is stuck (its workers found it unfetched: domain.stuck)


class State(StrEnum):
    """Where one check of a route stands."""

    OK = "ok"
    BREACHED = "breached"


class EventKind(StrEnum):
    """An alert: a check entered or left the breached state."""

    BREACH = "breach"
    RECOVERY = "recovery"


@dataclass(frozen=True, slots=True)
class SlaThresholds:
    """A route's limits (``routes[].sla`` of mirrorflow.yaml)."""

    heartbeat_age_s: float = 30.0
    max_lag: int = 100_000
    audit_must_be_clean: bool = True
    heartbeats: bool = True  # False: the route emits and checks no heartbeats


@dataclass(frozen=True, slots=True)
class Observation:
    """What was measured of one route at ``at_ms``; an ``*_error`` says why a part could not be."""

    route: str
    at_ms: int
    heartbeat_ms: int | None = None  # emitted-at of the route's newest heartbeat on the target
    heartbeat_error: str | None = None
    total_lag: int | None = None
    worst_partition: tuple[str, int, int] | None = None  # (topic, partition, lag) of the largest lag
    lag_error: str | None = None
    audit_run: str | None = None  # key of the latest audit run; None: never audited
    audit_status: str | None = None  # clean | duplicates | extra | missing
    audit_missing: int = 0
    stuck: tuple[tuple[str, int], ...] = ()  # partitions the route's workers found stuck and not fetching since
    stuck_error: str | None = None
    topic_lags: tuple[tuple[str, int], ...] = ()  # (topic, records not yet copied): kept as the lag history
    copied: int | None = None  # the route's committed offsets summed: records copied so far (their rate over time)

    @property
    def latency_ms(self) -> int | None:
        """The replication latency: how old the route's newest heartbeat on the target is (None: unknown)."""
        return None if self.heartbeat_ms is None else max(0, self.at_ms - self.heartbeat_ms)


@dataclass(frozen=True, slots=True)
class CheckResult:
    """One check of one observation against the thresholds."""

    check: Check
    breached: bool
    detail: str


@dataclass(frozen=True, slots=True)
class CheckState:
    """The stored state of one check of a route, since when, and the latest finding."""

    route: str
    check: Check
    state: State
    since_ms: int
    detail: str


@dataclass(frozen=True, slots=True)
class SlaEvent:
    """A breach or a recovery: what an alert announces."""

    route: str
    check: Check
    kind: EventKind
    at_ms: int
    detail: str


def _heartbeat(obs: Observation, limits: SlaThresholds, heartbeat_topic: str) -> CheckResult:
    if obs.heartbeat_error is not None:
        return CheckResult(Check.HEARTBEAT, True, f"cannot read heartbeats: {obs.heartbeat_error}")
    if obs.heartbeat_ms is None:
        return CheckResult(Check.HEARTBEAT, True, f"no heartbeat of route {obs.route} on {heartbeat_topic}")
    age = max(0.0, (obs.at_ms - obs.heartbeat_ms) / 1000)
    return CheckResult(Check.HEARTBEAT, age > limits.heartbeat_age_s,
                       f"heartbeat age {age:.1f} s (limit {limits.heartbeat_age_s:g} s)")


def _lag(obs: Observation, limits: SlaThresholds) -> CheckResult:
    if obs.lag_error is not None or obs.total_lag is None:
        return CheckResult(Check.LAG, True, f"cannot measure lag: {obs.lag_error or 'no answer'}")
    worst = ""
    if obs.worst_partition is not None:
        topic, partition, lag = obs.worst_partition
        worst = f", largest {topic}[{partition}]: {lag}"
    return CheckResult(Check.LAG, obs.total_lag > limits.max_lag,
                       f"lag {obs.total_lag} records (limit {limits.max_lag}{worst})")


def _audit(obs: Observation) -> CheckResult:
    if obs.audit_run is None:
        return CheckResult(Check.AUDIT, False, "no audit run yet")
    missing = obs.audit_status == "missing"
    detail = f"latest audit {obs.audit_run}: {obs.audit_status}"
    return CheckResult(Check.AUDIT, missing, detail + (f", {obs.audit_missing} records missing" if missing else ""))


def _stuck(obs: Observation) -> CheckResult:
    if obs.stuck_error is not None:
        return CheckResult(Check.STUCK, True, f"cannot read the partitions' states: {obs.stuck_error}")
    if not obs.stuck:
        return CheckResult(Check.STUCK, False, "no partition stuck")
    where = ", ".join(f"{t}[{p}]" for t, p in obs.stuck[:10]) + (" ..." if len(obs.stuck) > 10 else "")
    return CheckResult(Check.STUCK, True, f"{len(obs.stuck)} partition(s) stuck: {where}")


def evaluate(obs: Observation, limits: SlaThresholds, heartbeat_topic: str = "the target") -> tuple[CheckResult, ...]:
    """Each enabled check of ``obs`` against ``limits`` (heartbeat, lag, audit, stuck, in that order)."""
    results = []
    if limits.heartbeats:
        results.append(_heartbeat(obs, limits, heartbeat_topic))
    results.append(_lag(obs, limits))
    if limits.audit_must_be_clean:
        results.append(_audit(obs))
    results.append(_stuck(obs))
    return tuple(results)


def transition(previous: CheckState | None, result: CheckResult, route: str,
               at_ms: int) -> tuple[CheckState, SlaEvent | None]:
    """The check's next state, and the event when it changed (a check never seen before was ok)."""
    new = State.BREACHED if result.breached else State.OK
    if previous is not None and previous.state == new:
        return replace(previous, detail=result.detail), None
    state = CheckState(route, result.check, new, at_ms, result.detail)
    if previous is None and new == State.OK:
        return state, None
    kind = EventKind.BREACH if new == State.BREACHED else EventKind.RECOVERY
    return state, SlaEvent(route, result.check, kind, at_ms, result.detail)


def step(states: Mapping[Check, CheckState], results: Iterable[CheckResult], route: str,
         at_ms: int) -> tuple[list[CheckState], list[SlaEvent]]:
    """Apply every result to the stored states: the new states and the alerts to send."""
    new_states, events = [], []
    for result in results:
        state, event = transition(states.get(result.check), result, route, at_ms)
        new_states.append(state)
        if event is not None:
            events.append(event)
    return new_states, events


@dataclass(frozen=True, slots=True)
class RecordedEvent:
    """An event as stored: its id, and whether (and when) its alert went out."""

    id: int
    event: SlaEvent
    notified_ms: int | None = None
    notify_error: str | None = None
