"""Failback runs: start or resume one, run its steps in order, store it after each. What the CLI and DAG call.

- :func:`failback_route` (``mirrorflow failback``): every step, progress lines on the way;
- :func:`start_run` then :func:`step_of_run` per step (the DAG ``mirrorflow_failback``,
  one task each), handing the run on as plain JSON.

A run that failed midway is resumed by the next failback of the route with the
same mode and groups: its finished steps are not run again. A dry run reads what
the steps need, writes nothing (not even the run) and shows what each would do.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import pendulum

from replicator.config import Config, ConfigRef, as_config
from replicator.domain.failback import (
    FailbackMode,
    FailbackRequest,
    FailbackRun,
    FailbackStep,
    FailbackStepRecord,
    next_steps,
    run_from_dict,
)
from replicator.domain.failover import FINISHED_STEP, StepStatus, parse_duration
from replicator.errors import MirrorFlowError, UsageError
from replicator.failback import reverse as rev
from replicator.failback.steps import STEPS, Ctx, StepResult
from replicator.kafka.admin import error_text

log = logging.getLogger(__name__)

Say = Callable[[str], None]


class FailbackFailed(MirrorFlowError):
    """A step failed; the stored run shows where (``summary`` has it) and a re-run resumes there."""

    def __init__(self, run: FailbackRun) -> None:
        self.summary = summary(run)
        step = run.stopped_at
        record = run.step(step) if step else None
        again = ("run the same failback again to resume it there" if not run.request.dry_run
                 else "nothing was changed (dry run)")
        ref = "" if run.run_id is None else f" run {run.run_id}"
        super().__init__(f"route {run.request.route}: failback{ref} stopped at step {step}: "
                         f"{record.error if record else '?'}\n{again}")


def request_of(route: str, mode: str = "incremental", groups: Sequence[str] | None = None,
               drain_timeout: str | int = 60, accept_loss: bool = False, dry_run: bool = False) -> FailbackRequest:
    """A request from plain arguments (CLI, DAG params); UsageError naming a bad one."""
    try:
        request = FailbackRequest(route, FailbackMode(mode), tuple(dict.fromkeys(groups)) if groups else None,
                                  parse_duration(drain_timeout, "--drain-timeout"), accept_loss, dry_run)
    except ValueError as exc:
        raise UsageError(f"failback of route {route}: {exc}".replace("'FailbackMode'", "mode")) from None
    if request.problems():
        raise UsageError("\n".join(f"failback of route {route}: {p}" for p in request.problems()))
    return request


def summary(run: FailbackRun) -> dict[str, Any]:
    """The run as plain JSON, with what the applications do next."""
    return {**run.to_dict(), "next_steps": next_steps(run)}


def _store(config: Config) -> Any:
    from replicator.state.store import StateStore

    return StateStore(config.state.url)


def _save(config: Config, run: FailbackRun) -> FailbackRun:
    if run.request.dry_run:
        return run
    from replicator.state.failbacks import save_run

    store = _store(config)
    try:
        return store.run(lambda session: save_run(session, run))  # type: ignore[no-any-return]
    finally:
        store.close()


def start(config: Config, request: FailbackRequest, say: Say = log.info) -> FailbackRun:
    """The route's unfinished run with the same request (resumed), or a new one."""
    from replicator.state.failbacks import unfinished_run
    from replicator.state.failovers import route_hold

    route = config.route(request.route)
    store = _store(config)
    try:
        with store.session() as session:
            unfinished, hold = unfinished_run(session, route.name), route_hold(session, route.name)
    finally:
        store.close()
    if unfinished is not None and not request.dry_run:
        if unfinished.request.same_work(request):
            say(f"resuming failback run {unfinished.run_id} of route {route.name} (stopped at "
                f"{unfinished.stopped_at})")
            # The operator's latest word on how long to drain and whether to accept a loss counts.
            return replace(unfinished, request=replace(unfinished.request, accept_loss=request.accept_loss,
                                                       drain_timeout_seconds=request.drain_timeout_seconds))
        raise UsageError(f"route {route.name}: failback run {unfinished.run_id} is unfinished (stopped at "
                         f"{unfinished.stopped_at}) with mode {unfinished.request.mode.value}: run it again with "
                         "that mode to finish it")
    _check_groups(config, route.target, request)
    if unfinished is None and hold is None:
        raise UsageError(f"route {route.name} is not failed over (no failover run holds it): there is nothing to "
                         f"fail back; `mirrorflow failover --route {route.name}` moves it first")
    run = FailbackRun.new(request, route.source, route.target, pendulum.now("UTC"))
    if request.dry_run:
        return run
    run = _save(config, run)
    say(f"failback run {run.run_id} of route {route.name}: {route.target} -> {route.source}, mode "
        f"{request.mode.value}")
    return run


