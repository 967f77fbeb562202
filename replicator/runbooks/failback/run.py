"""Failback runs: start or resume one, run its steps in order, store it after each. What the CLI and DAG call.

- :func:`failback_route` (``mirrorflow failback``): every step, progress lines on the way;
- :func:`start_run` then :func:`step_of_run` per step (the DAG ``mirrorflow_failback``,
  one task each), handing the run on as plain JSON.

A run that failed midway is resumed by the next failback of the route with the
same mode and groups: its finished steps are not run again; ``restart`` abandons
it and starts a new one. A dry run reads what the steps need, writes nothing (not
even the run) and shows what each would do.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pendulum

from replicator.config import Config, ConfigRef, RouteConfig, as_config
from replicator.domain.failback import (
    FailbackMode,
    FailbackRequest,
    FailbackRun,
    FailbackStep,
    next_steps,
    run_from_dict,
)
from replicator.domain.failover import parse_duration
from replicator.errors import UsageError
from replicator.runbooks import engine
from replicator.runbooks.engine import Runbook, RunFailed
from replicator.runbooks.failback import reverse as rev
from replicator.runbooks.failback.steps import STEPS, Ctx
from replicator.runbooks.start import dry_run_note
from replicator.runbooks.start import start as runbook_start
from replicator.runbooks.store import SqlRunStore

if TYPE_CHECKING:
    from replicator.state.failovers import RouteHold

log = logging.getLogger(__name__)

Say = Callable[[str], None]


class FailbackFailed(RunFailed):
    """A step failed; the stored run shows where (``summary`` has it) and a re-run resumes there."""

    def __init__(self, run: FailbackRun) -> None:
        super().__init__("failback", run, summary(run))


def request_of(route: str, mode: str = "incremental", groups: Sequence[str] | None = None,
               drain_timeout: str | int = 60, accept_loss: bool = False, dry_run: bool = False,
               fence: bool = False, accept_bypass: bool = False,
               topics: Sequence[str] | None = None) -> FailbackRequest:
    """A request from plain arguments (CLI, DAG params); UsageError naming a bad one."""
    try:
        request = FailbackRequest(route, FailbackMode(mode), tuple(dict.fromkeys(groups)) if groups else None,
                                  parse_duration(drain_timeout, "--drain-timeout"), accept_loss, dry_run, fence,
                                  accept_bypass, tuple(dict.fromkeys(topics)) if topics else None)
    except ValueError as exc:
        raise UsageError(f"failback of route {route}: {exc}".replace("'FailbackMode'", "mode")) from None
    if request.problems():
        raise UsageError("\n".join(f"failback of route {route}: {p}" for p in request.problems()))
    return request


def summary(run: FailbackRun) -> dict[str, Any]:
    """The run as plain JSON, with what the applications do next."""
    return {**run.to_dict(), "next_steps": next_steps(run)}


def _store(config: Config) -> SqlRunStore[FailbackRun]:
    from replicator.state import failbacks

    return SqlRunStore(config.state.url, failbacks.save_run, failbacks.unfinished_run, failbacks.load_run)


def _other_run(run: FailbackRun) -> str:
    return (f"route {run.request.route}: failback run {run.run_id} is unfinished (stopped at {run.stopped_at}) with "
            f"mode {run.request.mode.value}: run it again with that mode to finish it, or add --restart to abandon "
            "it and start anew")


def _started(run: FailbackRun) -> str:
    topics = f", topic(s) {', '.join(run.request.topics)}" if run.request.topics else ""
    return (f"failback run {run.run_id} of route {run.request.route}: {run.backup} -> {run.primary}, mode "
            f"{run.request.mode.value}{topics}")


def _resumed(run: FailbackRun, request: FailbackRequest) -> FailbackRun:
    # The operator's latest word on how long to drain and whether to accept a loss counts.
    return replace(run, request=replace(run.request, accept_loss=request.accept_loss,
                                        drain_timeout_seconds=request.drain_timeout_seconds))


FAILBACK: Runbook[FailbackRun, Ctx] = Runbook("failback", STEPS, FailbackFailed, _other_run, _started, _resumed)


def start(config: Config, request: FailbackRequest, restart: bool = False, say: Say = log.info) -> FailbackRun:
    """The route's unfinished run with the same request (resumed), or a new one; checks the names first."""
    route = config.route(request.route)

    def fresh(unfinished: FailbackRun | None) -> FailbackRun:
        _check_groups(config, route.target, request)
        if unfinished is None:
            _check_failed_over(config, route, request)
        notes = (dry_run_note(FAILBACK, unfinished),) if unfinished is not None and request.dry_run else ()
        return replace(FailbackRun.new(request, route.source, route.target, pendulum.now("UTC")), notes=notes)

    return runbook_start(FAILBACK, _store(config), request, restart, fresh, say)


