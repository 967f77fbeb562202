"""Where each group resumes on the target: a final checkpoint, the stored ones, or offsets-for-times."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from confluent_kafka import Consumer, KafkaException, TopicPartition

from replicator.config import Config, RouteConfig
from replicator.domain.checkpoint import Checkpoint, CheckpointStatus
from replicator.domain.failover import is_application_topic
from replicator.domain.naming import sync_topic_name
from replicator.domain.resume_point import ResumePoint, points_from_checkpoints, timestamp_point
from replicator.errors import ClusterError, ConfigError
from replicator.kafka.admin import error_text
from replicator.kafka.clients import admin_settings
from replicator.runbooks.checkpoints.run import CheckpointFailed, checkpoint_route
from replicator.runbooks.checkpoints.syncs import SyncLog


def final_checkpoint(config: Config, route: RouteConfig, groups: Sequence[str] | None,
                     dry_run: bool) -> tuple[tuple[ResumePoint, ...], list[str]]:
    """A checkpoint taken now (stored unless ``dry_run``) as resume points, and notes for the operator."""
    notes: list[str] = []
    try:
        summary = checkpoint_route(config, route.name, groups, dry_run)
    except CheckpointFailed as exc:
        if exc.summary["error"]:  # stopped before the checkpoints were stored
            raise
        # Stored; only the route's own writing of target groups failed: the commit step does it again.
        summary = exc.summary
        notes += [f"final checkpoint: group {g}: {why}" for g, why in sorted(exc.summary["failed_groups"].items())]
    at = dt.datetime.fromisoformat(summary["started_at"])
    taken = [(Checkpoint(r["group"], r["topic"], r["partition"], r["source_offset"], r["target_topic"],
                         r["target_offset"], CheckpointStatus(r["status"]), r["max_repeats"]), at)
             for r in summary["checkpoints"]]
    return points_from_checkpoints(taken), notes


def stored_checkpoints(config: Config, route: RouteConfig, groups: Sequence[str] | None) -> tuple[ResumePoint, ...]:
    """The latest checkpoint stored of each group partition (of ``groups`` when given), as resume points."""
    from replicator.state.checkpoints import checkpoints
    from replicator.state.store import StateStore

    with StateStore(config.state.url) as store:
        with store.session() as session:
            stored = checkpoints(session, route.name)
    wanted = None if groups is None else set(groups)
    return points_from_checkpoints((c, at) for c, at in stored if wanted is None or c.group in wanted)


def by_timestamp(config: Config, route: RouteConfig, groups: Sequence[str],
                 instant: dt.datetime) -> tuple[ResumePoint, ...]:
    """Each group at the first record at or after ``instant`` on every replica partition of the route."""
    target = config.cluster(route.target).client_properties()
    what = f"route {route.name}: target {route.target!r}"
    policy = config.policy(route)
    replicas = {policy.format_remote_topic(route.source, t): t for t in _copied_topics(config, route, target, what)}
    consumer = Consumer({**admin_settings(target), "group.id": "mirrorflow-failover-probe",
                         "enable.auto.commit": "false"})
    try:
        listed = consumer.list_topics(timeout=15).topics
        wanted = [TopicPartition(r, p, int(instant.timestamp() * 1000))
                  for r in sorted(replicas) if r in listed and listed[r].error is None
                  for p in sorted(listed[r].partitions)]
        found = consumer.offsets_for_times(wanted, timeout=15) if wanted else []
        ends = {(tp.topic, tp.partition): consumer.get_watermark_offsets(tp, timeout=15)[1] for tp in wanted}
    except KafkaException as exc:
        raise ClusterError(f"{what}: offsets for times: {error_text(exc)}",
                           retriable=exc.args[0].retriable()) from None
    finally:
        consumer.close()
    for tp in found:
        if tp.error is not None:
            raise ClusterError(f"{what}: offsets for times of {tp.topic}-{tp.partition}: {tp.error.str()}")
    points = [timestamp_point(g, replicas[tp.topic], tp.topic, tp.partition, tp.offset if tp.offset >= 0 else None,
                              ends[(tp.topic, tp.partition)], instant)
              for g in sorted(set(groups)) for tp in found]
    return tuple(sorted(points, key=lambda p: (p.group, p.topic, p.partition)))


def _copied_topics(config: Config, route: RouteConfig, target: dict[str, str], what: str) -> set[str]:
    """Source topics the route copied for applications: with offset syncs, or that the state DB says it copies."""
    from replicator.state.repository import replicated_topics
    from replicator.state.store import StateStore

    log = SyncLog(target, sync_topic_name(route), what)
    try:
        log.read_to_end()
    finally:
        log.close()
    with StateStore(config.state.url) as store:
        try:
            with store.session() as session:
                recorded = replicated_topics(session, route.name)
        except ConfigError:  # a route never registered has no rows: the syncs tell enough
            recorded = frozenset()
    return {t for t in {t for t, _ in log.syncs} | set(recorded) if is_application_topic(t)}
