"""kafka.admin.create_topics: what a cluster that does not answer gets (on the fakes).

Found by the 100-pair exactly-once fault run (seed 305, a worker joining right after a source restart): the
worker's heartbeat emitter creates its topic on the source as it starts, librdkafka had not answered the
CreateTopics request when the wait (as long as the request's own timeout) ran out, and the bare TimeoutError of
that wait escaped every handler: "worker stopped on an internal error: TimeoutError: ".
"""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any, cast

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from replicator.errors import ClusterError
from replicator.kafka.admin import create_topics
from replicator.testing import FakeKafka
from replicator.testing.admin import FakeAdmin


class _Unanswered(FakeAdmin):
    """A FakeAdmin whose CreateTopics librdkafka never answers (nor fails) while the caller waits."""

    def create_topics(self, new_topics: list[NewTopic], request_timeout: float = -1) -> dict[str, Future[None]]:
        return {topic.topic: Future() for topic in new_topics}


def test_a_create_request_nobody_answers_is_a_retriable_cluster_error_naming_the_topic() -> None:
    kafka = FakeKafka("source")
    admin = cast(AdminClient, _Unanswered({}, kafka["source"]))
    with pytest.raises(ClusterError) as raised:
        create_topics(admin, {"mirrorflow-heartbeats.r": 1}, timeout=0.1)
    assert raised.value.retriable
    assert "topic mirrorflow-heartbeats.r: no answer in 5 s" in str(raised.value)


def test_a_topic_that_exists_already_is_no_error_and_a_new_one_is_created() -> None:
    kafka = FakeKafka("source")
    kafka["source"].create_topic("there", 1)
    admin: Any = FakeAdmin({}, kafka["source"])
    assert create_topics(admin, {"there": 1, "new": 2}, timeout=1) == ["new"]
    assert len(kafka["source"].partitions_of(["new"])) == 2
