"""Checkpoint runs of a route: what the DAG ``mirrorflow_offset_checkpoints`` and ``mirrorflow checkpoint`` call.

:func:`checkpoint_route` reads and translates (:mod:`replicator.runbooks.checkpoints.read`),
then, unless ``dry_run``: writes the translated checkpoints to the route's
checkpoints topic on the target, commits them into the target's idle groups when
the route sets ``checkpoints.write_target_groups``, and stores the checkpoints
(one row per group partition, updated in place) and the run in the state DB. It
returns the run's summary (plain JSON), or raises :class:`CheckpointFailed`
(carrying it) after recording a run that failed. Clients live for one call.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging
import os
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import pendulum

from replicator.config import Config, as_config
from replicator.domain.checkpoint_run import CheckpointRun
from replicator.domain.naming import sync_topic_name
from replicator.domain.target_group import TargetOffset, TargetOutcome, offsets_to_commit
from replicator.errors import ClusterError, MirrorFlowError
from replicator.kafka.group_offsets import commit, for_each_group
from replicator.runbooks.checkpoints.read import PreparedCheckpoints, prepare
from replicator.runbooks.checkpoints.syncs import retire_runs
from replicator.runbooks.checkpoints.topic import checkpoints_topic_name, publish

log = logging.getLogger(__name__)


class CheckpointFailed(MirrorFlowError):
    """A checkpoint run stopped, or a commit into a target group failed; ``summary`` has the run."""

    def __init__(self, run: CheckpointRun) -> None:
        self.summary = run.summary()
        lines = [run.error] if run.error else []
        lines += [f"group {g}: {why}" for g, why in sorted(run.failed_groups.items())]
        super().__init__(f"route {run.route}: checkpoint run failed:\n" + "\n".join(lines))


def apply(prepared: PreparedCheckpoints, dry_run: bool = False) -> CheckpointRun:
    """Write what ``prepared`` translated (unless ``dry_run``) and record the run."""
    route = prepared.route
    run = CheckpointRun(route.name, route.source, route.target, prepared.started_at, prepared.started_at,
                        prepared.groups, prepared.checkpoints, prepared.target_offsets, dry_run)
    if not dry_run:
        target = prepared.config.cluster(route.target).client_properties()
        what = f"route {route.name}: target {route.target!r}"
        try:
            publish(target, checkpoints_topic_name(route), run.translated,
                    int(prepared.started_at.timestamp() * 1000), what)
            run = dataclasses.replace(run, target_offsets=tuple(_commit_all(target, run.target_offsets, what)))
        except ClusterError as exc:
            run = dataclasses.replace(run, error=str(exc))
        _prune(target, prepared, what)
    run = dataclasses.replace(run, finished_at=pendulum.now("UTC"))
    log.info("checkpoint run route=%s status=%s groups=%d checkpoints=%d translated=%d committed=%d skipped=%d "
             "dry_run=%s", route.name, run.status.value, len(run.groups), len(run.checkpoints),
             len(run.translated), run.target_counts()["written"], len(run.skipped_groups), dry_run)
    if not dry_run:
        _record(prepared, run)
    return run


def _prune(target: dict[str, str], prepared: PreparedCheckpoints, what: str) -> None:
    """Tombstones for the offset-sync runs below the source's log start; a failure waits for the next run."""
    stale = prepared.stale_syncs
    if not stale:
        return
    topic = sync_topic_name(prepared.route)
    try:
        retire_runs(target, topic, stale, what)
    except ClusterError as exc:
        log.warning("offset syncs not pruned route=%s error=%s", prepared.route.name, exc)
        return
    log.info("offset syncs pruned route=%s topic=%s runs=%d (below the source's log start)", prepared.route.name,
             topic, len(stale))


def _commit_all(target: dict[str, str], plan: Sequence[TargetOffset], what: str) -> list[TargetOffset]:
    """Commit each group's planned offsets; a refused group is marked failed, the others go on."""
    by_group: dict[str, list[TargetOffset]] = defaultdict(list)
    for entry in plan:
        by_group[entry.checkpoint.group].append(entry)

    def write(group: str) -> tuple[TargetOutcome, str | None]:
        try:
            commit(target, group, offsets_to_commit(by_group[group]), what)
        except ClusterError as exc:
            log.warning("target group not written route_target=%r group=%s error=%s", what, group, exc)
            return TargetOutcome.FAILED, str(exc)
        return TargetOutcome.WRITTEN, None

    outcomes = for_each_group(write, by_group)
    return [dataclasses.replace(e, outcome=outcomes[group][0], error=outcomes[group][1])
            if e.outcome == TargetOutcome.PLANNED else e for group, entries in by_group.items() for e in entries]


def _record(prepared: PreparedCheckpoints, run: CheckpointRun) -> None:
    from replicator.state import repository
    from replicator.state.checkpoints import record_checkpoint_run, save_checkpoints
    from replicator.state.store import StateStore

    config = prepared.config
    with StateStore(config.state.url) as store:
        with store.session() as session:
            repository.register_routes(session, [config.route(run.route)])
            save_checkpoints(session, run.route, run.translated, run.started_at, prepared.source_ends,
                             prepared.target_ends)
            record_checkpoint_run(session, run)


def checkpoint_route(config: Config | str | os.PathLike[str] | None, route: str,
                     groups: Sequence[str] | None = None, dry_run: bool = False) -> dict[str, Any]:
    """Checkpoint one route (its groups, or just ``groups``); the run's summary, or CheckpointFailed."""
    run = apply(prepare(as_config(config), route, groups), dry_run)
    if run.error or run.failed_groups:
        raise CheckpointFailed(run)
    return run.summary()


def checkpoint_due(config: Config | str | os.PathLike[str] | None, route: str,
                   now: dt.datetime | None = None) -> bool:
    """True when the route's last checkpoint run started ``checkpoints.interval`` ago (or it never ran).

    A tenth of the interval is forgiven: a DAG scheduled every interval starts a
    little late or early, and must not skip every other run because of it.
    """
    from replicator.state.checkpoints import last_run_started
    from replicator.state.store import StateStore

    loaded = as_config(config)
    interval = dt.timedelta(seconds=loaded.route(route).checkpoints.interval)
    with StateStore(loaded.state.url) as store:
        with store.session() as session:
            last = last_run_started(session, route)
    return last is None or (now or pendulum.now("UTC")) - last >= interval * 0.9
