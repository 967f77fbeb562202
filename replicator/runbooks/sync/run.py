"""Sync runs of a route: read both clusters, plan, apply, record. What the DAGs and the CLI call.

One function per step, each taking plain arguments (a config or its path, a route
name) and returning a JSON-serialisable summary:

- :func:`discover_topics`: create missing replicas, grow partitions, register the
  route's topics in the state DB (and delete replicas, if the route opts in);
- :func:`sync_metadata`: topic configs and ACLs;
- :func:`sync_route`: both, as ``mirrorflow sync`` does.

Each applies every action it can, records the run and its diff in the state DB, and
then raises :class:`SyncFailed` (carrying the summary) when any action failed.
Clients are created per call and never kept.
"""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass
from typing import Any

import pendulum

from replicator.config import Config, ConfigRef, RouteConfig, as_config
from replicator.domain.metadata_sync import (
    ALL_STEPS,
    DISCOVERY_STEPS,
    METADATA_STEPS,
    Step,
    plan_sync,
)
from replicator.domain.sync_plan import SyncPlan
from replicator.domain.sync_run import Outcome, SyncChange, SyncRun
from replicator.errors import MirrorFlowError, UsageError
from replicator.runbooks.sync.scope import ClusterSide, rules_of, scope_of

log = logging.getLogger(__name__)

STEPS = {"discovery": DISCOVERY_STEPS, "metadata": METADATA_STEPS, "full": ALL_STEPS}


class SyncFailed(MirrorFlowError):
    """Some actions of a sync run failed (the others were applied); ``summary`` has them all."""

    def __init__(self, run: SyncRun) -> None:
        self.summary = run.summary()
        failed = len(run.failures)
        super().__init__(f"route {run.route}: {failed} sync action{'s' if failed > 1 else ''} failed:\n"
                         + run.failure_report())


@dataclass(frozen=True)
class PreparedSync:
    """A planned run, before it is applied: the plan, and what could not even be read."""

    config: Config
    route: RouteConfig
    step: str
    plan: SyncPlan
    read_failures: tuple[SyncChange, ...]
    selected: tuple[str, ...]
    started_at: dt.datetime


def prepare(config: Config, route_name: str, step: str = "full") -> PreparedSync:
    """Read both clusters (and the route's topics in the state DB) and plan ``step``."""
    if step not in STEPS:
        raise UsageError(f"unknown sync step {step!r} (expected {', '.join(STEPS)})")
    route, steps = config.route(route_name), STEPS[step]
    started = pendulum.now("UTC")
    policy = config.policy(route)
    source, target = ClusterSide(config, route, "source"), ClusterSide(config, route, "target")
    scope = scope_of(config, route, policy, source.partitions())
    replica_of = {t: scope.target_topic(t) for t in sorted(scope.selected)}
    # Configs are read where needed: all replicas for the config step, else new ones only.
    missing = [t for t, replica in replica_of.items() if replica not in target.names()]
    wants_acls = Step.ACLS in steps and route.sync.acls
    source_view = source.view(replica_of if Step.CONFIGS in steps else missing, wants_acls)
    target_view = target.view(replica_of.values() if Step.CONFIGS in steps else (), wants_acls)
    plan = plan_sync(scope, source_view, target_view, rules_of(route, _failed_over(config, route)), steps)
    failures = source.read_failures(source_view) + target.read_failures(target_view)
    return PreparedSync(config, route, step, plan, failures, tuple(sorted(scope.selected)), started)


def _failed_over(config: Config, route: RouteConfig) -> bool:
    """A failover holds the route (only asked when its replicas are to be read-only)."""
    if not route.sync.read_only:
        return False
    from replicator.state.failovers import route_hold
    from replicator.state.store import StateStore

    with StateStore(config.state.url) as store:
        return store.run(lambda session: route_hold(session, route.name)) is not None


def execute(prepared: PreparedSync, dry_run: bool = False) -> SyncRun:
    """Apply the plan (unless ``dry_run``) and record the run in the state DB."""
    from replicator.runbooks.sync.apply import apply_plan

    plan, route = prepared.plan, prepared.route
    if dry_run:
        changes = [SyncChange.of(a, Outcome.PLANNED) for a in plan.actions]
    else:
        changes = apply_plan(ClusterSide(prepared.config, route, "target").admin(), plan)
    run = SyncRun(route.name, prepared.step, prepared.started_at, pendulum.now("UTC"),
                  (*prepared.read_failures, *changes), plan.notes, dry_run)
    log.info("sync run route=%s step=%s status=%s actions=%d failed=%d dry_run=%s", route.name, prepared.step,
             run.status.value, len(plan.actions), len(run.failures), dry_run)
    if not dry_run:
        _record(prepared, run)
    return run


def _record(prepared: PreparedSync, run: SyncRun) -> None:
    from replicator.state import repository
    from replicator.state.store import StateStore

    with StateStore(prepared.config.state.url) as store:
        with store.session() as session:
            repository.register_routes(session, [prepared.route])
            if prepared.step in ("discovery", "full"):
                repository.register_discovered(session, prepared.route.name, prepared.selected)
            repository.record_sync_run(session, run)


def run_step(config: ConfigRef, route: str, step: str, dry_run: bool) -> dict[str, Any]:
    """Prepare and execute one step; the summary, or SyncFailed (after recording) when anything failed."""
    run = execute(prepare(as_config(config), route, step), dry_run)
    if run.failures:
        raise SyncFailed(run)
    return run.summary()


def discover_topics(config: ConfigRef, route: str, dry_run: bool = False) -> dict[str, Any]:
    """Create missing replicas with the source's partitions and configs, grow partitions, register topics."""
    return run_step(config, route, "discovery", dry_run)


def sync_metadata(config: ConfigRef, route: str, dry_run: bool = False) -> dict[str, Any]:
    """Bring the replicas' topic configs and the target's ACLs in step with the source."""
    return run_step(config, route, "metadata", dry_run)


def sync_route(config: ConfigRef, route: str, dry_run: bool = False) -> dict[str, Any]:
    """Discovery and metadata sync in one run (``mirrorflow sync``)."""
    return run_step(config, route, "full", dry_run)


def discovery_due(config: ConfigRef, route: str, now: dt.datetime | None = None) -> bool:
    """True when the route's last discovery (or full sync) is older than its ``sync.discovery_interval``."""
    from replicator.state import repository
    from replicator.state.store import StateStore

    loaded = as_config(config)
    interval = dt.timedelta(minutes=loaded.route(route).sync.discovery_interval)
    with StateStore(loaded.state.url) as store:
        with store.session() as session:
            runs = repository.sync_runs(session, route, limit=50)
    last = next((r.started_at for r in runs if r.step in ("discovery", "full")), None)
    return last is None or (now or pendulum.now("UTC")) - last >= interval



def plan_report(config: ConfigRef, route: str, step: str = "full") -> dict[str, Any]:
    """Plan ``step`` without applying it: the readable diff (logged by the DAGs) and its size."""
    prepared = prepare(as_config(config), route, step)
    text = prepared.plan.render()
    log.info("sync plan route=%s step=%s actions=%d\n%s", route, step, len(prepared.plan.actions), text)
    return {"route": route, "step": step, "actions": len(prepared.plan.actions),
            "unreadable": len(prepared.read_failures), "plan": text}
