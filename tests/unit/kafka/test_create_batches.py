"""Topics created and grown in requests a broker takes: Kafka's controller refuses a CreateTopics request of more
than 10,000 partitions in all, and fails each topic of a CreatePartitions request after its first 10,000 new
partitions. Found by bench/scale.py at 2,500 topics x 4: a route whose topics all existed when it started never
created its replicas (every topic refresh refused whole), and nothing was copied. ``mirrorflow sync`` creates and
grows through the same ``create_topics_in_batches`` and ``add_partitions_in_batches``."""

from __future__ import annotations

from typing import cast

import pytest
from confluent_kafka.admin import AdminClient

from replicator.domain.request_batches import weighted_batches
from replicator.kafka.topics import ensure_target_topics
from replicator.testing import FakeKafka
from replicator.testing.admin import FakeAdmin

TOPICS, PARTITIONS = 7, 4
PER_REQUEST = 6  # our batches (5,000), for a controller that takes 10 (Kafka's 10,000), scaled down


def test_batches_keep_the_order_and_stay_under_the_limit() -> None:
    assert list(weighted_batches([4, 4, 1, 4, 5, 3], lambda n: n, 8)) == [[4, 4], [1, 4], [5, 3]]
    assert list(weighted_batches([12, 1], lambda n: n, 8)) == [[12], [1]]  # too heavy alone: the broker says so
    assert list(weighted_batches([], lambda n: n, 8)) == []


@pytest.fixture
def kafka() -> FakeKafka:
    """A target whose controller takes 10 new partitions a request (Kafka's 10,000, scaled down)."""
    fake = FakeKafka("source", "target")
    for n in range(TOPICS):
        fake["source"].create_topic(f"t{n}", PARTITIONS)
    fake["target"].partitions_per_request = 10
    return fake


def ensure(kafka: FakeKafka, wanted: dict[str, tuple[str, int]], per_request: int = PER_REQUEST) -> list[str]:
    return ensure_target_topics(cast(AdminClient, FakeAdmin({}, kafka["source"])),
                                cast(AdminClient, FakeAdmin({}, kafka["target"])), wanted, per_request)


@pytest.mark.parametrize("per_request", [PER_REQUEST, 10_000], ids=["in-batches", "in-one-request"])
def test_a_worker_creates_the_replicas_of_more_partitions_than_one_request_takes(
        kafka: FakeKafka, per_request: int) -> None:
    """In one request (the code before) the controller refuses them all."""
    wanted = {f"source.t{n}": (f"t{n}", PARTITIONS) for n in range(TOPICS)}
    if per_request > kafka["target"].partitions_per_request:
        with pytest.raises(Exception, match="Excessively large number of partitions per request"):
            ensure(kafka, wanted, per_request)
        return
    assert ensure(kafka, wanted, per_request) == sorted(wanted)
    assert all(len(kafka["target"].topics[name].logs) == PARTITIONS for name in wanted)


@pytest.mark.parametrize("per_request", [PER_REQUEST, 10_000], ids=["in-batches", "in-one-request"])
def test_a_worker_grows_more_partitions_than_one_request_adds(kafka: FakeKafka, per_request: int) -> None:
    """Every source topic grew from 4 to 6 partitions (14 new in all). In one request (the code before) the
    controller grows the first topics and fails the rest."""
    for n in range(TOPICS):
        kafka["target"].create_topic(f"source.t{n}", PARTITIONS)
        kafka["source"].add_partitions(f"t{n}", PARTITIONS + 2)
    wanted = {f"source.t{n}": (f"t{n}", PARTITIONS + 2) for n in range(TOPICS)}
    if per_request > kafka["target"].partitions_per_request:
        with pytest.raises(Exception, match=r"add partitions to target topic source\.t5: The server experienced"):
            ensure(kafka, wanted, per_request)
        return
    assert ensure(kafka, wanted, per_request) == sorted(wanted)
    assert all(len(kafka["target"].topics[name].logs) == PARTITIONS + 2 for name in wanted)


def test_the_fake_controller_refuses_a_request_over_its_bound_whole(kafka: FakeKafka) -> None:
    """What the tests above rely on: the fake refuses as Kafka does."""
    from confluent_kafka.admin import NewTopic

    futures = FakeAdmin({}, kafka["target"]).create_topics([NewTopic(f"x{n}", 4) for n in range(3)])
    for future in futures.values():
        with pytest.raises(Exception, match="Excessively large number of partitions per request"):
            future.result()
    assert not kafka["target"].topics
