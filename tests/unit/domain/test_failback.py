"""Failback's pure parts: the inverse translation, where the reverse route starts, where groups resume,
the reverse route's settings, the request's checks and the run's JSON round trip."""

from __future__ import annotations

import dataclasses
import datetime as dt

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replicator.config import RouteConfig
from replicator.domain.failback import (
    FailbackMode,
    FailbackRequest,
    FailbackRun,
    FailbackStatus,
    FailbackStep,
    FailbackStepRecord,
    ReverseTopic,
    Unreplicated,
    next_steps,
    resume_point,
    reverse_route_settings,
    reverse_start,
    run_from_dict,
    translate_back,
)
from replicator.domain.failover import StepStatus
from replicator.domain.fence import FenceRecord, fence_acl
from replicator.domain.offset_sync import OffsetSync, OffsetSyncWriter, kept_syncs
from replicator.domain.resume_point import Basis, GroupCommit
from replicator.domain.target_group import TargetOutcome

T0 = dt.datetime(2026, 11, 1, 12, 0, tzinfo=dt.UTC)


def _copy(sources: list[int], first_target: int = 0) -> list[OffsetSync]:
    """The syncs of a route that copied the records at ``sources`` (rising) to consecutive target offsets."""
    writer = OffsetSyncWriter("orders", 0)
    return kept_syncs(r for r in (writer.observe(s, first_target + n) for n, s in enumerate(sources)) if r is not None)


@settings(max_examples=300)
@given(st.lists(st.integers(min_value=1, max_value=4), min_size=1, max_size=60))
def test_translate_back_places_every_replica_position_exactly_on_the_source(steps: list[int]) -> None:
    # Source offsets with gaps (markers, compacted records); the replica has none.
    sources = [sum(steps[: n + 1]) for n in range(len(steps))]
    end = sources[-1] + 1  # the route's committed offset: the last acknowledged record + 1
    syncs = _copy(sources)
    for position in range(len(sources)):
        # A group that read the replica up to ``position`` resumes at the next record's source offset.
        assert translate_back(syncs, position, end) == sources[position]
    assert translate_back(syncs, len(sources), end) == end  # read everything: right after the route's end
    assert translate_back(syncs, len(sources) + 1, end) is None  # a record the route never copied


def test_translate_back_knows_nothing_before_the_first_copy_or_without_syncs() -> None:
    syncs = _copy([10, 11, 12], first_target=5)
    assert translate_back(syncs, 4, 13) is None and translate_back([], 0, 0) is None
    assert translate_back(syncs, 5, 13) == 10 and translate_back(syncs, 8, 13) == 13
    assert translate_back(syncs, 7, None) is None  # the last run's length is unknown without the route's end


def test_translate_back_breaks_ties_like_the_forward_translation_whatever_the_order() -> None:
    # Source 5 at replica 9 reported twice: by its writer (the run before ended at 2) and by a restarted one.
    known, restarted = OffsetSync("orders", 0, 5, 9, 2), OffsetSync("orders", 0, 5, 9, None)
    for syncs in ([OffsetSync("orders", 0, 0, 0, None), known, restarted],
                  [restarted, known, OffsetSync("orders", 0, 0, 0, None)]):
        # Replica records 3..8 are foreign: position 3 (read 0..2) is source 3, positions 4..8 are on no copy.
        assert [translate_back(syncs, p, 7) for p in (3, 4, 8, 9)] == [3, None, None, 5]


def test_the_incremental_reverse_route_starts_right_after_the_routes_last_copy() -> None:
    syncs = _copy([0, 1, 2, 5, 6])  # markers at 3 and 4
    assert reverse_start(syncs, 7, 9) == (5, "after the route's last copied record")  # records 5.. were written later
    assert reverse_start(syncs, 7, 5) == (5, "after the route's last copied record")
    assert reverse_start([], None, 9) == (0, "the route copied nothing here: every record")
    assert reverse_start(syncs, None, 9)[0] == 9


