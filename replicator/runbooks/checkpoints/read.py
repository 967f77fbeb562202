"""Everything one checkpoint run reads, in the order that keeps translation exact, then the pure work.

1. the source's groups, filtered by the route (names asked for are checked first:
   an unknown one stops the run before anything is read or written);
2. the syncs topic, to learn which topics the route copied;
3. the route's committed offsets on the source (``replicated_end``);
4. the syncs topic again, to its new end: every sync those commits rely on;
5. each group's committed offsets on the route's partitions, translated;
6. when the route writes target groups: each group's members and committed
   offsets on the target, and the plan of what to commit.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import groupby

import pendulum
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from replicator.config import Config, RouteConfig
from replicator.domain.checkpoint import Checkpoint, Partition, checkpoints_of_group
from replicator.domain.group_filter import requested_group_problems
from replicator.domain.naming import group_id, sync_topic_name
from replicator.domain.offset_sync import Run
from replicator.domain.replication_policy import ReplicationPolicy
from replicator.domain.sync_pruning import stale_runs
from replicator.domain.target_group import TargetGroupState, TargetOffset, plan_target_group
from replicator.domain.topic_selection import select_topics
from replicator.errors import ClusterError, ConfigError, UsageError
from replicator.kafka.admin import cluster_metadata
from replicator.kafka.clients import admin_settings
from replicator.kafka.group_members import active_members
from replicator.kafka.group_offsets import committed_of_groups, for_each_group, read_committed
from replicator.kafka.groups import list_groups
from replicator.kafka.log_ranges import ends, watermarks
from replicator.kafka.topics import source_partitions
from replicator.runbooks.checkpoints.syncs import SyncLog

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PreparedCheckpoints:
    """A run read and translated, before anything is written."""

    config: Config
    route: RouteConfig
    started_at: dt.datetime
    groups: tuple[str, ...]
    checkpoints: tuple[Checkpoint, ...]
    target_offsets: tuple[TargetOffset, ...]  # empty unless the route writes target groups
    stale_syncs: tuple[Run, ...] = ()  # offset-sync runs below the source's log start: tombstoned by apply
    # The partitions' readable ends on each side, as the run read them (empty: not read): the groups' lags.
    source_ends: Mapping[Partition, int] = field(default_factory=dict)
    target_ends: Mapping[Partition, int] = field(default_factory=dict)


def prepare(config: Config, route_name: str, groups: Sequence[str] | None = None) -> PreparedCheckpoints:
    """Read both clusters and translate (steps 1-6 of the module docstring); writes nothing."""
    route = config.route(route_name)
    started = pendulum.now("UTC")
    policy = config.policy(route)
    source, target = _properties(config, route.source), _properties(config, route.target)
    on_source = f"route {route.name}: source {route.source!r}"
    on_target = f"route {route.name}: target {route.target!r}"
    _reachable(source, on_source)
    _reachable(target, on_target)
    admin = AdminClient(admin_settings(source))
    chosen = _choose_groups(route, list_groups(admin, on_source), groups)
    if not chosen:
        return PreparedCheckpoints(config, route, started, (), (), ())
    log = SyncLog(target, sync_topic_name(route), on_target)
    try:
        log.read_to_end()
        topics = _route_topics(config, route, policy, _source_topics(admin, on_source), {t for t, _ in log.syncs})
        partitions = [(t, p) for t, count in sorted(topics.items()) for p in range(count)]
        replicated_end = read_committed(source, group_id(route), partitions, on_source)
        log.read_to_end()
    finally:
        log.close()
    target_of = {t: policy.format_remote_topic(route.source, t) for t in topics}
    syncs = log.syncs
    stale = _stale_syncs(admin, {p: runs for p, runs in log.runs.items() if p[0] in topics}, on_source)
    committed = committed_of_groups(source, chosen, partitions, on_source)
    checkpoints = [c for group in chosen for c in checkpoints_of_group(
        group, committed[group], syncs, replicated_end, target_of)]
    plan: list[TargetOffset] = []
    if route.checkpoints.write_target_groups:
        plan = _plan_targets(target, checkpoints, on_target)
    source_ends = _ends(admin, route.source, partitions)
    target_ends = _ends(AdminClient(admin_settings(target)), route.target,
                        sorted({(c.target_topic, c.partition) for c in checkpoints if c.translated}))
    return PreparedCheckpoints(config, route, started, tuple(chosen), tuple(checkpoints), tuple(plan), stale,
                               source_ends, target_ends)


def _ends(admin: AdminClient, cluster: str, partitions: Sequence[Partition]) -> dict[Partition, int]:
    """The partitions' last stable offsets (what a read_committed group reads up to), for the groups' lags; none
    when they cannot be read now (the checkpoints do not need them: the next run reads them again)."""
    try:
        return ends(admin, cluster, partitions, stable=True)
    except ClusterError as exc:
        _log.warning("consumer-group lags not measured this run error=%s", exc)
        return {}


def _stale_syncs(admin: AdminClient, runs: dict[Partition, list[Run]], what: str) -> tuple[Run, ...]:
    """The runs of the syncs no translation needs any more (their records retention deleted from the source);
    none when the source's log starts cannot be read now (the next run prunes them)."""
    try:
        marks = watermarks(admin, sorted(runs))
    except KafkaException as exc:
        _log.warning("offset syncs not pruned this run %s error=%s", what, exc.args[0].str())
        return ()
    return tuple(run for partition, kept in sorted(runs.items()) for run in stale_runs(kept, marks[partition][0]))


