"""The failover run record: status, RPO, RTO, its JSON round trip, and what the applications do next."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json

import pytest

from replicator.domain.failover import FailoverMode, FailoverRequest, Step, StepRecord, StepStatus
from replicator.domain.failover_run import (
    FailoverRun,
    PartitionLag,
    RpoBasis,
    RunStatus,
    next_steps,
    rpo_from_points,
    rpo_measured,
)
from replicator.domain.fence import Bypass, FenceRecord, fence_acl
from replicator.domain.resume_point import Basis, GroupCommit, ResumePoint
from replicator.domain.target_group import TargetOutcome

T0 = dt.datetime(2026, 11, 1, 12, 0, tzinfo=dt.UTC)


def _run(**changes: object) -> FailoverRun:
    run = FailoverRun.new(FailoverRequest("r"), "primary", "backup", "mirrorflow-r", T0)
    return dataclasses.replace(run, **changes)  # type: ignore[arg-type]


def _done(run: FailoverRun, *steps: Step, status: StepStatus = StepStatus.DONE) -> FailoverRun:
    for step in steps:
        run = run.with_step(StepRecord(step, status, f"{step} did its work"))
    return run


def test_a_new_run_is_running_with_every_step_pending() -> None:
    run = _run()
    assert run.status == RunStatus.RUNNING and run.stopped_at == Step.CHECK_SOURCE
    assert [s.status for s in run.steps] == [StepStatus.PENDING] * len(Step) and run.rto_seconds is None


def test_status_and_where_a_run_stopped() -> None:
    half = _done(_run(), Step.CHECK_SOURCE, Step.FENCE, Step.DRAIN)
    assert half.stopped_at == Step.STOP_ROUTE and half.status == RunStatus.RUNNING
    failed = half.with_step(StepRecord(Step.STOP_ROUTE, StepStatus.FAILED, error="2 workers still there"))
    assert failed.status == RunStatus.FAILED and failed.stopped_at == Step.STOP_ROUTE
    done = _done(_run(finished_at=T0 + dt.timedelta(seconds=4.5)), *Step)
    assert done.status == RunStatus.DONE and done.stopped_at is None and done.rto_seconds == 4.5
    assert _done(_run(), Step.CHECK_SOURCE, Step.FENCE, status=StepStatus.SKIPPED).stopped_at == Step.DRAIN
    assert _run(abandoned_at=T0).status == RunStatus.ABANDONED
    dry = FailoverRun.new(FailoverRequest("r", dry_run=True), "p", "b", "g", T0)
    assert dry.status == RunStatus.DRY_RUN


def test_measured_rpo_counts_only_partitions_with_records_left() -> None:
    lags = (PartitionLag("orders", 0, 100, 100, False), PartitionLag("orders", 1, 50, 49, False),  # a marker left
            PartitionLag("orders", 2, 80, 70, True), PartitionLag("audit", 0, 7, None, True))
    rpo = rpo_measured(lags, T0)
    assert (rpo.records, rpo.basis, rpo.partitions) == (17, RpoBasis.MEASURED, (("orders", 2, 10), ("audit", 0, 7)))
    assert rpo.describe() == "RPO: at most 17 records not replicated (orders-2: 10, audit-0: 7)"
    assert rpo_measured((), T0).records == 0
    assert rpo_measured(lags[:2], T0).describe() == "RPO: 0 records: everything was copied when the route stopped"


def test_records_of_transactions_still_open_on_the_source_are_counted_and_named_in_the_rpo() -> None:
    lags = (PartitionLag("orders", 0, 100, 90, True, 4, 96),  # 6 committed records, then a transaction of 4
            PartitionLag("orders", 1, 50, 50, False))
    rpo = rpo_measured(lags, T0)
    assert rpo.records == 10 and rpo.open_transactions == (("orders", 0, 96, 4),)
    assert rpo.describe() == ("RPO: at most 10 records not replicated (orders-0: 10); 4 of them in transactions still "
                              "open on the source (orders-0: 4 from offset 96): not visible to the route; if they "
                              "commit there after the cutover they are not copied")


def test_rpo_from_checkpoints_is_the_furthest_a_group_read_past_the_copy() -> None:
    later = T0 + dt.timedelta(minutes=1)
    points = (ResumePoint("a", "orders", 0, "p.orders", 5, Basis.BEHIND, 12, 7, T0),
              ResumePoint("b", "orders", 0, "p.orders", 5, Basis.BEHIND, 9, 4, later),
              ResumePoint("b", "orders", 1, "p.orders", 3, Basis.EXACT, 3, 0, later))
    rpo = rpo_from_points(points)
    assert (rpo.records, rpo.basis, rpo.as_of, rpo.partitions) == (7, RpoBasis.LAST_CHECKPOINT, later,
                                                                   (("orders", 0, 7),))
    assert "as of the checkpoint of 2026-11-01T12:01:00Z" in rpo.describe()
    unknown = rpo_from_points((ResumePoint("g", "orders", 0, "p.orders", 5, Basis.TIMESTAMP, None, None, T0),))
    assert unknown.records is None and unknown.basis == RpoBasis.UNKNOWN and "unknown" in unknown.describe()
    # A dry run with the source reachable measures nothing either: the line must not blame the source.
    assert "the source was unreachable" not in unknown.describe() and "or a dry run" in unknown.describe()


def test_json_round_trip_keeps_everything() -> None:
    point = ResumePoint("app", "orders", 0, "primary.orders", 9, Basis.BEHIND, 12, 3, T0)
    run = _done(_run(
        request=FailoverRequest("r", ("app",), FailoverMode.TIMESTAMP, T0, 30, 10, 5), run_id=7,
        source_reachable=False, points=(point,),
        commits=(GroupCommit(point, TargetOutcome.WRITTEN, 4, None, 9),),
        lags=(PartitionLag("orders", 0, 20, 9, True, 3, 17),),
        rpo=rpo_measured((PartitionLag("orders", 0, 20, 9, True, 3, 17),), T0),
        route_stopped_at=T0, finished_at=T0 + dt.timedelta(seconds=3), notes=("a note",),
        fence=FenceRecord("primary", (fence_acl("orders", "User:*"),), T0, (Bypass("orders", 0, 2, 20, 23),))),
        Step.CHECK_SOURCE, Step.FENCE)
    data = json.loads(json.dumps(run.to_dict()))
    assert FailoverRun.from_dict(data) == run
    assert data["status"] == "running" and data["stopped_at"] == "drain" and data["rto_seconds"] == 3.0
    assert data["request"]["fence"] is False and data["fence"]["acls"][0]["principal"] == "User:*"


def test_next_steps_tell_each_group_where_to_go_and_the_route_is_held() -> None:
    exact = ResumePoint("app", "orders", 0, "primary.orders", 9, Basis.EXACT, 9, 0, T0)
    behind = ResumePoint("late", "orders", 0, "primary.orders", 9, Basis.BEHIND, 14, 5, T0)
    busy = ResumePoint("busy", "orders", 0, "primary.orders", 9, Basis.EXACT, 9, 0, T0)
    nosync = ResumePoint("app", "orders", 1, "primary.orders", None, Basis.UNKNOWN, 3, 0, T0)
    run = _run(run_id=3, finished_at=T0 + dt.timedelta(seconds=2.5), points=(exact, behind, busy, nosync),
               commits=(GroupCommit(exact, TargetOutcome.WRITTEN), GroupCommit(behind, TargetOutcome.WRITTEN),
                        GroupCommit(busy, TargetOutcome.ACTIVE_MEMBERS),
                        GroupCommit(nosync, TargetOutcome.UNTRANSLATED)),
               rpo=rpo_from_points((exact, behind)))
    text = next_steps(run)
    assert text.splitlines()[0] == "Route r failed over from 'primary' to 'backup' in 2.5 s."
    assert ("- group app: start its consumers on 'backup', subscribed to primary.orders; they resume exactly after "
            "the last record they consumed: none repeated, none skipped.") in text
    assert "group late: start its consumers on 'backup'" in text and "at most 5 records may be read again" in text
    assert "group busy: left as it is on 'backup': it has active members on 'backup'" in text
    assert "group app, orders-1: no offset sync" in text
    assert "primary.orders (copy of orders)" in text
    assert "refuses it while it is failed over (failover run 3)" in text and "--release" in text
    assert "RPO: 5 records known not replicated" in text


@pytest.mark.parametrize("dry_run", [True, False])
def test_identity_replicas_need_no_second_topic(dry_run: bool) -> None:
    point = ResumePoint("app", "orders", 0, "orders", 9, Basis.TIMESTAMP, None, None, T0)
    run = _run(request=FailoverRequest("r", ("app",), FailoverMode.TIMESTAMP, T0, dry_run=dry_run), points=(point,))
    text = next_steps(run)
    assert "copy of" not in text and "at the first record at or after 2026-11-01T12:00:00Z" in text
    assert text.startswith("Dry run of the failover of route r: nothing was changed.") == dry_run
