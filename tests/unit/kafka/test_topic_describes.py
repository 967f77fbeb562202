"""Topics described (configs, ids) in requests of at most TOPICS_PER_REQUEST topics (on the fakes).

Found by bench/refresh_stall.py at 2,000 topics: confluent-kafka turns one describe answer into Python objects in
one hold of the GIL (the configs of 2,000 topics: 74-95 ms) while a worker's copy loop waits. A look that makes
replicas reads the sources' configs, the replicas' limits and the new topics' ids, so every such look held the
loop that long.
"""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any, cast

import pytest
from confluent_kafka import TopicCollection
from confluent_kafka.admin import AdminClient, ConfigResource

from replicator.errors import ClusterError
from replicator.kafka import topic_describes, topics
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


class _Unanswered(FakeAdmin):
    """A FakeAdmin whose describe requests librdkafka never answers (nor fails) while the caller waits."""

    def describe_configs(self, resources: list[ConfigResource], request_timeout: float = -1) -> Any:
        return {resource: Future() for resource in resources}


def test_configs_nobody_answers_are_a_retriable_error_for_new_replicas_and_an_unknown_limit(
        kafka: FakeKafka, monkeypatch: pytest.MonkeyPatch) -> None:
    """Found by the 100-pair exactly-once run (in create_topics, the same wait): a wait as long as the request's
    own timeout could run out first, and its bare TimeoutError escaped the topic refresh's handlers. A replica to
    make waits (a retriable ClusterError: the refresh tries again); a limit not known is left to the target."""
    for module in (topic_describes, topics):  # a wait of 0.1 s instead of 20 s
        monkeypatch.setattr(module, "DESCRIBE_TIMEOUT_S", 0.05)
        monkeypatch.setattr(module, "ANSWER_GRACE_S", 0.05)
    kafka["source"].create_topic("t", 1)
    source, target = _Unanswered({}, kafka["source"]), FakeAdmin({}, kafka["target"])
    with pytest.raises(ClusterError) as raised:
        ensure_target_topics(cast(AdminClient, source), cast(AdminClient, target), {"source.t": ("t", 1)})
    assert raised.value.retriable and "configs of source topic t: no answer" in str(raised.value)
    assert "source.t" not in kafka["target"].topics
    assert message_limits(cast(AdminClient, source), ["t"]) == {}
