"""Topic configs read in requests of at most CONFIG_BATCH topics (on the fakes).

Found by bench/refresh_stall.py at 2,000 topics: confluent-kafka turns one DescribeConfigs answer into Python
objects in one hold of the GIL, 74-95 ms for 2,000 topics, while a worker's copy loop waits. A look that makes
replicas reads the sources' configs and the replicas' limits, so every such look held the loop that long.
"""

from __future__ import annotations

from typing import Any, cast

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource

from replicator.kafka.topics import CONFIG_BATCH, ensure_target_topics, message_limits
from replicator.testing import FakeKafka
from replicator.testing.admin import FakeAdmin

TOPICS = 2 * CONFIG_BATCH + 37


class _Counting(FakeAdmin):
    """A FakeAdmin that notes the size of each DescribeConfigs request."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.requests: list[int] = []

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
    assert admin.requests == [CONFIG_BATCH, CONFIG_BATCH, TOPICS + 1 - 2 * CONFIG_BATCH]


def test_replicas_of_many_topics_get_their_sources_configs_read_in_small_requests(kafka: FakeKafka) -> None:
    source, target = _Counting({}, kafka["source"]), FakeAdmin({}, kafka["target"])
    wanted = {f"source.t{n:03d}": (f"t{n:03d}", 1) for n in range(TOPICS)}
    created = ensure_target_topics(cast(AdminClient, source), cast(AdminClient, target), wanted)
    assert created == sorted(wanted)
    assert max(source.requests) == CONFIG_BATCH and sum(source.requests) == TOPICS
    replicas = kafka["target"].topics
    assert all(replicas[f"source.t{n:03d}"].configs == ({"retention.ms": str(1000 + n)} if n % 2 else {})
               for n in range(TOPICS))
