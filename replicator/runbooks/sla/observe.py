"""Measure a route for its SLA: newest heartbeat on the target, lag, latest audit."""

from __future__ import annotations

import time

from confluent_kafka import Consumer, KafkaException, TopicPartition

from replicator.config import Config, RouteConfig
from replicator.domain.failover import is_application_topic
from replicator.domain.heartbeat import heartbeat_topic, latest_heartbeat
from replicator.domain.sla import Observation
from replicator.errors import MirrorFlowError
from replicator.kafka.clients import admin_settings

# A partition whose leader is being elected or not yet known (a replica topic created a moment ago).
SETTLING = ("NOT_LEADER_FOR_PARTITION", "LEADER_NOT_AVAILABLE", "UNKNOWN_TOPIC_OR_PART")
TAIL = 1000  # records read at the end of each heartbeat partition (several routes may share a source)


def heartbeat_topic_on_target(config: Config, route: RouteConfig) -> str:
    """The replica of the route's heartbeat topic (``<source>.mirrorflow-heartbeats.<route>`` under prefix)."""
    return config.policy(route).format_remote_topic(route.source, heartbeat_topic(route.name))


def newest_heartbeat_ms(config: Config, route: RouteConfig, timeout: float = 15.0) -> int | None:
    """Emitted-at (epoch ms) of the route's newest heartbeat on the target; None when there is none.

    Raises MirrorFlowError naming the target cluster when it cannot be read.
    """
    topic = heartbeat_topic_on_target(config, route)
    consumer = Consumer({**admin_settings(config.cluster(route.target).client_properties()),
                         "group.id": f"mirrorflow-sla-{route.name}", "enable.auto.commit": "false",
                         "enable.partition.eof": "false"})  # never subscribes: reads, joins nothing
    deadline = time.monotonic() + timeout
    try:
        while True:
            try:
                values = _tail(consumer, topic, max(1.0, deadline - time.monotonic()))
                break
            except KafkaException as exc:
                error = exc.args[0]
                settling = error.retriable() or error.name() in SETTLING  # a replica just made: its leader
                if not settling or time.monotonic() >= deadline:
                    raise MirrorFlowError(f"target {route.target!r}: topic {topic}: {error.str()}") from None
                time.sleep(0.2)
    finally:
        consumer.close()
    beat = latest_heartbeat(values, route.source, route.name)
    return None if beat is None else beat.emitted_at_ms


def _tail(consumer: Consumer, topic: str, timeout: float) -> list[bytes | None]:
    meta = consumer.list_topics(topic, timeout=timeout).topics.get(topic)
    if meta is None or meta.error is not None:
        return []  # not replicated (yet): no heartbeat there
    ends, start = {}, []
    for partition in meta.partitions:
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=timeout)
        if high > low:
            ends[partition] = high
            start.append(TopicPartition(topic, partition, max(low, high - TAIL)))
    if not start:
        return []
    consumer.assign(start)
    values: list[bytes | None] = []
    done: set[int] = set()
    deadline = time.monotonic() + timeout
    while len(done) < len(ends) and time.monotonic() < deadline:
        for message in consumer.consume(500, 0.5):
            if message.error() is not None:
                raise KafkaException(message.error())
            values.append(message.value())
            partition, offset = message.partition() or 0, message.offset() or 0
            if offset + 1 >= ends[partition]:
                done.add(partition)
    return values


def observe_route(config: Config, route: RouteConfig, at_ms: int, timeout: float = 15.0) -> Observation:
    """Everything the route's SLA checks need, each part's failure kept as its ``*_error``."""
    from replicator.kafka.route_status import route_status

    beat_ms = beat_error = None
    if route.sla.heartbeats:
        try:
            beat_ms = newest_heartbeat_ms(config, route, timeout)
        except MirrorFlowError as exc:
            beat_error = str(exc)
    total = worst = lag_error = copied = None
    topics: dict[str, int] = {}
    try:
        partitions = route_status(config, route, timeout)
        total = sum(p.lag for p in partitions)
        copied = sum(p.committed or 0 for p in partitions if is_application_topic(p.topic))
        top = max(partitions, key=lambda p: p.lag, default=None)
        worst = None if top is None else (top.topic, top.partition, top.lag)
        for p in partitions:
            if is_application_topic(p.topic):  # the heartbeat topic's lag is no one's data
                topics[p.topic] = topics.get(p.topic, 0) + p.lag
    except MirrorFlowError as exc:
        lag_error = str(exc)
    run_key, status, missing = _latest_audit(config, route)
    stuck, stuck_error = _stuck(config, route)
    return Observation(route.name, at_ms, beat_ms, beat_error, total, worst, lag_error, run_key, status, missing,
                       stuck, stuck_error, tuple(sorted(topics.items())), copied)


def _stuck(config: Config, route: RouteConfig) -> tuple[tuple[tuple[str, int], ...], str | None]:
    """The route's partitions its workers found stuck (state DB), or why they could not be read."""
    from replicator.domain.partition_state import PartitionState
    from replicator.state.repository import partition_states
    from replicator.state.store import StateStore

    try:
        with StateStore(config.state.url) as store:
            found = store.run(lambda session: partition_states(session, route.name))
    except MirrorFlowError as exc:
        return (), str(exc)
    return tuple(sorted(k for k, (state, _, _) in found.items() if state == PartitionState.STUCK)), None


def _latest_audit(config: Config, route: RouteConfig) -> tuple[str | None, str | None, int]:
    from replicator.state.audits import audit_runs
    from replicator.state.store import StateStore

    with StateStore(config.state.url) as store:
        with store.session() as session:
            runs = audit_runs(session, route.name, limit=1)
    if not runs:
        return None, None, 0
    return runs[0].run_key, runs[0].status.value, runs[0].counts.missing