def _properties(config: Config, cluster: str) -> dict[str, str]:
    return config.cluster(cluster).client_properties()


def _reachable(properties: dict[str, str], what: str) -> None:
    """Fail in seconds, naming the cluster and the cause (refused login, TLS, timeout), before any long wait."""
    try:
        cluster_metadata(properties, timeout=5.0)
    except ClusterError as exc:
        raise ClusterError(f"{what}: {exc}", retriable=exc.retriable) from None


def _source_topics(admin: AdminClient, what: str) -> dict[str, int]:
    try:
        return source_partitions(admin)
    except ClusterError as exc:
        raise ClusterError(f"{what}: {exc}", retriable=exc.retriable) from None


def _choose_groups(route: RouteConfig, existing: list[str], requested: Sequence[str] | None) -> list[str]:
    group_filter = route.checkpoints.group_filter
    if requested is None:
        return group_filter.select(existing)
    problems = requested_group_problems(requested, existing, group_filter)
    if problems:
        raise UsageError("\n".join(f"route {route.name}: source {route.source!r}: {p}" for p in problems))
    return sorted(set(requested))


def _route_topics(config: Config, route: RouteConfig, policy: ReplicationPolicy, on_source: dict[str, int],
                  synced: set[str]) -> dict[str, int]:
    """Source topic -> partitions: what the route selects now, and every existing topic it has syncs of."""
    added, removed = _manual_topics(config, route)
    selected = select_topics(on_source, route.topic_filter, policy, route.target, added, removed)
    return {**{t: on_source[t] for t in synced if t in on_source}, **selected.partitions}


def _manual_topics(config: Config, route: RouteConfig) -> tuple[set[str], set[str]]:
    """Topics added or removed by ``mirrorflow topics`` (the workers read the same rows)."""
    from replicator.state.route_link import StateLink
    from replicator.state.store import StateStore

    with StateStore(config.state.url) as store:
        try:
            return StateLink(route, store).manual_topics()
        except ConfigError:  # the route was never registered: nobody added or removed a topic by hand
            return set(), set()


def _plan_targets(target: dict[str, str], checkpoints: list[Checkpoint], what: str) -> list[TargetOffset]:
    translated = {c.group for c in checkpoints if c.translated}
    members = active_members(target, translated, what)
    own = {group: list(items) for group, items in groupby(checkpoints, key=lambda c: c.group)}

    def current(group: str) -> dict[Partition, int]:
        wanted: list[Partition] = [(c.target_topic, c.partition) for c in own[group] if c.translated]
        return read_committed(target, group, wanted, what) if wanted and members.get(group, 0) == 0 else {}

    committed = for_each_group(current, own)
    return [entry for group, items in own.items()
            for entry in plan_target_group(items, TargetGroupState(group, members.get(group, 0), committed[group]))]
