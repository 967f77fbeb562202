"""SLA evaluation and the alert state machine: one alert per breach, one per recovery, never a storm."""

from __future__ import annotations

from itertools import pairwise

import pytest
from hypothesis import given
from hypothesis import strategies as st

from replicator.domain.sla import (
    Check,
    CheckResult,
    CheckState,
    EventKind,
    Observation,
    SlaEvent,
    SlaThresholds,
    State,
    evaluate,
    step,
    transition,
)

NOW = 1_790_000_000_000
LIMITS = SlaThresholds(heartbeat_age_s=30, max_lag=100, audit_must_be_clean=True)


def _obs(**fields: object) -> Observation:
    base: dict[str, object] = {"heartbeat_ms": NOW - 1_000, "total_lag": 0}
    return Observation("p2b", NOW, **{**base, **fields})  # type: ignore[arg-type]


EVALUATIONS = [
    # observation fields, check, breached?, words in the detail
    ({}, Check.HEARTBEAT, False, "heartbeat age 1.0 s (limit 30 s)"),
    ({"heartbeat_ms": NOW - 30_000}, Check.HEARTBEAT, False, "30.0 s"),  # at the limit: ok
    ({"heartbeat_ms": NOW - 30_001}, Check.HEARTBEAT, True, "30.0 s"),
    ({"heartbeat_ms": None}, Check.HEARTBEAT, True, "no heartbeat of route p2b on hb-topic"),
    ({"heartbeat_error": "target 'backup': down"}, Check.HEARTBEAT, True, "cannot read heartbeats: target"),
    ({"total_lag": 100}, Check.LAG, False, "lag 100 records (limit 100)"),
    ({"total_lag": 101, "worst_partition": ("orders", 3, 90)}, Check.LAG, True, "largest orders[3]: 90"),
    ({"total_lag": None, "lag_error": "source 'primary': down"}, Check.LAG, True, "cannot measure lag: source"),
    ({}, Check.AUDIT, False, "no audit run yet"),
    ({"audit_run": "r1", "audit_status": "duplicates"}, Check.AUDIT, False, "latest audit r1: duplicates"),
    ({"audit_run": "r2", "audit_status": "missing", "audit_missing": 7}, Check.AUDIT, True, "7 records missing"),
]


@pytest.mark.parametrize(("fields", "check", "breached", "words"), EVALUATIONS)
def test_evaluate(fields: dict[str, object], check: Check, breached: bool, words: str) -> None:
    [result] = [r for r in evaluate(_obs(**fields), LIMITS, "hb-topic") if r.check == check]
    assert result.breached is breached
    assert words in result.detail


def test_disabled_checks_are_not_evaluated() -> None:
    off = SlaThresholds(heartbeats=False, audit_must_be_clean=False)
    assert [r.check for r in evaluate(_obs(heartbeat_ms=None), off)] == [Check.LAG, Check.STUCK]
    assert [r.check for r in evaluate(_obs(), LIMITS)] == [Check.HEARTBEAT, Check.LAG, Check.AUDIT, Check.STUCK]


def test_a_stuck_partition_is_a_breach_naming_it_and_unreadable_states_count_as_one() -> None:
    [stuck] = [r for r in evaluate(_obs(stuck=(("orders", 3), ("orders", 5))), LIMITS) if r.check == Check.STUCK]
    assert stuck.breached and stuck.detail == "2 partition(s) stuck: orders[3], orders[5]"
    [fine] = [r for r in evaluate(_obs(), LIMITS) if r.check == Check.STUCK]
    assert not fine.breached and fine.detail == "no partition stuck"
    [unknown] = [r for r in evaluate(_obs(stuck_error="database away"), LIMITS) if r.check == Check.STUCK]
    assert unknown.breached and "database away" in unknown.detail


def _result(breached: bool) -> CheckResult:
    return CheckResult(Check.LAG, breached, "breached" if breached else "fine")


TRANSITIONS = [
    # previous state (None: never checked), breached now?, new state, event kind
    (None, False, State.OK, None),
    (None, True, State.BREACHED, EventKind.BREACH),
    (State.OK, False, State.OK, None),
    (State.OK, True, State.BREACHED, EventKind.BREACH),
    (State.BREACHED, True, State.BREACHED, None),
    (State.BREACHED, False, State.OK, EventKind.RECOVERY),
]


@pytest.mark.parametrize(("previous", "breached", "new", "kind"), TRANSITIONS)
def test_transition(previous: State | None, breached: bool, new: State, kind: EventKind | None) -> None:
    before = None if previous is None else CheckState("p2b", Check.LAG, previous, NOW - 60_000, "earlier")
    state, event = transition(before, _result(breached), "p2b", NOW)
    assert state.state == new and state.detail == _result(breached).detail
    assert state.since_ms == (NOW if before is None or previous != new else NOW - 60_000)  # since the change
    assert (event.kind if event else None) == kind
    if event is not None:
        assert event == SlaEvent("p2b", Check.LAG, kind, NOW, _result(breached).detail)


@given(st.lists(st.lists(st.booleans(), min_size=3, max_size=3), max_size=60))
def test_alerts_alternate_and_fire_only_on_changes(runs: list[list[bool]]) -> None:
    """Whatever the sequence of evaluations: per check, breach and recovery alternate (breach first),
    one per change of state, and a run that changes nothing alerts nothing."""
    checks = (Check.HEARTBEAT, Check.LAG, Check.AUDIT)
    states: dict[Check, CheckState] = {}
    alerts: dict[Check, list[EventKind]] = {c: [] for c in checks}
    for n, flags in enumerate(runs):
        results = [CheckResult(c, b, f"run {n}") for c, b in zip(checks, flags, strict=True)]
        before = {c: s.state for c, s in states.items()}
        new_states, events = step(states, results, "p2b", NOW + n)
        states = {s.check: s for s in new_states}
        changed = {c for c in checks if states[c].state != before.get(c, State.OK)}
        assert {e.check for e in events} == changed and len(events) == len(changed)
        for event in events:
            alerts[event.check].append(event.kind)
    for check in checks:
        flags = [run[checks.index(check)] for run in runs]
        kinds = alerts[check]
        assert all(a != b for a, b in pairwise(kinds)), "two alerts of one kind in a row"
        assert kinds[:1] in ([], [EventKind.BREACH])
        assert kinds.count(EventKind.BREACH) == sum(1 for i, b in enumerate(flags)
                                                    if b and (i == 0 or not flags[i - 1]))
