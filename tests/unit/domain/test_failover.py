"""Failover decisions as plain data: options, which steps run, the drain, resume points, commits, verification."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given
from hypothesis import strategies as st

from replicator.domain.checkpoint import Checkpoint, CheckpointStatus
from replicator.domain.failover import (
    DrainState,
    FailoverMode,
    FailoverRequest,
    Step,
    StepStatus,
    drain_decision,
    is_application_topic,
    parse_duration,
    parse_instant,
    plan_steps,
)
from replicator.domain.resume_point import (
    Basis,
    GroupCommit,
    ResumePoint,
    offsets_to_write,
    plan_commits,
    points_from_checkpoints,
    timestamp_point,
    verify_commits,
)
from replicator.domain.target_group import TargetOutcome

T0 = dt.datetime(2026, 11, 1, 12, 0, tzinfo=dt.UTC)
TS = FailoverMode.TIMESTAMP


@pytest.mark.parametrize(("text", "seconds"), [("60", 60), (60, 60), ("60s", 60), (" 5m ", 300), ("1h", 3600),
                                                ("0", 0)])
def test_durations(text: str | int, seconds: int) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "-5", "1.5s", "5d", "sixty", "60 s s"])
def test_bad_durations_name_the_option(text: str) -> None:
    with pytest.raises(ValueError, match=r"--margin: expected seconds like 60, 60s, 5m or 1h"):
        parse_duration(text, "--margin")


@pytest.mark.parametrize(("text", "expected"), [
    ("2026-11-01T12:00:00Z", T0),
    ("2026-11-01T12:00:00", T0),  # no zone: UTC
    ("2026-11-01T14:00:00+02:00", T0),
    ("2026-11-01 12:00:00.000+00:00", T0),
])
def test_instants_are_utc(text: str, expected: dt.datetime) -> None:
    parsed = parse_instant(text)
    assert parsed == expected and parsed.utcoffset() == dt.timedelta(0)


def test_bad_instant_names_the_option() -> None:
    with pytest.raises(ValueError, match="--at: expected an ISO 8601 instant"):
        parse_instant("yesterday", "--at")


@pytest.mark.parametrize(("request_", "problem"), [
    (FailoverRequest("r", ("g",), TS), "mode timestamp needs --at"),
    (FailoverRequest("r", None, TS, T0), "mode timestamp needs the groups by name"),
    (FailoverRequest("r", at=T0), "--at is for mode timestamp"),
    (FailoverRequest("r", margin_seconds=-1), "margin: must be >= 0 seconds, got -1"),
    (FailoverRequest("r", drain_timeout_seconds=-3), "drain timeout: must be >= 0"),
])
def test_request_problems(request_: FailoverRequest, problem: str) -> None:
    assert any(problem in p for p in request_.problems()), request_.problems()


def test_good_requests_have_no_problem_and_timestamp_resumes_a_margin_early() -> None:
    assert FailoverRequest("r").problems() == []
    request = FailoverRequest("r", ("g",), TS, T0, margin_seconds=90)
    assert request.problems() == [] and request.resume_instant == T0 - dt.timedelta(seconds=90)


def test_same_work_ignores_group_order_and_timeouts() -> None:
    a = FailoverRequest("r", ("a", "b"), drain_timeout_seconds=5)
    assert a.same_work(FailoverRequest("r", ("b", "a"), drain_timeout_seconds=60))
    assert not a.same_work(FailoverRequest("r", ("a",)))
    assert not a.same_work(FailoverRequest("r", None))
    assert not FailoverRequest("r", ("a",), TS, T0).same_work(FailoverRequest("r", ("a",), TS, T0, 30))


def _statuses(request: FailoverRequest, reachable: bool) -> dict[Step, StepStatus]:
    return {step: status for step, (status, _) in plan_steps(request, "primary", "backup", "mirrorflow-r",
                                                              reachable).items()}


def test_every_step_is_planned_in_order() -> None:
    assert list(plan_steps(FailoverRequest("r"), "p", "b", "g", True)) == list(Step)


@pytest.mark.parametrize(("mode", "reachable", "skipped"), [
    (FailoverMode.CHECKPOINT, True, set()),
    (FailoverMode.CHECKPOINT, False, {Step.DRAIN, Step.FINAL_CHECKPOINT}),
    (TS, True, set()),
    (TS, False, {Step.DRAIN}),  # offsets-for-times need only the target
])
@pytest.mark.parametrize("fence", [False, True])
def test_which_steps_are_skipped(mode: FailoverMode, reachable: bool, skipped: set[Step], fence: bool) -> None:
    request = FailoverRequest("r", ("g",), mode, T0 if mode == TS else None, fence=fence)
    statuses = _statuses(request, reachable)
    # The fence: only asked for, and only on a source that answers (nobody writes to one that is down).
    fenced = set() if fence and reachable else {Step.FENCE}
    assert {s for s, status in statuses.items() if status == StepStatus.SKIPPED} == skipped | fenced


def test_a_fence_is_part_of_the_work_and_accepting_a_bypass_needs_one() -> None:
    assert not FailoverRequest("r").same_work(FailoverRequest("r", fence=True))
    assert not FailoverRequest("r", fence=True).same_work(FailoverRequest("r", fence=True, accept_bypass=True))
    assert FailoverRequest("r", accept_bypass=True).problems() == ["--accept-bypass is for a fenced failover: add "
                                                                   "--fence"]
    up = plan_steps(FailoverRequest("r", fence=True), "primary", "backup", "g", True)
    assert "deny WRITE on the route's topics of 'primary'" in up[Step.FENCE][1]
    down = plan_steps(FailoverRequest("r", fence=True), "primary", "backup", "g", False)
    assert "fence it (or stop its producers) before it comes back" in down[Step.FENCE][1]


def test_the_decisions_read_well() -> None:
    down = plan_steps(FailoverRequest("r", drain_timeout_seconds=45), "primary", "backup", "mirrorflow-r", False)
    assert down[Step.CHECK_SOURCE][1] == "source 'primary' is unreachable"
    assert "nothing can drain" in down[Step.DRAIN][1]
    assert "stop them" in down[Step.STOP_ROUTE][1] and "resume from the stored checkpoints" in \
        down[Step.FINAL_CHECKPOINT][1]
    up = plan_steps(FailoverRequest("r", drain_timeout_seconds=45), "primary", "backup", "mirrorflow-r", True)
    assert up[Step.DRAIN][1] == "wait up to 45 s until nothing is left to copy"
    assert "group 'mirrorflow-r' on 'primary' has no member" in up[Step.STOP_ROUTE][1]
    ts = plan_steps(FailoverRequest("r", ("g",), TS, T0, margin_seconds=60), "p", "b", "g", False)
    assert "at or after 2026-11-01T11:59:00Z" in ts[Step.FINAL_CHECKPOINT][1]


@pytest.mark.parametrize(("pending", "workers", "elapsed", "state"), [
    (0, 2, 0.0, DrainState.DRAINED),
    (0, 0, 99.0, DrainState.DRAINED),
    (5, 1, 10.0, DrainState.WAIT),
    (5, 1, 60.0, DrainState.TIMED_OUT),
    (5, 0, 0.0, DrainState.NO_WORKERS),  # nobody copies: waiting would only add to the RTO
])
def test_drain(pending: int, workers: int, elapsed: float, state: DrainState) -> None:
    assert drain_decision(pending, workers, elapsed, 60.0) == state


@pytest.mark.parametrize(("topic", "application"), [
    ("orders", True), ("mirrorflow-heartbeats.r", False), ("mirrorflow-offset-syncs.r.internal", False),
    ("my-mirrorflow-topic", True)])
def test_mirrorflows_own_topics_are_no_application_topics(topic: str, application: bool) -> None:
    assert is_application_topic(topic) is application


def _cp(group: str, partition: int, target: int | None, status: CheckpointStatus = CheckpointStatus.EXACT,
        repeats: int = 0) -> Checkpoint:
    return Checkpoint(group, "orders", partition, 100 + partition, "primary.orders", target, status, repeats)


def test_points_from_checkpoints_keep_their_translation_and_time() -> None:
    later = T0 + dt.timedelta(minutes=1)
    points = points_from_checkpoints([(_cp("b", 0, 7), T0), (_cp("a", 1, 9, CheckpointStatus.BEHIND, 3), later),
                                      (_cp("a", 0, None, CheckpointStatus.UNKNOWN), T0)])
    assert [(p.group, p.partition, p.target_offset, p.basis, p.max_repeats, p.as_of) for p in points] == [
        ("a", 0, None, Basis.UNKNOWN, 0, T0), ("a", 1, 9, Basis.BEHIND, 3, later), ("b", 0, 7, Basis.EXACT, 0, T0)]
    assert [p.describe() for p in points] == ["no offset sync: not moved", "≤3 may repeat", "exact"]


def test_timestamp_point_resumes_at_the_end_when_every_record_is_older() -> None:
    found = timestamp_point("g", "orders", "primary.orders", 0, 42, 90, T0)
    none = timestamp_point("g", "orders", "primary.orders", 1, None, 90, T0)
    assert (found.target_offset, none.target_offset) == (42, 90)
    assert found.basis == Basis.TIMESTAMP and found.max_repeats is None and found.describe() == "by timestamp"


def _point(group: str, partition: int, target: int | None, basis: Basis = Basis.EXACT) -> ResumePoint:
    return ResumePoint(group, "orders", partition, "primary.orders", target, basis)


def test_commits_follow_the_target_group_rules() -> None:
    points = [_point("new", 0, 5), _point("ahead", 0, 5), _point("same", 0, 5), _point("busy", 0, 5),
              _point("new", 1, None, Basis.UNKNOWN), _point("ts", 0, 8, Basis.TIMESTAMP)]
    committed = {"ahead": {("primary.orders", 0): 9}, "same": {("primary.orders", 0): 5}}
    plan = plan_commits(points, {"busy": 1}, committed)
    assert {(c.point.group, c.point.partition): (c.outcome, c.current) for c in plan} == {
        ("new", 0): (TargetOutcome.PLANNED, None), ("new", 1): (TargetOutcome.UNTRANSLATED, None),
        ("ahead", 0): (TargetOutcome.TARGET_AHEAD, 9), ("same", 0): (TargetOutcome.UP_TO_DATE, 5),
        ("busy", 0): (TargetOutcome.ACTIVE_MEMBERS, None), ("ts", 0): (TargetOutcome.PLANNED, None)}
    assert offsets_to_write(plan, "new") == {("primary.orders", 0): 5}
    assert offsets_to_write(plan, "busy") == {} and offsets_to_write(plan, "ts") == {("primary.orders", 0): 8}


@given(st.lists(st.tuples(st.sampled_from("abc"), st.integers(0, 3), st.integers(0, 50),
                          st.none() | st.integers(0, 50), st.integers(0, 2)), max_size=20,
                unique_by=lambda t: (t[0], t[1])))
def test_a_commit_never_moves_a_group_backwards_nor_touches_an_active_one(
        cases: list[tuple[str, int, int, int | None, int]]) -> None:
    points = [_point(g, p, target) for g, p, target, _, _ in cases]
    committed = {g: {("primary.orders", p): cur for gg, p, _, cur, _ in cases if gg == g and cur is not None}
                 for g, _, _, _, _ in cases}
    members = {g: m for g, _, _, _, m in cases}
    for commit in plan_commits(points, members, committed):
        written = offsets_to_write([commit], commit.point.group)
        if members[commit.point.group]:
            assert not written
        current = committed[commit.point.group].get(commit.target)
        assert all(current is None or offset > current for offset in written.values())


def test_verify_reads_back_written_and_kept_offsets() -> None:
    ok = GroupCommit(_point("a", 0, 5), TargetOutcome.WRITTEN)
    kept = GroupCommit(_point("b", 0, 5), TargetOutcome.TARGET_AHEAD, 9)
    moved = GroupCommit(_point("c", 0, 5), TargetOutcome.UP_TO_DATE, 5)
    busy = GroupCommit(_point("d", 0, 5), TargetOutcome.ACTIVE_MEMBERS)
    found = {"a": {("primary.orders", 0): 5}, "b": {("primary.orders", 0): 12}, "c": {("primary.orders", 0): 4}}
    checked, problems = verify_commits([ok, kept, moved, busy], found)
    assert [c.verified for c in checked] == [5, 12, 4, None]
    assert problems == ["group c primary.orders-0: committed 4, expected 5"]
    _, missing = verify_commits([ok, kept], {})
    assert missing == ["group a primary.orders-0: committed None, expected 5",
                       "group b primary.orders-0: committed None, expected >= 5"]


def test_a_per_topic_failover_moves_only_its_topics_and_is_other_work() -> None:
    request = FailoverRequest("r", topics=("orders",))
    assert request.moves("orders") and not request.moves("payments") and FailoverRequest("r").moves("payments")
    assert not request.same_work(FailoverRequest("r")) and request.same_work(FailoverRequest("r", topics=("orders",)))
    plan = plan_steps(request, "primary", "backup", "g", True)
    assert "until nothing of orders is left to copy" in plan[Step.DRAIN][1]
    assert "mark topic(s) orders failed over" in plan[Step.STOP_ROUTE][1] and "copy the others on" in \
        plan[Step.STOP_ROUTE][1]