def test_a_group_resumes_through_the_inverse_before_the_start_and_the_reverse_route_after() -> None:
    forward = _copy([0, 1, 2, 5, 6])  # primary -> replica 0..4; the route's end on primary: 7
    reverse = [dataclasses.replace(s, topic="primary.orders") for s in _copy([5, 6, 7], first_target=9)]
    # The replica's records 5..7 were written on backup; the reverse route put them at primary 9..11
    # (primary 7 and 8 hold records the route never copied).
    point = resume_point("app", "primary.orders", "orders", 0, 3, 5, reverse, 8, forward, 7)
    assert (point.target_offset, point.basis) == (5, Basis.EXACT)  # replica 3 is primary 5 (after the markers)
    at_start = resume_point("app", "primary.orders", "orders", 0, 5, 5, reverse, 8, forward, 7)
    assert at_start.target_offset == 7  # it also reads the two records the route never copied
    after = resume_point("app", "primary.orders", "orders", 0, 7, 5, reverse, 8, forward, 7)
    assert (after.target_offset, after.basis, after.source_offset) == (11, Basis.EXACT, 7)
    resync = resume_point("app", "primary.orders", "orders", 0, 2, 0, _copy([0, 1, 2, 3]), 4, (), None)
    assert (resync.target_offset, resync.basis) == (2, Basis.EXACT)
    lost = resume_point("app", "primary.orders", "orders", 0, 7, 5, (), None, forward, 7)
    assert (lost.target_offset, lost.basis) == (None, Basis.UNKNOWN)


def _route(**changes: object) -> RouteConfig:
    return RouteConfig.model_validate({"name": "dr", "source": "primary", "target": "backup", "topics": ["orders.*"],
                                       "consumer": {"fetch.max.bytes": "1048576"}, **changes})


@pytest.mark.parametrize("mode", list(FailbackMode))
def test_the_reverse_route_maps_each_replica_back_and_checks_loops_only_when_incremental(mode: FailbackMode) -> None:
    topics = [ReverseTopic("primary.orders.eu", "orders.eu", 3), ReverseTopic("primary.orders+x", "orders+x", 1)]
    reverse = RouteConfig.model_validate(reverse_route_settings(_route().model_dump(), "primary", "backup", topics,
                                                                mode))
    assert (reverse.name, reverse.source, reverse.target) == ("dr.failback", "backup", "primary")
    assert reverse.topic_filter.select(["primary.orders+x", "primary.ordersXeu", "primary.orders.eu"]) == [
        "primary.orders+x", "primary.orders.eu"]
    assert reverse.policy.mapping == {"primary.orders.eu": "orders.eu", "primary.orders+x": "orders+x"}
    assert reverse.loop_check is (mode == FailbackMode.INCREMENTAL)
    assert reverse.sla.heartbeats is False and reverse.consumer == {"fetch.max.bytes": "1048576"}


def test_request_checks() -> None:
    assert FailbackRequest("dr", drain_timeout_seconds=-1).problems() == ["drain timeout: must be >= 0 seconds, got -1"]
    assert "for mode resync" in FailbackRequest("dr", accept_loss=True).problems()[0]
    assert FailbackRequest("dr", FailbackMode.RESYNC, accept_loss=True).problems() == []
    base = FailbackRequest("dr", groups=("a", "b"))
    assert base.same_work(FailbackRequest("dr", groups=("b", "a"), drain_timeout_seconds=5))
    assert not base.same_work(FailbackRequest("dr", FailbackMode.RESYNC, groups=("a", "b")))


def _done(run: FailbackRun) -> FailbackRun:
    for step in FailbackStep:
        run = run.with_step(FailbackStepRecord(step, StepStatus.DONE, "ok", None, T0, T0))
    return dataclasses.replace(run, finished_at=T0 + dt.timedelta(seconds=42))


