"""Failover runs in the state DB: saved after each step, loaded back whole; a held route refuses to run."""

from __future__ import annotations

import dataclasses
import datetime as dt

import pytest

from replicator.config import parse_config
from replicator.domain.failover import FailoverMode, FailoverRequest, Step, StepRecord, StepStatus
from replicator.domain.failover_run import FailoverRun, PartitionLag, RunStatus, rpo_measured
from replicator.domain.fence import Bypass, FenceRecord, fence_acl
from replicator.domain.resume_point import Basis, GroupCommit, ResumePoint
from replicator.domain.target_group import TargetOutcome
from replicator.state.failover_hold import RouteFailedOver, refuse_if_failed_over, release
from replicator.state.failovers import (
    load_run,
    raised_fences,
    route_hold,
    runs,
    save_fence,
    save_run,
    unfinished_run,
)
from replicator.state.models import FailoverOffsetRow, FailoverStepRow
from replicator.state.store import StateStore

T0 = dt.datetime(2026, 11, 1, 12, 0, tzinfo=dt.UTC)
POINT = ResumePoint("app", "orders", 0, "primary.orders", 9, Basis.BEHIND, 12, 3, T0)


def _new(route: str = "r", **request: object) -> FailoverRun:
    return FailoverRun.new(FailoverRequest(route, **request), "primary", "backup", f"mirrorflow-{route}", T0)  # type: ignore[arg-type]


def test_a_run_saved_step_by_step_loads_back_whole(state_url: str) -> None:
    with StateStore(state_url) as store:
        run = store.run(lambda s: save_run(s, _new(groups=("app",), mode=FailoverMode.TIMESTAMP, at=T0)))
        assert run.run_id is not None
        run = run.with_step(StepRecord(Step.CHECK_SOURCE, StepStatus.DONE, "source 'primary' is unreachable",
                                       None, T0, T0 + dt.timedelta(seconds=1)))
        run = dataclasses.replace(run, source_reachable=False, points=(POINT,), route_stopped_at=T0)
        for _ in range(2):  # saving again (a retried task) is harmless
            store.run(lambda s: save_run(s, run))
        lag = PartitionLag("orders", 0, 20, 9, True, 2, 18)  # a transaction still open at 18
        fence = FenceRecord("primary", (fence_acl("orders", "User:app"),), T0, (Bypass("orders", 0, 1, 5, 6),))
        run = dataclasses.replace(run, commits=(GroupCommit(POINT, TargetOutcome.WRITTEN, 4, None, 9),),
                                  lags=(lag,), rpo=rpo_measured((lag,), T0), notes=("one", "two"),
                                  finished_at=T0 + dt.timedelta(seconds=7), fence=fence)
        store.run(lambda s: save_run(s, run))
        with store.session() as session:
            assert load_run(session, run.run_id) == run
            assert session.query(FailoverStepRow).count() == len(Step)
            assert session.query(FailoverOffsetRow).count() == 1


def test_a_raised_fence_is_listed_until_it_is_lifted(state_url: str) -> None:
    fence = FenceRecord("primary", (fence_acl("orders", "User:*"),), T0)
    with StateStore(state_url) as store:
        plain = store.run(lambda s: save_run(s, _new()))
        fenced = store.run(lambda s: save_run(s, dataclasses.replace(_new(fence=True, topics=("orders",)),
                                                                     fence=fence)))
        assert store.run(lambda s: raised_fences(s, "r")) == [(fenced.run_id, fence)]
        assert plain.run_id is not None and store.run(lambda s: raised_fences(s, "other")) == []
        lifted = dataclasses.replace(fence, lifted_at=T0)
        assert fenced.run_id is not None
        store.run(lambda s: save_fence(s, fenced.run_id, lifted))
        assert store.run(lambda s: raised_fences(s, "r")) == []
        with store.session() as session:
            loaded = load_run(session, fenced.run_id)
        assert loaded.fence == lifted and loaded.request.fence and loaded.request.topics == ("orders",)


def test_the_unfinished_run_is_the_one_a_rerun_resumes(state_url: str) -> None:
    with StateStore(state_url) as store:
        done = dataclasses.replace(_new(), finished_at=T0)
        for step in Step:
            done = done.with_step(StepRecord(step, StepStatus.DONE))
        store.run(lambda s: save_run(s, done))
        with store.session() as session:
            assert unfinished_run(session, "r") is None
        failed = _new().with_step(StepRecord(Step.CHECK_SOURCE, StepStatus.FAILED, error="target down"))
        failed = store.run(lambda s: save_run(s, failed))
        store.run(lambda s: save_run(s, _new("other")))
        with store.session() as session:
            found = unfinished_run(session, "r")
            assert found is not None and found.run_id == failed.run_id and found.status == RunStatus.FAILED
            assert [r.status for r in runs(session, "r")] == [RunStatus.FAILED, RunStatus.DONE]
        store.run(lambda s: save_run(s, dataclasses.replace(found, abandoned_at=T0)))
        with store.session() as session:
            assert unfinished_run(session, "r") is None
            assert runs(session, "r")[0].status == RunStatus.ABANDONED


def test_a_dry_run_is_never_stored(state_url: str) -> None:
    with StateStore(state_url) as store:
        with pytest.raises(ValueError, match="never stored"), store.session() as session:
            save_run(session, _new(dry_run=True))


def test_a_stopped_route_refuses_to_run_until_released(state_url: str) -> None:
    config = parse_config("clusters: {primary: {bootstrap.servers: 'h:1'}, backup: {bootstrap.servers: 'h:2'}}\n"
                          "routes: [{name: r, source: primary, target: backup, topics: [x]},\n"
                          "         {name: s, source: primary, target: backup, topics: [y]}]\n"
                          f"state: {{url: '{state_url}'}}\n")
    route = config.route("r")
    refuse_if_failed_over(config, route)  # nothing held yet
    with StateStore(state_url) as store:
        run = store.run(lambda s: save_run(s, _new()))  # started, the route not stopped yet: it may still run
        refuse_if_failed_over(config, route)
        store.run(lambda s: save_run(s, dataclasses.replace(run, route_stopped_at=T0)))
        with store.session() as session:
            assert route_hold(session, "s") is None
    with pytest.raises(RouteFailedOver) as refused:
        refuse_if_failed_over(config, route)
    assert refused.value.exit_code == 2
    assert (f"route r was failed over to 'backup' by failover run {run.run_id} (stopped at 2026-11-01T12:00:00Z, "
            "run running)") in str(refused.value)
    assert "mirrorflow failover --route r --release" in str(refused.value)
    refuse_if_failed_over(config, config.route("s"))  # another route runs on
    assert release(config, route, T0) == [run.run_id]
    refuse_if_failed_over(config, route)
    assert release(config, route, T0) == []
