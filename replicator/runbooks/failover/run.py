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
from replicator.domain.failover import FailoverMode, FailoverRequest, Step, parse_duration, parse_instant
from replicator.domain.failover_run import FailoverRun, next_steps
from replicator.domain.group_filter import requested_group_problems
from replicator.errors import UsageError
from replicator.kafka.clients import admin_settings
from replicator.runbooks import engine
from replicator.runbooks.engine import Runbook, RunFailed
from replicator.runbooks.failover.source import workers_group
from replicator.runbooks.failover.steps import STEPS, Ctx
from replicator.runbooks.start import dry_run_note
from replicator.runbooks.start import start as runbook_start
from replicator.runbooks.store import SqlRunStore

log = logging.getLogger(__name__)

Say = Callable[[str], None]


class FailoverFailed(RunFailed):
    """A step failed; the stored run shows where (``summary`` has it) and a re-run resumes there."""

    def __init__(self, run: FailoverRun) -> None:
        super().__init__("failover", run, summary(run))


def request_of(route: str, groups: Sequence[str] | None = None, mode: str = "checkpoint", at: str | None = None,
               margin: str | int = "60s", drain_timeout: str | int = 60, stop_timeout: str | int = 30,
               dry_run: bool = False, fence: bool = False, accept_bypass: bool = False,
               topics: Sequence[str] | None = None) -> FailoverRequest:
    """A request from plain arguments (CLI, DAG params); UsageError naming a bad one."""
    try:
        request = FailoverRequest(
            route, tuple(dict.fromkeys(groups)) if groups else None, FailoverMode(mode),
            parse_instant(at, "--at") if at else None, parse_duration(margin, "--margin"),
            parse_duration(drain_timeout, "--drain-timeout"), parse_duration(stop_timeout, "--stop-timeout"),
            dry_run, fence, accept_bypass, tuple(dict.fromkeys(topics)) if topics else None)
    except ValueError as exc:
        raise UsageError(str(exc).replace("'checkpoint'", "checkpoint")) from None
    if request.problems():
        raise UsageError("\n".join(f"failover of route {route}: {p}" for p in request.problems()))
    return request


def summary(run: FailoverRun) -> dict[str, Any]:
    """The run as plain JSON, with what the applications do next."""
    return {**run.to_dict(), "next_steps": next_steps(run)}


def _store(config: Config, route: RouteConfig | None = None) -> SqlRunStore[FailoverRun]:
    """The failover runs in the state DB (a new run registers ``route`` with it)."""
    from replicator.state import failovers
    from replicator.state.repository import register_routes

    on_begin = None if route is None else (lambda session: register_routes(session, [route]))
    return SqlRunStore(config.state.url, failovers.save_run, failovers.unfinished_run, failovers.load_run, on_begin)


def _other_run(run: FailoverRun) -> str:
    req = run.request
    record = run.step(run.stopped_at) if run.stopped_at else None
    why = f": {record.error}" if record and record.error else ""
    return (f"route {req.route}: failover run {run.run_id} is unfinished (stopped at {run.stopped_at}{why}) with "
            f"other options (mode {req.mode.value}, groups {list(req.groups) if req.groups else 'all checkpointed'}"
            f"{'' if req.at is None else f', at {req.at.isoformat()}'}, margin {req.margin_seconds} s): run it "
            "again with those to resume it, or add --restart to abandon it and start anew")


def _started(run: FailoverRun) -> str:
    return (f"failover run {run.run_id} of route {run.request.route}: {run.source} -> {run.target}, mode "
            f"{run.request.mode.value}")


FAILOVER: Runbook[FailoverRun, Ctx] = Runbook("failover", STEPS, FailoverFailed, _other_run, _started)


def start(config: Config, request: FailoverRequest, restart: bool = False, say: Say = log.info) -> FailoverRun:
    """The route's unfinished run with the same request (resumed), or a new one; checks the names first."""
    route = config.route(request.route)

    def fresh(unfinished: FailoverRun | None) -> FailoverRun:
        notes = _check_groups(config, route, request)
        _check_topics(config, route, request)
        _check_fence(config, route, request)
        if unfinished is not None and request.dry_run:
            notes.append(dry_run_note(FAILOVER, unfinished))
        run = FailoverRun.new(request, route.source, route.target, workers_group(route)[1], pendulum.now("UTC"))
        return replace(run, notes=tuple(notes))

    return runbook_start(FAILOVER, _store(config, route), request, restart, fresh, say)


