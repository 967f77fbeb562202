"""Failover runs: start or resume one, run its steps in order, store it after each. What the CLI and DAG call.

- :func:`failover_route` (``mirrorflow failover``): every step, progress lines on the way;
- :func:`start_run` then :func:`run_step` per step (the DAG ``mirrorflow_failover``,
  one task each), handing the run on as plain JSON.

A run that failed midway is resumed by the next failover of the route with the
same options: its finished steps are not run again. A dry run reads what the
steps need, writes nothing (not even the run) and shows what each would do.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import pendulum
from confluent_kafka.admin import AdminClient

from replicator.config import Config, ConfigRef, RouteConfig, as_config
from replicator.domain.failover import (
    FINISHED_STEP,
    FailoverMode,
    FailoverRequest,
    Step,
    StepRecord,
    StepStatus,
    parse_duration,
    parse_instant,
)
from replicator.domain.failover_run import FailoverRun, next_steps
from replicator.domain.group_filter import requested_group_problems
from replicator.errors import MirrorFlowError, UsageError
from replicator.failover.steps import STEPS, Ctx, StepResult
from replicator.kafka.admin import error_text
from replicator.worker.clients import admin_settings, group_id

log = logging.getLogger(__name__)

Say = Callable[[str], None]


class FailoverFailed(MirrorFlowError):
    """A step failed; the stored run shows where (``summary`` has it) and a re-run resumes there."""

    def __init__(self, run: FailoverRun) -> None:
        self.summary = summary(run)
        step = run.stopped_at
        record = run.step(step) if step else None
        again = ("run the same failover again to resume it there" if not run.request.dry_run
                 else "nothing was changed (dry run)")
        super().__init__(f"route {run.request.route}: failover{_ref(run)} stopped at step {step}: "
                         f"{record.error if record else '?'}\n{again}")


def _ref(run: FailoverRun) -> str:
    return "" if run.run_id is None else f" run {run.run_id}"


def request_of(route: str, groups: Sequence[str] | None = None, mode: str = "checkpoint", at: str | None = None,
               margin: str | int = "60s", drain_timeout: str | int = 60, stop_timeout: str | int = 30,
               dry_run: bool = False) -> FailoverRequest:
    """A request from plain arguments (CLI, DAG params); UsageError naming a bad one."""
    try:
        request = FailoverRequest(
            route, tuple(dict.fromkeys(groups)) if groups else None, FailoverMode(mode),
            parse_instant(at, "--at") if at else None, parse_duration(margin, "--margin"),
            parse_duration(drain_timeout, "--drain-timeout"), parse_duration(stop_timeout, "--stop-timeout"),
            dry_run)
    except ValueError as exc:
        raise UsageError(str(exc).replace("'checkpoint'", "checkpoint")) from None
    if request.problems():
        raise UsageError("\n".join(f"failover of route {route}: {p}" for p in request.problems()))
    return request


def summary(run: FailoverRun) -> dict[str, Any]:
    """The run as plain JSON, with what the applications do next."""
    return {**run.to_dict(), "next_steps": next_steps(run)}


def _open(url: str) -> Any:
    """The state DB (imported late: the CLI's --help and bad input never touch SQLAlchemy)."""
    from replicator.state.store import StateStore

    return StateStore(url)


def _saver(config: Config) -> Callable[[FailoverRun], FailoverRun]:
    def save(run: FailoverRun) -> FailoverRun:
        if run.request.dry_run:
            return run
        from replicator.state.failovers import save_run

        store = _open(config.state.url)
        try:
            return store.run(lambda session: save_run(session, run))  # type: ignore[no-any-return]
        finally:
            store.close()

    return save


def start(config: Config, request: FailoverRequest, restart: bool = False, say: Say = log.info) -> FailoverRun:
    """The route's unfinished run with the same request (resumed), or a new one; checks the names first."""
    from replicator.state.failovers import save_run, unfinished_run
    from replicator.state.repository import register_routes

    route = config.route(request.route)
    store = _open(config.state.url)
    try:
        with store.session() as session:
            unfinished = unfinished_run(session, route.name)
        if unfinished is not None and not request.dry_run:
            if not restart and unfinished.request.same_work(request):
                say(f"resuming failover run {unfinished.run_id} of route {route.name} "
                    f"(stopped at {unfinished.stopped_at})")
                return unfinished
            if not restart:
                raise UsageError(_other_run(unfinished))
        notes = _check_groups(config, route, request)
        run = FailoverRun.new(request, route.source, route.target, group_id(route), pendulum.now("UTC"))
        if unfinished is not None and request.dry_run:
            notes.append(f"failover run {unfinished.run_id} is unfinished (stopped at {unfinished.stopped_at}): "
                         "a real run with its options resumes it")
        run = _with_notes(run, notes)
        if request.dry_run:
            return run
        with store.session() as session:
            if unfinished is not None:  # --restart
                save_run(session, _abandoned(unfinished))
                say(f"failover run {unfinished.run_id} abandoned (--restart)")
            register_routes(session, [route])
            run = save_run(session, run)
        say(f"failover run {run.run_id} of route {route.name}: {route.source} -> {route.target}, mode "
            f"{request.mode.value}")
        return run
    finally:
        store.close()


def _with_notes(run: FailoverRun, notes: list[str]) -> FailoverRun:
    return replace(run, notes=tuple(notes))


def _abandoned(run: FailoverRun) -> FailoverRun:
    return replace(run, abandoned_at=pendulum.now("UTC"))


def _other_run(run: FailoverRun) -> str:
    req = run.request
    record = run.step(run.stopped_at) if run.stopped_at else None
    why = f": {record.error}" if record and record.error else ""
    return (f"route {req.route}: failover run {run.run_id} is unfinished (stopped at {run.stopped_at}{why}) with "
            f"other options (mode {req.mode.value}, groups {list(req.groups) if req.groups else 'all checkpointed'}"
            f"{'' if req.at is None else f', at {req.at.isoformat()}'}, margin {req.margin_seconds} s): run it "
            "again with those to resume it, or add --restart to abandon it and start anew")


def _check_groups(config: Config, route: RouteConfig, request: FailoverRequest) -> list[str]:
    """UsageError for a group named that cannot be found; notes for those that cannot be checked."""
    from replicator.checkpoints.groups import list_groups
    from replicator.failover.source import unreachable
    from replicator.state.checkpoints import checkpoints

    if not request.groups:
        return []
    store = _open(config.state.url)
    try:
        with store.session() as session:
            stored = {c.group for c, _ in checkpoints(session, route.name)}
    finally:
        store.close()
    missing = [g for g in request.groups if g not in stored]
    if not missing:
        return []
    on_source, on_target = f"route {route.name}: source {route.source!r}", f"route {route.name}: target {route.target!r}"
    why_not = unreachable(config, route.source)
    if request.mode == FailoverMode.CHECKPOINT:
        if why_not:
            raise UsageError("\n".join(f"{on_source}: no checkpoint of group {g!r} is stored, and the source is "
                                       f"unreachable to look for it ({why_not})" for g in missing))
        admin = AdminClient(admin_settings(config.cluster(route.source).client_properties()))
        problems = requested_group_problems(missing, list_groups(admin, on_source), route.checkpoints.group_filter)
        if problems:
            raise UsageError("\n".join(f"{on_source}: {p}" for p in problems))
        return []
    admin = AdminClient(admin_settings(config.cluster(route.target).client_properties()))
    missing = [g for g in missing if g not in set(list_groups(admin, on_target))]
    if missing and why_not is None:
        admin = AdminClient(admin_settings(config.cluster(route.source).client_properties()))
        unknown = [g for g in missing if g not in set(list_groups(admin, on_source))]
        if unknown:
            raise UsageError("\n".join(f"route {route.name}: no consumer group {g!r} on {route.source!r} or "
                                       f"{route.target!r}, and no checkpoint of it" for g in unknown))
        return []
    return [f"group {g}: seen neither on {route.target!r} nor in the checkpoints, and {route.source!r} is "
            "unreachable: taken as given" for g in missing]


def run_step(config: Config, run: FailoverRun, step: Step, say: Say = log.info) -> FailoverRun:
    """Run ``step`` of ``run`` unless it is finished; store the run; FailoverFailed when the step failed."""
    number = list(Step).index(step) + 1
    label = f"[{number}/{len(Step)}] {step.value}"
    record = run.step(step)
    if record.status in FINISHED_STEP:
        say(f"{label}: {record.status.value} already: {record.detail}")
        return run
    waiting = [s.step.value for s in run.steps[: number - 1] if s.status not in (*FINISHED_STEP, StepStatus.PLANNED)]
    if waiting:
        raise UsageError(f"route {run.request.route}: failover{_ref(run)}: step {step.value} comes after "
                         f"{', '.join(waiting)}, not done yet")
    route, store = config.route(run.request.route), _saver(config)
    latest = [run]  # what the step stored last (a hold it recorded must survive its failure)

    def save(changed: FailoverRun) -> FailoverRun:
        latest[0] = store(changed)
        return latest[0]

    ctx = Ctx(config, route, say, save)
    started, cause = pendulum.now("UTC"), None
    try:
        result = STEPS[step](ctx, run)
    except Exception as exc:  # noqa: BLE001 - recorded in the run, then raised as FailoverFailed
        result, cause = StepResult(latest[0], StepStatus.FAILED, record.detail or "", error_text(exc)), exc
    run = ctx.save(result.run.with_step(StepRecord(step, result.status, result.detail, result.error, started,
                                                   pendulum.now("UTC"))))
    say(f"{label}: {result.status.value}" + (f": {result.detail}" if result.detail else "")
        + (f"\n  error: {result.error}" if result.error else ""))
    if result.status == StepStatus.FAILED:
        raise FailoverFailed(run) from cause
    return run


def failover_route(config: ConfigRef, request: FailoverRequest, restart: bool = False,
                   say: Say = log.info) -> FailoverRun:
    """Start (or resume) a failover and run every step; FailoverFailed at the first that fails."""
    loaded = as_config(config)
    run = start(loaded, request, restart, say)
    for step in Step:
        run = run_step(loaded, run, step, say)
    return run


def start_run(config: ConfigRef, route: str, groups: Sequence[str] | None = None, mode: str = "checkpoint",
              at: str | None = None, margin: str | int = "60s", drain_timeout: str | int = 60,
              dry_run: bool = False) -> dict[str, Any]:
    """The DAG's first task: start or resume a run; its JSON for the next task."""
    return summary(start(as_config(config), request_of(route, groups, mode, at, margin, drain_timeout,
                                                        dry_run=dry_run)))


def step_of_run(config: ConfigRef, step: str, run: dict[str, Any]) -> dict[str, Any]:
    """One DAG task: the run as stored (or, dry, as handed on), ``step`` run; its JSON for the next task."""
    loaded = as_config(config)
    current = FailoverRun.from_dict(run)
    if current.run_id is not None:
        from replicator.state.failovers import load_run

        store = _open(loaded.state.url)
        try:
            with store.session() as session:
                current = load_run(session, current.run_id)
        finally:
            store.close()
    return summary(run_step(loaded, current, Step(step)))


def release_route(config: ConfigRef, route: str) -> list[int]:
    """Let a failed-over route run again (after a drill); the ids of the runs that held it."""
    from replicator.failover.guard import release

    loaded = as_config(config)
    return release(loaded, loaded.route(route), pendulum.now("UTC"))

