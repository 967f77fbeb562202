"""Topics created in requests a broker takes: Kafka's controller refuses a CreateTopics request of more than
10,000 partitions in all. Found by bench/scale.py at 2,500 topics x 4: a route whose topics all existed when it
started never created its replicas (every topic refresh refused whole), and nothing was copied. ``mirrorflow sync``
creates through the same ``create_topics_in_batches``."""

from __future__ import annotations

from typing import cast

import pytest
from confluent_kafka.admin import AdminClient

from replicator.domain import request_batches
from replicator.domain.request_batches import weighted_batches
from replicator.kafka.topics import ensure_target_topics
from replicator.testing import FakeKafka
from replicator.testing.admin import FakeAdmin

TOPICS, PARTITIONS = 7, 4


def test_batches_keep_the_order_and_stay_under_the_limit() -> None:
    assert list(weighted_batches([4, 4, 1, 4, 5, 3], lambda n: n, 8)) == [[4, 4], [1, 4], [5, 3]]
    assert list(weighted_batches([12, 1], lambda n: n, 8)) == [[12], [1]]  # too heavy alone: the broker says so
    assert list(weighted_batches([], lambda n: n, 8)) == []


@pytest.fixture
def kafka(monkeypatch: pytest.MonkeyPatch) -> FakeKafka:
    """A target whose controller takes 10 partitions a request (Kafka's 10,000, scaled down), and our batches of
    at most 6 (our 5,000)."""
    fake = FakeKafka("source", "target")
    for n in range(TOPICS):
        fake["source"].create_topic(f"t{n}", PARTITIONS)
    fake["target"].partitions_per_request = 10
    monkeypatch.setattr(request_batches, "PARTITIONS_PER_REQUEST", 6)
    return fake


def test_a_worker_creates_the_replicas_of_more_partitions_than_one_request_takes(kafka: FakeKafka) -> None:
    wanted = {f"source.t{n}": (f"t{n}", PARTITIONS) for n in range(TOPICS)}
    created = ensure_target_topics(cast(AdminClient, FakeAdmin({}, kafka["source"])),
                                   cast(AdminClient, FakeAdmin({}, kafka["target"])), wanted)
    assert created == sorted(wanted)
    assert all(len(kafka["target"].topics[name].logs) == PARTITIONS for name in wanted)


def test_the_fake_controller_refuses_a_request_over_its_bound_whole(kafka: FakeKafka) -> None:
    """What the two tests above rely on: the fake refuses as Kafka does."""
    from confluent_kafka.admin import NewTopic

    futures = FakeAdmin({}, kafka["target"]).create_topics([NewTopic(f"x{n}", 4) for n in range(3)])
    for future in futures.values():
        with pytest.raises(Exception, match="Excessively large number of partitions per request"):
            future.result()
    assert not kafka["target"].topics
