"""What every runbook's run record shares (failover, failback, the next one): its steps and its status.

A runbook is a fixed list of steps run in order. Its run is stored after each step,
so one that stopped midway shows where, and the next run of the same request resumes
at its first step not done (:mod:`replicator.runbooks.engine` runs them). A run
record is a frozen dataclass that mixes in :class:`RunSteps` for the bookkeeping.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any, Generic, Protocol, Self, TypeVar

from replicator.domain.run_json import parse_time


class StepStatus(StrEnum):
    """Where one step stands."""

    PENDING = "pending"
    DONE = "done"
    SKIPPED = "skipped"  # decided not needed (the detail says why)
    FAILED = "failed"
    PLANNED = "planned"  # dry run: what it would do


FINISHED_STEP = (StepStatus.DONE, StepStatus.SKIPPED)


class RunStatus(StrEnum):
    """How a run as a whole stands."""

    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"  # a step failed: re-running resumes at it
    ABANDONED = "abandoned"  # replaced by a new run (--restart)
    DRY_RUN = "dry-run"


S = TypeVar("S", bound=StrEnum)


@dataclass(frozen=True, slots=True)
class StepRecord(Generic[S]):
    """One step of a run: its status, the decision it took (readable) and its error."""

    step: S
    status: StepStatus = StepStatus.PENDING
    detail: str | None = None
    error: str | None = None
    started_at: dt.datetime | None = None
    finished_at: dt.datetime | None = None


class Request(Protocol):
    """What the engine reads of a runbook's request."""

    @property
    def route(self) -> str:
        """The route the runbook acts on."""

    @property
    def dry_run(self) -> bool:
        """True when nothing may be changed or stored."""

    def same_work(self, other: Any) -> bool:
        """True when ``other`` asks for the same work (so it may resume this request's run)."""


class RunSteps(Generic[S]):
    """The bookkeeping of a run record's steps; mixed into a frozen dataclass with these fields."""

    __slots__ = ()
    request: Request
    steps: tuple[StepRecord[S], ...]
    run_id: int | None
    triggered_at: dt.datetime
    finished_at: dt.datetime | None
    abandoned_at: dt.datetime | None

    def step(self, step: S) -> StepRecord[S]:
        """The record of ``step``."""
        return next(s for s in self.steps if s.step == step)

    def with_step(self, record: StepRecord[S]) -> Self:
        """This run with ``record`` replacing its step's record."""
        steps = tuple(record if s.step == record.step else s for s in self.steps)
        return replace(self, steps=steps)  # type: ignore[type-var]

    def abandon(self, at: dt.datetime) -> Self:
        """This run given up ``at`` (``--restart`` started another)."""
        return replace(self, abandoned_at=at)  # type: ignore[type-var]

    @property
    def status(self) -> RunStatus:
        """dry-run, abandoned, failed (a step failed), done (the last step done) or running."""
        if self.request.dry_run:
            return RunStatus.DRY_RUN
        if self.abandoned_at is not None:
            return RunStatus.ABANDONED
        if any(s.status == StepStatus.FAILED for s in self.steps):
            return RunStatus.FAILED
        return RunStatus.DONE if self.steps[-1].status == StepStatus.DONE else RunStatus.RUNNING

    @property
    def stopped_at(self) -> S | None:
        """The first step not done or skipped (None when all are)."""
        return next((s.step for s in self.steps if s.status not in FINISHED_STEP), None)

    @property
    def rto_seconds(self) -> float | None:
        """Seconds from the trigger to the end (None until finished)."""
        return None if self.finished_at is None else (self.finished_at - self.triggered_at).total_seconds()


def steps_from(data: Sequence[Mapping[str, Any]], kind: type[S]) -> tuple[StepRecord[S], ...]:
    """The step records that ``plain`` wrote (a run's ``to_dict()["steps"]``)."""
    return tuple(StepRecord(kind(s["step"]), StepStatus(s["status"]), s["detail"], s["error"],
                            parse_time(s["started_at"]), parse_time(s["finished_at"])) for s in data)


def acting(run: RunSteps[Any]) -> StepStatus:
    """The status of a step that did its work: planned in a dry run, done otherwise."""
    return StepStatus.PLANNED if run.request.dry_run else StepStatus.DONE