def test_status_figures_json_round_trip_and_next_steps() -> None:
    run = FailbackRun.new(FailbackRequest("dr", groups=("app",)), "primary", "backup", T0)
    assert run.status == FailbackStatus.RUNNING and run.stopped_at == FailbackStep.CHECK
    failed = run.with_step(FailbackStepRecord(FailbackStep.CHECK, StepStatus.FAILED, error="primary is down"))
    assert failed.status == FailbackStatus.FAILED and "stopped at check" in next_steps(dataclasses.replace(
        failed, run_id=3))
    point = resume_point("app", "primary.orders", "orders", 0, 3, 5, (), None, _copy([0, 1, 2, 5, 6]), 7)
    done = dataclasses.replace(
        _done(run), run_id=7, failover_run_id=2,
        topics=(ReverseTopic("primary.orders", "orders", 1), ReverseTopic("orders", "orders", 2, copied=False)),
        starts=(("primary.orders", 0, 5),), unreplicated=(Unreplicated("orders", 0, 7, 9),), copied=3,
        not_copied=0, points=(point,), commits=(GroupCommit(point, TargetOutcome.WRITTEN, 1, None, 5),),
        notes=("a note",))
    assert done.status == FailbackStatus.DONE and done.rto_seconds == 42 and done.unreplicated_records == 2
    assert run_from_dict(done.to_dict()) == done
    text = next_steps(done)
    assert "Groups app resume on 'primary'" in text and "`mirrorflow run --route dr`" in text
    assert "It copies the 2 offsets 'primary' held that never reached 'backup'" in text
    dry = FailbackRun.new(FailbackRequest("dr", dry_run=True), "primary", "backup", T0)
    assert dry.status == FailbackStatus.DRY_RUN and "nothing was changed" in next_steps(dry)
    fenced = dataclasses.replace(done, request=FailbackRequest("dr", fence=True, accept_bypass=True),
                                 fence=FenceRecord("backup", (fence_acl("orders", "User:*"),), T0, (), T0))
    assert run_from_dict(fenced.to_dict()) == fenced


def test_a_fenced_failback_is_other_work_and_accepting_a_bypass_needs_the_fence() -> None:
    assert not FailbackRequest("dr").same_work(FailbackRequest("dr", fence=True))
    assert FailbackRequest("dr", accept_bypass=True).problems() == [
        "--accept-bypass is for a fenced failback: add --fence"]
    assert FailbackRequest("dr", fence=True, accept_bypass=True).problems() == []


def test_a_failback_of_some_topics_is_other_work_incremental_only_and_says_nothing_is_to_start() -> None:
    some = FailbackRequest("dr", topics=("orders", "audit"))
    assert some.same_work(FailbackRequest("dr", topics=("audit", "orders")))
    assert not some.same_work(FailbackRequest("dr")) and not some.same_work(FailbackRequest("dr", topics=("orders",)))
    assert some.moves("orders") and not some.moves("payments") and FailbackRequest("dr").moves("payments")
    assert "--topic is for mode incremental" in FailbackRequest("dr", FailbackMode.RESYNC, topics=("a",)).problems()[0]
    run = _done(FailbackRun.new(some, "primary", "backup", T0))
    assert run_from_dict(run.to_dict()).request == some
    text = next_steps(run)
    assert text.startswith("Failback of topic(s) orders, audit of route dr done")
    assert "consumers of orders, audit back to 'primary'" in text and "nothing to start" in text
    assert "mirrorflow run" not in text


def test_two_topics_of_the_backup_feeding_one_partition_merge_without_skipping() -> None:
    from replicator.domain.failback import merge_points
    from replicator.domain.resume_point import ResumePoint

    starts = {("primary.orders", 0): 50, ("orders", 0): 0}

    def replica(position: int, target: int) -> ResumePoint:
        return ResumePoint("app", "primary.orders", 0, "orders", target, Basis.EXACT, position)

    def local(position: int, target: int | None) -> ResumePoint:
        return ResumePoint("app", "orders", 0, "orders", target, Basis.EXACT if target else Basis.UNKNOWN, position)

    # Read the replica to its end and 3 new records: where the new records say.
    assert merge_points([replica(50, 60), local(3, 65)], starts) == (local(3, 65),)
    # Read the replica to its end, no new record: right after the route's copies (the stragglers first).
    assert merge_points([local(0, 62), replica(50, 60)], starts) == (replica(50, 60),)
    # Not to the replica's end, yet 3 new records read: from the replica's position, up to 3 may repeat.
    [merged] = merge_points([replica(40, 45), local(3, 65)], starts)
    assert (merged.target_offset, merged.basis, merged.max_repeats) == (45, Basis.BEHIND, 3)
    # A position nothing places stays out of it.
    assert merge_points([replica(40, 45), local(3, None)], starts) == (replica(40, 45),)
    assert merge_points([local(2, 70)], starts) == (local(2, 70),)
