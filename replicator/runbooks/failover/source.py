"""The source side of a failover: is the cluster reachable, who still copies, what is left to copy.

"Left to copy" is counted where a visible record is: a route's committed offset
stops after the last record it copied, so a partition that ends with a
transaction marker (or an aborted transaction) shows an offset lag of 1 or more
forever. A ``read_committed`` probe from the committed offset tells the two apart.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
from confluent_kafka.admin import AdminClient

from replicator.config import Config, RouteConfig
from replicator.domain.checkpoint import Partition
from replicator.domain.failover import is_application_topic
from replicator.domain.failover_run import PartitionLag
from replicator.domain.naming import group_id, positions_group_id
from replicator.errors import ClusterError, ConfigError, UsageError
from replicator.kafka.admin import cluster_metadata
from replicator.kafka.clients import admin_settings
from replicator.kafka.group_members import active_members
from replicator.kafka.log_ranges import count_records, ends
from replicator.kafka.route_status import PartitionStatus, route_status


def unreachable(config: Config, cluster: str, timeout: float = 5.0) -> str | None:
    """Why ``cluster`` does not answer a metadata request in ``timeout`` s (None: it answers)."""
    try:
        cluster_metadata(admin_settings(config.cluster(cluster).client_properties()), timeout)
    except ClusterError as exc:
        return str(exc)
    return None


def workers_group(route: RouteConfig) -> tuple[str, str]:
    """(cluster, group) whose members are the route's running workers: the route's group on the source, or an
    exactly-once route's positions group on the target."""
    if route.guarantee == "exactly-once":
        return route.target, positions_group_id(route)
    return route.source, group_id(route)


def route_workers(config: Config, route: RouteConfig) -> int:
    """Active members of the route's workers' group: its running workers."""
    cluster, group = workers_group(route)
    properties = config.cluster(cluster).client_properties()
    return active_members(properties, [group], f"route {route.name}: cluster {cluster!r}")[group]


def measure_lags(config: Config, route: RouteConfig,
                 topics: tuple[str, ...] | None = None) -> tuple[PartitionLag, ...]:
    """Each source partition of the route (of ``topics`` only, when given): end, committed, and whether a visible
    record is left."""
    try:
        statuses = route_status(config, route)
    except ConfigError as exc:  # the route's rows are missing: it never ran against this state DB
        raise UsageError(f"route {route.name}: {exc} (state.url of the config): did it ever run?") from None
    statuses = [s for s in statuses if is_application_topic(s.topic)  # a last heartbeat is no data lost
                and (topics is None or s.topic in topics)]
    properties = config.cluster(route.source).client_properties()
    left = pending(properties, statuses)
    unstable = open_ranges(config, route.source, statuses)
    counted = count_records(properties, unstable) if unstable else {}
    return tuple(PartitionLag(s.topic, s.partition, s.end_offset, s.committed, (s.topic, s.partition) in left,
                              counted.get((s.topic, s.partition), 0),
                              unstable.get((s.topic, s.partition), (None, 0))[0])
                 for s in statuses)


def open_ranges(config: Config, cluster: str, statuses: Iterable[PartitionStatus]) -> dict[Partition, tuple[int, int]]:
    """The partitions (with records left to copy) whose last stable offset is below their end: a transaction is
    still open there -> (first offset not copied at or after it, end)."""
    lagging = {(s.topic, s.partition): s for s in statuses if s.lag > 0}
    if not lagging:
        return {}
    admin = AdminClient(admin_settings(config.cluster(cluster).client_properties()))
    stable = ends(admin, cluster, list(lagging), stable=True)
    return {key: (max(lso, s.committed or 0), s.end_offset) for key, s in lagging.items()
            if (lso := stable.get(key, s.end_offset)) < s.end_offset}


def pending(properties: dict[str, str], statuses: Iterable[PartitionStatus], timeout: float = 10.0) -> set[Partition]:
    """The partitions with a visible record at or after the route's committed offset (undecided ones count)."""
    undecided = {(s.topic, s.partition): (s.committed, s.end_offset) for s in statuses if s.lag > 0}
    ends = {key: end for key, (_, end) in undecided.items()}
    if not undecided:
        return set()
    consumer = Consumer({**admin_settings(properties), "group.id": "mirrorflow-failover-probe",
                         "enable.auto.commit": "false", "isolation.level": "read_committed",
                         "auto.offset.reset": "earliest", "enable.partition.eof": "false"})
    consumer.assign([TopicPartition(t, p, OFFSET_BEGINNING if c is None else c)
                     for (t, p), (c, _) in undecided.items()])
    found: set[Partition] = set()
    deadline = time.monotonic() + timeout
    try:
        while undecided and time.monotonic() < deadline:
            for message in consumer.consume(100, 0.2):
                key = (message.topic(), message.partition())
                if message.error() is None and key in undecided:
                    del undecided[key]
                    if (message.offset() or 0) < ends[key]:
                        found.add(key)
            # Past markers and aborted records, the position moves on without a record.
            for tp in consumer.position([TopicPartition(t, p) for t, p in undecided]):
                if tp.offset >= undecided[(tp.topic, tp.partition)][1]:
                    del undecided[(tp.topic, tp.partition)]
    finally:
        consumer.close()
    return found | set(undecided)


def route_topics(config: Config, route: RouteConfig) -> list[str]:
    """The source topics the route copies now (its own heartbeat topic left out)."""
    meta = cluster_metadata(admin_settings(config.cluster(route.source).client_properties()), 15.0)
    return [t for t in route.topic_filter.select(meta.topics) if is_application_topic(t)]