def _check_failed_over(config: Config, route: RouteConfig, request: FailbackRequest) -> None:
    """UsageError unless what the request moves back was failed over: the whole route (held by a failover run),
    or, with ``--topic``, each topic it names (failed over by topic)."""
    held, moved = _hold(config, route.name), _moved_topics(config, route)
    if request.topics:
        if held is not None:
            raise UsageError(f"route {route.name} was failed over whole (failover run {held.run_id}): fail it back "
                             "whole, without --topic")
        problems = [f"route {route.name}: topic {t!r} is not failed over (by topic)" for t in request.topics
                    if t not in moved]
        if problems:
            which = f"failed over: {', '.join(moved)}" if moved else "none of its topics is failed over"
            raise UsageError("\n".join(problems) + f" ({which})")
        return
    if held is None and moved:
        again = " ".join(f"--topic {t}" for t in moved)
        raise UsageError(f"route {route.name}: only topic(s) {', '.join(moved)} were failed over (by topic): fail "
                         f"them back by name, `mirrorflow failback --route {route.name} {again}`")
    if held is None:
        raise UsageError(f"route {route.name} is not failed over (no failover run holds it): there is nothing "
                         f"to fail back; `mirrorflow failover --route {route.name}` moves it first")


def _moved_topics(config: Config, route: RouteConfig) -> list[str]:
    """The route's topics a per-topic failover holds."""
    from replicator.domain.route_topic import DesiredState
    from replicator.errors import ConfigError
    from replicator.state.repository import route_topics
    from replicator.state.store import StateStore

    with StateStore(config.state.url) as store:
        with store.session() as session:
            try:
                return [t.topic for t in route_topics(session, route.name)
                        if t.desired_state == DesiredState.FAILED_OVER]
            except ConfigError:
                return []


def _hold(config: Config, route: str) -> RouteHold | None:
    """The failover run that holds ``route``, if any."""
    from replicator.state.failovers import route_hold
    from replicator.state.store import StateStore

    with StateStore(config.state.url) as store:
        with store.session() as session:
            return route_hold(session, route)


def _check_groups(config: Config, backup: str, request: FailbackRequest) -> None:
    """UsageError naming a group asked for that the backup does not know (before anything changes)."""
    if not request.groups:
        return
    from confluent_kafka.admin import AdminClient

    from replicator.kafka.clients import admin_settings
    from replicator.kafka.groups import list_groups

    admin = AdminClient(admin_settings(config.cluster(backup).client_properties()))
    missing = sorted(set(request.groups) - set(list_groups(admin, f"route {request.route}: {backup!r}")))
    if missing:
        raise UsageError(f"route {request.route}: no consumer group {', '.join(map(repr, missing))} on {backup!r}: "
                         "nothing to move back")


def run_step(config: Config, run: FailbackRun, step: FailbackStep, say: Say = log.info) -> FailbackRun:
    """Run ``step`` of ``run`` unless it is finished; store the run; FailbackFailed when the step failed."""
    route = config.route(run.request.route)
    full, reverse = rev.reverse_config(config, route, run.topics, run.request.mode) if run.topics else (config, None)
    return engine.run_step(FAILBACK, run, step, lambda save: Ctx(full, route, say, save, reverse),
                           _store(config).save, say)


def failback_route(config: ConfigRef, request: FailbackRequest, restart: bool = False,
                   say: Say = log.info) -> FailbackRun:
    """Start (or resume) a failback and run every step; FailbackFailed at the first that fails."""
    loaded = as_config(config)
    return engine.run_all(FAILBACK, start(loaded, request, restart, say),
                          lambda run, step: run_step(loaded, run, step, say))


def start_run(config: ConfigRef, route: str, mode: str = "incremental", groups: Sequence[str] | None = None,
              drain_timeout: str | int = 60, accept_loss: bool = False, dry_run: bool = False,
              fence: bool = False, accept_bypass: bool = False,
              topics: Sequence[str] | None = None) -> dict[str, Any]:
    """The DAG's first task: start or resume a run; its JSON for the next task."""
    return summary(start(as_config(config), request_of(route, mode, groups, drain_timeout, accept_loss, dry_run,
                                                        fence, accept_bypass, topics)))


def step_of_run(config: ConfigRef, step: str, run: dict[str, Any]) -> dict[str, Any]:
    """One DAG task: the run as stored (or, dry, as handed on), ``step`` run; its JSON for the next task."""
    loaded = as_config(config)
    current = run_from_dict(run)
    if current.run_id is not None:
        current = _store(loaded).load(current.run_id)
    return summary(run_step(loaded, current, FailbackStep(step)))
