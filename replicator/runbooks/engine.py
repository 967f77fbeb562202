"""Run one step of a runbook's run: what failover and failback (and the next runbook) share.

A step is ``(ctx, run) -> StepResult``: the run as it leaves it, its status, a
readable detail and, when it failed, why. A step may also save the run midway
(``ctx.save``) when what it did must survive its own failure (a route marked failed
over). The engine:

- skips a step already done or skipped (a resumed run goes on at its first step not done);
- refuses a step whose predecessors are not finished (the DAG's tasks run one each);
- stores the run after the step, failed or not; a step that raised is recorded on
  top of the last run it saved (never the run as it was before it), with the error text;
- raises the runbook's error when the step failed, chained to what the step raised.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Generic, TypeVar

import pendulum

from replicator.domain.runbook import FINISHED_STEP, RunSteps, StepRecord, StepStatus
from replicator.errors import MirrorFlowError, UsageError

log = logging.getLogger(__name__)

R = TypeVar("R", bound=RunSteps[Any])
C = TypeVar("C")

Say = Callable[[str], None]
Save = Callable[[R], R]
Clock = Callable[[], Any]  # a timezone-aware datetime


def utc_now() -> Any:
    """Now, in UTC."""
    return pendulum.now("UTC")


@dataclass(frozen=True)
class StepResult(Generic[R]):
    """The run as a step leaves it, the step's status, what it decided, and why it failed."""

    run: R
    status: StepStatus
    detail: str
    error: str | None = None


class StepFailed(MirrorFlowError):
    """A step could not do its work; the message says what the operator does next."""


class RunFailed(MirrorFlowError):
    """A step failed; the stored run shows where (``summary`` has it) and a re-run resumes there."""

    def __init__(self, kind: str, run: RunSteps[Any], summary: dict[str, Any]) -> None:
        self.summary = summary
        step = run.stopped_at
        record = run.step(step) if step else None
        again = (f"run the same {kind} again to resume it there" if not run.request.dry_run
                 else "nothing was changed (dry run)")
        super().__init__(f"route {run.request.route}: {kind}{ref(run)} stopped at step {step}: "
                         f"{record.error if record else '?'}\n{again}")


def ref(run: RunSteps[Any]) -> str:
    """`` run 12`` for a stored run, nothing for a dry one."""
    return "" if run.run_id is None else f" run {run.run_id}"


def _as_stored(run: Any, request: Any) -> Any:
    return run


@dataclass(frozen=True)
class Runbook(Generic[R, C]):
    """What the engine knows of one runbook: its name, its steps in order, its error, its messages."""

    kind: str  # "failover": in every message
    steps: Mapping[Any, Callable[[C, R], StepResult[R]]]  # step (a StrEnum member) -> its function, in order
    failed: Callable[[R], RunFailed]  # the error of a run stopped at a failed step
    other_run: Callable[[R], str]  # why the route's unfinished run, asked with other options, stops a new one
    started: Callable[[R], str]  # the line that says a new run was stored
    resumed: Callable[[R, Any], R] = _as_stored  # the unfinished run as a request for the same work resumes it

    def label(self, step: StrEnum) -> str:
        """``[3/7] stop-route``."""
        return f"[{list(self.steps).index(step) + 1}/{len(self.steps)}] {step.value}"


def error_text(exc: BaseException) -> str:
    """What a step raised, as the run records it (Kafka errors by their code name)."""
    from replicator.kafka.admin import error_text as kafka_error_text

    return kafka_error_text(exc)


def run_step(book: Runbook[R, C], run: R, step: StrEnum, context: Callable[[Save[R]], C], store: Save[R],
             say: Say, now: Clock = utc_now) -> R:
    """Run ``step`` of ``run`` unless it is finished; store the run; ``book.failed`` when the step failed.

    ``context(save)`` builds the step's context around ``save`` (stores the run and
    remembers it, so a failure is recorded on top of what the step saved last).
    """
    record = run.step(step)
    if record.status in FINISHED_STEP:
        say(f"{book.label(step)}: {record.status.value} already: {record.detail}")
        return run
    _check_order(book, run, step)
    latest = [run]

    def save(changed: R) -> R:
        latest[0] = store(changed)
        return latest[0]

    started, cause = now(), None
    try:
        result = book.steps[step](context(save), run)
    except Exception as exc:  # recorded in the run, then raised as the runbook's error
        log.debug("%s step failed: step=%s", book.kind, step.value, exc_info=True)
        result, cause = StepResult(latest[0], StepStatus.FAILED, record.detail or "", error_text(exc)), exc
    run = save(result.run.with_step(StepRecord(step, result.status, result.detail, result.error, started, now())))
    say(f"{book.label(step)}: {result.status.value}" + (f": {result.detail}" if result.detail else "")
        + (f"\n  error: {result.error}" if result.error else ""))
    if result.status == StepStatus.FAILED:
        raise book.failed(run) from cause
    return run


def _check_order(book: Runbook[R, C], run: R, step: StrEnum) -> None:
    before = list(book.steps)[: list(book.steps).index(step)]
    waiting = [s.value for s in before if run.step(s).status not in (*FINISHED_STEP, StepStatus.PLANNED)]
    if waiting:
        raise UsageError(f"route {run.request.route}: {book.kind}{ref(run)}: step {step.value} comes after "
                         f"{', '.join(waiting)}, not done yet")


def run_all(book: Runbook[R, C], run: R, one: Callable[[R, Any], R]) -> R:
    """Every step of ``run`` in order (``one`` runs a step); the runbook's error at the first that fails."""
    for step in book.steps:
        run = one(run, step)
    return run
