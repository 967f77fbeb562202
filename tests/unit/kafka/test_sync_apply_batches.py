"""``mirrorflow sync`` applies creations and growths in requests a controller takes, as the worker does
(``test_create_batches.py``): at Kafka's real bound, 10,000 new partitions a request, on the fakes."""

from __future__ import annotations

from typing import cast

from confluent_kafka.admin import AdminClient

from replicator.domain.sync_plan import AddPartitions, CreateTopic, SyncPlan
from replicator.domain.sync_run import Outcome
from replicator.runbooks.sync.apply import apply_plan
from replicator.testing import FakeKafka
from replicator.testing.admin import FakeAdmin

TOPICS, PARTITIONS = 3, 4_000  # 12,000 new partitions: more than one request may carry


def test_sync_creates_more_partitions_than_one_request_takes() -> None:
    kafka = FakeKafka("target")
    plan = SyncPlan("r", tuple(CreateTopic(f"source.t{n}", f"t{n}", PARTITIONS, (("retention.ms", "60000"),))
                               for n in range(TOPICS)))
    changes = apply_plan(cast(AdminClient, FakeAdmin({}, kafka["target"])), plan, settle_timeout=5)
    assert [(c.resource, c.outcome, c.error) for c in changes] == \
        [(f"topic source.t{n}", Outcome.APPLIED, None) for n in range(TOPICS)]
    for n in range(TOPICS):
        topic = kafka["target"].topics[f"source.t{n}"]
        assert (len(topic.logs), topic.configs) == (PARTITIONS, {"retention.ms": "60000"})


def test_sync_grows_more_partitions_than_one_request_adds() -> None:
    """Before: one CreatePartitions request; the controller grew the first topics and failed the third."""
    kafka = FakeKafka("target")
    for n in range(TOPICS):
        kafka["target"].create_topic(f"source.t{n}", 1)
    plan = SyncPlan("r", tuple(AddPartitions(f"source.t{n}", 1, PARTITIONS) for n in range(TOPICS)))
    changes = apply_plan(cast(AdminClient, FakeAdmin({}, kafka["target"])), plan, settle_timeout=5)
    assert [(c.resource, c.outcome, c.error) for c in changes] == \
        [(f"topic source.t{n}", Outcome.APPLIED, None) for n in range(TOPICS)]
    assert [len(kafka["target"].topics[f"source.t{n}"].logs) for n in range(TOPICS)] == [PARTITIONS] * TOPICS
