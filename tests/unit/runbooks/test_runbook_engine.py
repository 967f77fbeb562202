"""The runbook engine on a runbook of its own ("drill"), an in-memory store, no brokers, no state DB."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from enum import StrEnum

import pytest

from replicator.domain.runbook import RunStatus, RunSteps, StepRecord, StepStatus
from replicator.errors import UsageError
from replicator.runbooks.engine import Runbook, RunFailed, StepFailed, StepResult, run_all, run_step
from replicator.runbooks.start import start
from replicator.testing.runbook import MemoryRunStore
from tests.runbook_drill import T0, DrillRequest


class Drill(StrEnum):  # three steps here: the engine's order and resume rules need a middle one
    CHECK = "check"
    MOVE = "move"
    FINISH = "finish"


@dataclass(frozen=True, slots=True)
class DrillRun(RunSteps[Drill]):
    request: DrillRequest
    triggered_at: dt.datetime
    steps: tuple[StepRecord[Drill], ...] = tuple(StepRecord(s) for s in Drill)
    run_id: int | None = None
    moved: tuple[str, ...] = ()  # what the steps did, in order
    finished_at: dt.datetime | None = None
    abandoned_at: dt.datetime | None = None


@dataclass
class Ctx:
    """The drill's step context: what each step does (``script``), and the engine's saver."""

    script: dict[Drill, str]
    save: Callable[[DrillRun], DrillRun]
    calls: list[Drill] = field(default_factory=list)


def _step(which: Drill) -> Callable[[Ctx, DrillRun], StepResult[DrillRun]]:
    def step(ctx: Ctx, run: DrillRun) -> StepResult[DrillRun]:
        ctx.calls.append(which)
        moved = replace(run, moved=(*run.moved, which.value))
        what = ctx.script.get(which, "ok")
        if what == "raise":
            raise ValueError(f"{which.value} broke")
        if what == "fail":
            return StepResult(moved, StepStatus.FAILED, "tried", "said no")
        if what == "save-then-raise":
            ctx.save(replace(run, moved=(*run.moved, "partial")))
            raise StepFailed("stopped midway")
        return StepResult(moved, StepStatus.DONE, f"{which.value} done")

    return step


BOOK: Runbook[DrillRun, Ctx] = Runbook(
    "drill", {s: _step(s) for s in Drill}, lambda run: RunFailed("drill", run, {"run_id": run.run_id}),
    lambda run: f"drill run {run.run_id} has other options", lambda run: f"drill run {run.run_id} started")


@dataclass
class Harness:
    store: MemoryRunStore[DrillRun] = field(default_factory=MemoryRunStore)
    said: list[str] = field(default_factory=list)
    ctx: Ctx = field(default_factory=lambda: Ctx({}, lambda run: run))

    def start(self, request: DrillRequest, restart: bool = False) -> DrillRun:
        return start(BOOK, self.store, request, restart, lambda _: DrillRun(request, T0), self.said.append,
                     lambda: T0)

    def step(self, run: DrillRun, step: Drill) -> DrillRun:
        def context(save: Callable[[DrillRun], DrillRun]) -> Ctx:
            self.ctx.save = save
            return self.ctx

        return run_step(BOOK, run, step, context, self.store.save, self.said.append, lambda: T0)

    def run(self, request: DrillRequest, script: dict[Drill, str], restart: bool = False) -> DrillRun:
        self.ctx.script = script
        return run_all(BOOK, self.start(request, restart), self.step)


def _statuses(run: DrillRun) -> list[str]:
    return [s.status.value for s in run.steps]


@pytest.mark.parametrize(("script", "statuses", "moved", "error", "cause"), [
    ({}, ["done", "done", "done"], ("check", "move", "finish"), None, None),
    ({Drill.MOVE: "raise"}, ["done", "failed", "pending"], ("check",), "move broke", ValueError),
    ({Drill.MOVE: "fail"}, ["done", "failed", "pending"], ("check", "move"), "said no", None),
    # what the step saved before it failed is kept: the failure is recorded on top of it
    ({Drill.MOVE: "save-then-raise"}, ["done", "failed", "pending"], ("check", "partial"), "stopped midway",
     StepFailed),
    ({Drill.CHECK: "raise"}, ["failed", "pending", "pending"], (), "check broke", ValueError),
])
def test_steps_run_in_order_and_a_failing_one_is_stored_with_its_error_and_cause(
        script: dict[Drill, str], statuses: list[str], moved: tuple[str, ...], error: str | None,
        cause: type[BaseException] | None) -> None:
    harness = Harness()
    if error is None:
        run = harness.run(DrillRequest("r"), script)
        assert run.status == RunStatus.DONE
    else:
        with pytest.raises(RunFailed) as failed:
            harness.run(DrillRequest("r"), script)
        assert failed.value.summary == {"run_id": 1} and error in str(failed.value)
        assert (failed.value.__cause__ is None) if cause is None else isinstance(failed.value.__cause__, cause)
        assert "run the same drill again to resume it there" in str(failed.value)
        run = harness.store.load(1)
        assert run.status == RunStatus.FAILED and run.step(run.stopped_at or Drill.CHECK).error == error
    assert _statuses(run) == statuses and run.moved == moved
    assert harness.store.load(1) == run  # stored after every step


def test_a_failed_run_resumes_at_its_failed_step() -> None:
    harness = Harness()
    with pytest.raises(RunFailed):
        harness.run(DrillRequest("r"), {Drill.MOVE: "raise"})
    harness.ctx.calls.clear()
    run = harness.run(DrillRequest("r"), {})
    assert run.run_id == 1 and run.status == RunStatus.DONE and run.moved == ("check", "move", "finish")
    assert harness.ctx.calls == [Drill.MOVE, Drill.FINISH]  # check is not run again
    assert "resuming drill run 1 of route r (stopped at move)" in harness.said
    assert "[1/3] check: done already: check done" in harness.said


def test_restart_abandons_the_unfinished_run_and_starts_anew() -> None:
    harness = Harness()
    with pytest.raises(RunFailed):
        harness.run(DrillRequest("r"), {Drill.MOVE: "raise"})
    with pytest.raises(UsageError, match="drill run 1 has other options"):
        harness.start(DrillRequest("r", target="c"))
    run = harness.run(DrillRequest("r", target="c"), {}, restart=True)
    old = harness.store.load(1)
    assert (run.run_id, run.status, old.status, old.abandoned_at) == (2, RunStatus.DONE, RunStatus.ABANDONED, T0)
    assert harness.said[-5:-3] == ["drill run 1 abandoned (--restart)", "drill run 2 started"]
    assert harness.store.unfinished("r") is None


def test_restart_without_an_unfinished_run_just_starts_one() -> None:
    harness = Harness()
    run = harness.start(DrillRequest("r"), restart=True)
    assert run.run_id == 1 and harness.said == ["drill run 1 started"]


def test_a_dry_run_is_never_stored_and_abandons_nothing() -> None:
    harness = Harness()
    with pytest.raises(RunFailed):
        harness.run(DrillRequest("r"), {Drill.MOVE: "raise"})
    saved = len(harness.store.saved)
    with pytest.raises(RunFailed) as failed:
        harness.run(DrillRequest("r", dry_run=True), {Drill.FINISH: "fail"}, restart=True)
    assert "nothing was changed (dry run)" in str(failed.value) and " run " not in str(failed.value).split(":")[1]
    assert len(harness.store.saved) == saved and harness.store.load(1).status == RunStatus.FAILED


def test_a_step_whose_predecessors_are_not_done_is_refused() -> None:
    harness = Harness()
    run = harness.start(DrillRequest("r"))
    with pytest.raises(UsageError, match="route r: drill run 1: step finish comes after check, move, not done yet"):
        harness.step(run, Drill.FINISH)
    assert harness.ctx.calls == []


def test_each_step_is_said_with_its_place() -> None:
    harness = Harness()
    harness.run(DrillRequest("r"), {})
    assert harness.said[-3:] == ["[1/3] check: done: check done", "[2/3] move: done: move done",
                                 "[3/3] finish: done: finish done"]


def test_the_error_line_is_said_under_the_step() -> None:
    harness = Harness()
    with pytest.raises(RunFailed):
        harness.run(DrillRequest("r"), {Drill.MOVE: "fail"})
    assert harness.said[-1] == "[2/3] move: failed: tried\n  error: said no"
