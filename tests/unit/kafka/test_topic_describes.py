"""Topics described (configs, ids) in requests of at most TOPICS_PER_REQUEST topics (on the fakes).

Found by bench/refresh_stall.py at 2,000 topics: confluent-kafka turns one describe answer into Python objects in
one hold of the GIL (the configs of 2,000 topics: 74-95 ms) while a worker's copy loop waits. A look that makes
replicas reads the sources' configs, the replicas' limits and the new topics' ids, so every such look held the
loop that long.
"""

from __future__ import annotations

from typing import Any, cast

import pytest
from confluent_kafka import TopicCollection
from confluent_kafka.admin import AdminClient, ConfigResource

from replicator.kafka.topic_describes import TOPICS_PER_REQUEST, message_limits, topic_ids
from replicator.kafka.topics import ensure_target_topics
from replicator.testing import FakeKafka
from replicator.testing.admin import FakeAdmin

TOPICS = 2 * TOPICS_PER_REQUEST + 37


class _Counting(FakeAdmin):
    """A FakeAdmin that notes the size of each describe request."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.requests: list[int] = []

    def describe_topics(self, topics: TopicCollection, request_timeout: float = -1) -> Any:
        self.requests.append(len(topics.topic_names))
        return super().describe_topics(topics, request_timeout)

    def describe_configs(self, resources: list[ConfigResource], request_timeout: float = -1) -> Any:
        self.requests.append(len(resources))
        return super().describe_configs(resources, request_timeout)


@pytest.fixture
def kafka() -> FakeKafka:
    fake = FakeKafka("source", "target")
    for n in range(TOPICS):
        fake["source"].create_topic(f"t{n:03d}", 1, {"retention.ms": str(1000 + n)} if n % 2 else None)
    return fake


def test_the_limits_of_many_topics_are_read_in_small_requests(kafka: FakeKafka) -> None:
    admin = _Counting({}, kafka["source"])
    kafka["source"].create_topic("big", 1, {"max.message.bytes": "5000000"})
    names = [f"t{n:03d}" for n in range(TOPICS)] + ["big"]
    limits = message_limits(cast(AdminClient, admin), names)
    assert limits == {**dict.fromkeys(names[:-1], 1048588), "big": 5000000}
    assert admin.requests == [TOPICS_PER_REQUEST, TOPICS_PER_REQUEST, TOPICS + 1 - 2 * TOPICS_PER_REQUEST]


def test_replicas_of_many_topics_get_their_sources_configs_read_in_small_requests(kafka: FakeKafka) -> None:
    source, target = _Counting({}, kafka["source"]), FakeAdmin({}, kafka["target"])
    wanted = {f"source.t{n:03d}": (f"t{n:03d}", 1) for n in range(TOPICS)}
    created = ensure_target_topics(cast(AdminClient, source), cast(AdminClient, target), wanted)
    assert created == sorted(wanted)
    assert max(source.requests) == TOPICS_PER_REQUEST and sum(source.requests) == TOPICS
    replicas = kafka["target"].topics
    assert all(replicas[f"source.t{n:03d}"].configs == ({"retention.ms": str(1000 + n)} if n % 2 else {})
               for n in range(TOPICS))


def test_the_ids_of_many_topics_are_read_in_small_requests_leaving_out_a_deleted_one(kafka: FakeKafka) -> None:
    admin = _Counting({}, kafka["source"])
    names = [f"t{n:03d}" for n in range(TOPICS)]
    kafka["source"].delete_topic("t150")
    ids = topic_ids(cast(AdminClient, admin), names)
    assert ids == {n: str(kafka["source"].topics[n].topic_id) for n in names if n != "t150"}
    assert admin.requests == [TOPICS_PER_REQUEST, TOPICS_PER_REQUEST, TOPICS - 2 * TOPICS_PER_REQUEST]
