"""A topic the operator pauses (``mirrorflow topics pause``) on fake clients: its partitions are not fetched,
even when a full producer queue pauses and resumes the others; no partition moves; resumed, it copies on
from where it stopped, nothing lost -- for both guarantees."""

from __future__ import annotations

from pathlib import Path

import pytest
from confluent_kafka import TopicPartition

from replicator.config import parse_config
from replicator.domain.route_topic import AddedBy, DesiredState
from replicator.state.repository import register_routes, set_topic
from replicator.state.store import StateStore
from replicator.testing import FakeKafka
from replicator.worker.exactly_once import ExactlyOnceWorker
from replicator.worker.route_worker import RouteWorker
from tests.fake_route import FAST, WorkerThread, wait_until

PAUSED, OTHER, PARTITIONS = "orders", "payments", 2


def produce(kafka: FakeKafka, topic: str, per_partition: int, start: int = 0) -> None:
    for partition in range(PARTITIONS):
        for n in range(start, start + per_partition):
            kafka["source"].append(topic, partition, f"k{n}".encode(), f"{topic}-{partition}-{n}".encode(), [],
                                   1_000 + n)


def copies(kafka: FakeKafka, topic: str, partition: int) -> list[bytes | None]:
    """The replica's values in order of first arrival (any record written, committed or not)."""
    replica = f"source.{topic}"
    if replica not in kafka["target"].topics:
        return []
    return list(dict.fromkeys(r.value for r in kafka["target"].records(replica, partition)))


def copied(kafka: FakeKafka, topic: str, count: int) -> bool:
    return all(len(copies(kafka, topic, p)) >= count for p in range(PARTITIONS))


@pytest.mark.parametrize("kind", [RouteWorker, ExactlyOnceWorker])
def test_a_paused_topic_is_not_fetched_through_back_pressure_and_resumed_loses_nothing(
        kind: type[RouteWorker], tmp_path: Path) -> None:
    kafka = FakeKafka("source", "target")
    for topic in (PAUSED, OTHER):
        kafka["source"].create_topic(topic, PARTITIONS)
    guarantee = ("guarantee: exactly-once, transactions: {interval_ms: 50}" if kind is ExactlyOnceWorker
                 else "guarantee: at-least-once")
    config = parse_config(kafka.config_yaml(
        f"  - {{name: r, source: source, target: target, topics: [{PAUSED}, {OTHER}], {guarantee}, "
        'sla: {heartbeats: false}, producer: {queue.buffering.max.messages: "20"}}\n'))
    store = StateStore(f"sqlite:///{tmp_path / 'state.db'}")
    store.run(lambda session: register_routes(session, config.routes))
    produce(kafka, PAUSED, 50)
    produce(kafka, OTHER, 50)
    worker = WorkerThread(kafka, "a", config, FAST, kind=kind, store=store)
    try:
        wait_until(lambda: copied(kafka, PAUSED, 50) and copied(kafka, OTHER, 50), what="the first copy",
                   alive=(worker,))
        store.run(lambda session: set_topic(session, "r", PAUSED, DesiredState.PAUSED, AddedBy.CONFIG))
        wait_until(lambda: worker.worker.paused_topics == {PAUSED}, what="the worker following the pause",
                   alive=(worker,))
        owned = set(worker.worker.inflight.ledgers)
        kafka["target"].deliveries_per_poll = 3  # a slow target: the queue fills, pauses and resumes the source
        produce(kafka, PAUSED, 100, start=50)
        produce(kafka, OTHER, 300, start=50)
        wait_until(lambda: copied(kafka, OTHER, 350), timeout=60, what="the other topic copied on",
                   alive=(worker,))
        assert worker.worker.producer.queue_full > 0, "the queue never filled: this proves nothing"  # type: ignore[attr-defined]
        assert all(len(copies(kafka, PAUSED, p)) == 50 for p in range(PARTITIONS)), "a paused topic was copied"
        assert set(worker.worker.inflight.ledgers) == owned and not worker.worker.unplaced  # nothing moved

        store.run(lambda session: set_topic(session, "r", PAUSED, DesiredState.REPLICATE, AddedBy.CONFIG))
        kafka["target"].deliveries_per_poll = None
        wait_until(lambda: copied(kafka, PAUSED, 150), what="the paused topic copied after its resume",
                   alive=(worker,))
        for p in range(PARTITIONS):
            source = [r.value for r in kafka["source"].records(PAUSED, p)]
            assert copies(kafka, PAUSED, p) == source, f"partition {p}"
        consumer = worker.worker.consumer
        assert not {(tp.topic, tp.partition) for tp in consumer.assignment()} & consumer.paused  # type: ignore[attr-defined]
    finally:
        assert worker.finish() is None
        store.close()


def test_partitions_of_a_paused_topic_assigned_later_stay_paused(tmp_path: Path) -> None:
    """A second worker joins: the partitions each is given (placed, then fetched) of a paused topic stay
    unfetched on both."""
    kafka = FakeKafka("source", "target")
    for topic in (PAUSED, OTHER):
        kafka["source"].create_topic(topic, PARTITIONS)
    config = parse_config(kafka.config_yaml(
        f"  - {{name: r, source: source, target: target, topics: [{PAUSED}, {OTHER}], sla: {{heartbeats: false}}}}\n"))
    store = StateStore(f"sqlite:///{tmp_path / 'state.db'}")
    store.run(lambda session: register_routes(session, config.routes))
    store.run(lambda session: set_topic(session, "r", PAUSED, DesiredState.PAUSED, AddedBy.CONFIG))
    produce(kafka, PAUSED, 20)
    produce(kafka, OTHER, 20)
    a = WorkerThread(kafka, "a", config, FAST, store=store)
    b = WorkerThread(kafka, "b", config, FAST, store=store)
    try:
        wait_until(lambda: copied(kafka, OTHER, 20) and len(a.worker.inflight.ledgers) == PARTITIONS
                   and len(b.worker.inflight.ledgers) == PARTITIONS, what="both copying", alive=(a, b))
        produce(kafka, OTHER, 20, start=20)
        wait_until(lambda: copied(kafka, OTHER, 40), what="the other topic copied on", alive=(a, b))
        assert all(copies(kafka, PAUSED, p) == [] for p in range(PARTITIONS))
        for w in (a, b):
            owned = [TopicPartition(t, p) for t, p in w.worker.inflight.ledgers if t == PAUSED]
            assert {(tp.topic, tp.partition) for tp in owned} <= w.worker.consumer.paused  # type: ignore[attr-defined]
    finally:
        assert a.finish() is None and b.finish() is None
        store.close()