def _check_groups(config: Config, route: RouteConfig, request: FailoverRequest) -> list[str]:
    """UsageError for a group named that cannot be found; notes for those that cannot be checked."""
    from replicator.kafka.groups import list_groups
    from replicator.runbooks.failover.source import unreachable
    from replicator.state.checkpoints import checkpoints
    from replicator.state.store import StateStore

    if not request.groups:
        return []
    with StateStore(config.state.url) as store:
        with store.session() as session:
            stored = {c.group for c, _ in checkpoints(session, route.name)}
    missing = [g for g in request.groups if g not in stored]
    if not missing:
        return []
    on_source = f"route {route.name}: source {route.source!r}"
    on_target = f"route {route.name}: target {route.target!r}"
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


def _check_topics(config: Config, route: RouteConfig, request: FailoverRequest) -> None:
    """--topic: UsageError naming each topic the route does not copy (nothing changed)."""
    from replicator.runbooks.route_scope import check_copied
    from replicator.state.repository import register_routes, route_topics
    from replicator.state.store import StateStore

    if not request.topics:
        return
    with StateStore(config.state.url) as store:
        with store.session() as session:
            register_routes(session, [route])
            rows = {r.topic: r for r in route_topics(session, route.name)}
    check_copied(config, route, request.topics, rows)


def _check_fence(config: Config, route: RouteConfig, request: FailoverRequest) -> None:
    """--fence: UsageError (exit 2, nothing changed) when the source cannot be fenced -- no authorizer, a missing
    right, a topic every principal may write while some are exempt. An unreachable source is the step's to say."""
    from replicator.runbooks.failover.fencing import check
    from replicator.runbooks.failover.source import unreachable

    if request.fence and unreachable(config, route.source) is None:
        check(config, route)


def run_step(config: Config, run: FailoverRun, step: Step, say: Say = log.info) -> FailoverRun:
    """Run ``step`` of ``run`` unless it is finished; store the run; FailoverFailed when the step failed."""
    route = config.route(run.request.route)
    return engine.run_step(FAILOVER, run, step, lambda save: Ctx(config, route, say, save), _store(config).save, say)


def failover_route(config: ConfigRef, request: FailoverRequest, restart: bool = False,
                   say: Say = log.info) -> FailoverRun:
    """Start (or resume) a failover and run every step; FailoverFailed at the first that fails."""
    loaded = as_config(config)
    return engine.run_all(FAILOVER, start(loaded, request, restart, say),
                          lambda run, step: run_step(loaded, run, step, say))


def start_run(config: ConfigRef, route: str, groups: Sequence[str] | None = None, mode: str = "checkpoint",
              at: str | None = None, margin: str | int = "60s", drain_timeout: str | int = 60,
              dry_run: bool = False, fence: bool = False, accept_bypass: bool = False,
              topics: Sequence[str] | None = None) -> dict[str, Any]:
    """The DAG's first task: start or resume a run; its JSON for the next task."""
    return summary(start(as_config(config), request_of(route, groups, mode, at, margin, drain_timeout,
                                                        dry_run=dry_run, fence=fence, accept_bypass=accept_bypass,
                                                        topics=topics)))


def step_of_run(config: ConfigRef, step: str, run: dict[str, Any]) -> dict[str, Any]:
    """One DAG task: the run as stored (or, dry, as handed on), ``step`` run; its JSON for the next task."""
    loaded = as_config(config)
    current = FailoverRun.from_dict(run)
    if current.run_id is not None:
        current = _store(loaded).load(current.run_id)
    return summary(run_step(loaded, current, Step(step)))


def release_route(config: ConfigRef, route: str, say: Say = log.info) -> list[int]:
    """Let a failed-over route run again (after a drill), its fences lifted; the ids of the runs that held it."""
    from replicator.runbooks.failover.fencing import lift_held
    from replicator.state.failover_hold import release
    from replicator.state.repository import register_routes, release_topics
    from replicator.state.store import StateStore

    loaded = as_config(config)
    lift_held(loaded, loaded.route(route), say)
    with StateStore(loaded.state.url) as store:
        with store.session() as session:
            register_routes(session, [loaded.route(route)])
            topics = release_topics(session, route)
    if topics:
        say(f"route {route}: topic(s) {', '.join(topics)} copied again (they were failed over by topic)")
    return release(loaded, loaded.route(route), pendulum.now("UTC"))