def _check_groups(config: Config, backup: str, request: FailbackRequest) -> None:
    """UsageError naming a group asked for that the backup does not know (before anything changes)."""
    if not request.groups:
        return
    from confluent_kafka.admin import AdminClient

    from replicator.checkpoints.groups import list_groups
    from replicator.worker.clients import admin_settings

    admin = AdminClient(admin_settings(config.cluster(backup).client_properties()))
    missing = sorted(set(request.groups) - set(list_groups(admin, f"route {request.route}: {backup!r}")))
    if missing:
        raise UsageError(f"route {request.route}: no consumer group {', '.join(map(repr, missing))} on {backup!r}: "
                         "nothing to move back")


def run_step(config: Config, run: FailbackRun, step: FailbackStep, say: Say = log.info) -> FailbackRun:
    """Run ``step`` of ``run`` unless it is finished; store the run; FailbackFailed when the step failed."""
    number = list(FailbackStep).index(step) + 1
    label = f"[{number}/{len(FailbackStep)}] {step.value}"
    record = run.step(step)
    if record.status in FINISHED_STEP:
        say(f"{label}: {record.status.value} already: {record.detail}")
        return run
    waiting = [s.step.value for s in run.steps[: number - 1] if s.status not in (*FINISHED_STEP, StepStatus.PLANNED)]
    if waiting:
        raise UsageError(f"route {run.request.route}: failback run {run.run_id}: step {step.value} comes after "
                         f"{', '.join(waiting)}, not done yet")
    route = config.route(run.request.route)
    full, reverse = rev.reverse_config(config, route, run.topics, run.request.mode) if run.topics else (config, None)
    ctx = Ctx(full, route, reverse, say, lambda changed: _save(config, changed))
    started = pendulum.now("UTC")
    try:
        result = STEPS[step.value](ctx, run)
        status, error = result.status, None
    except Exception as exc:
        log.debug("failback step failed", exc_info=True)
        result, status, error = StepResult(run, StepStatus.FAILED, record.detail or ""), StepStatus.FAILED, \
            error_text(exc)
    run = _save(config, result.run.with_step(FailbackStepRecord(step, status, result.detail, error, started,
                                                                pendulum.now("UTC"))))
    say(f"{label}: {status.value}" + (f": {result.detail}" if result.detail else "")
        + (f"\n  error: {error}" if error else ""))
    if status == StepStatus.FAILED:
        raise FailbackFailed(run)
    return run


def failback_route(config: ConfigRef, request: FailbackRequest, say: Say = log.info) -> FailbackRun:
    """Start (or resume) a failback and run every step; FailbackFailed at the first that fails."""
    loaded = as_config(config)
    run = start(loaded, request, say)
    for step in FailbackStep:
        run = run_step(loaded, run, step, say)
    return run


def start_run(config: ConfigRef, route: str, mode: str = "incremental", groups: Sequence[str] | None = None,
              drain_timeout: str | int = 60, accept_loss: bool = False, dry_run: bool = False) -> dict[str, Any]:
    """The DAG's first task: start or resume a run; its JSON for the next task."""
    return summary(start(as_config(config), request_of(route, mode, groups, drain_timeout, accept_loss, dry_run)))


def step_of_run(config: ConfigRef, step: str, run: dict[str, Any]) -> dict[str, Any]:
    """One DAG task: the run as stored (or, dry, as handed on), ``step`` run; its JSON for the next task."""
    loaded = as_config(config)
    current = run_from_dict(run)
    if current.run_id is not None:
        from replicator.state.failbacks import load_run

        store = _store(loaded)
        try:
            with store.session() as session:
                current = load_run(session, current.run_id)
        finally:
            store.close()
    return summary(run_step(loaded, current, FailbackStep(step), print))
