"""A runbook of the tests' own ("drill"): a request, a run record and the engine's description of it."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, replace
from enum import StrEnum

from replicator.domain.runbook import RunSteps, StepRecord, StepStatus
from replicator.runbooks.engine import Runbook, RunFailed

T0 = dt.datetime(2026, 11, 1, 12, 0, tzinfo=dt.UTC)


class Drill(StrEnum):
    CHECK = "check"
    MOVE = "move"


@dataclass(frozen=True, slots=True)
class DrillRequest:
    route: str
    target: str = "b"
    dry_run: bool = False

    def same_work(self, other: DrillRequest) -> bool:
        return (self.route, self.target) == (other.route, other.target)


@dataclass(frozen=True, slots=True)
class DrillRun(RunSteps[Drill]):
    request: DrillRequest
    triggered_at: dt.datetime = T0
    steps: tuple[StepRecord[Drill], ...] = tuple(StepRecord(s) for s in Drill)
    run_id: int | None = None
    finished_at: dt.datetime | None = None
    abandoned_at: dt.datetime | None = None
    note: str = ""


def with_steps(run: DrillRun, *statuses: StepStatus) -> DrillRun:
    """``run`` with its steps at these statuses (the rest pending)."""
    steps = tuple(StepRecord(s.step, statuses[i]) if i < len(statuses) else s for i, s in enumerate(run.steps))
    return replace(run, steps=steps)


BOOK: Runbook[DrillRun, object] = Runbook(
    "drill", dict.fromkeys(Drill, lambda ctx, run: None),  # type: ignore[arg-type,return-value]
    lambda run: RunFailed("drill", run, {"run_id": run.run_id}),
    lambda run: f"drill run {run.run_id} has other options: finish it or --restart",
    lambda run: f"drill run {run.run_id} started on route {run.request.route}")
