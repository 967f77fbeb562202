"""kafka.log_ranges: every partition's log start and end in one request each (on the fakes)."""

from __future__ import annotations

from typing import cast

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from replicator.errors import ClusterError
from replicator.kafka.log_ranges import RENEWAL_S, ends, watermarks
from replicator.testing import FakeKafka
from replicator.testing.admin import FakeAdmin


@pytest.fixture
def kafka() -> FakeKafka:
    fake = FakeKafka("source")
    fake["source"].create_topic("orders", 2)
    fake["source"].create_topic("audit", 1)
    for n in range(10):
        fake["source"].append("orders", 1, None, f"o{n}".encode())
        fake["source"].append("audit", 0, None, f"a{n}".encode())
    fake["source"].delete_records("audit", 0, 4)  # retention ran: the log starts at 4
    return fake


def admin(kafka: FakeKafka) -> AdminClient:
    return cast(AdminClient, FakeAdmin({}, kafka["source"]))


def test_each_partition_gets_its_log_start_and_end(kafka: FakeKafka) -> None:
    asked = [("orders", 1), ("audit", 0), ("orders", 0)]
    assert watermarks(admin(kafka), asked) == {("orders", 1): (0, 10), ("audit", 0): (4, 10), ("orders", 0): (0, 0)}
    assert watermarks(admin(kafka), []) == {}


def test_a_partition_that_cannot_be_read_raises_for_the_caller_to_ask_again(kafka: FakeKafka) -> None:
    with pytest.raises(KafkaException, match=r"gone\[0\]"):
        watermarks(admin(kafka), [("orders", 0), ("gone", 0)])
    kafka["source"].failures["list_offsets"] = 1
    with pytest.raises(KafkaException, match="timed out"):
        watermarks(admin(kafka), [("orders", 0)])


def test_a_partition_answered_without_an_offset_raises_naming_it(kafka: FakeKafka) -> None:
    """Its leader out of the client's reach: librdkafka answered -1001 for both ends, no error."""
    kafka["source"].leaders[("orders", 1)] = 2
    kafka["source"].cut_off.add(2)
    with pytest.raises(ClusterError, match=r"log range of orders\[1\] not known"):
        watermarks(admin(kafka), [("orders", 0), ("orders", 1)])


def test_an_end_answered_without_an_offset_is_not_an_end(kafka: FakeKafka) -> None:
    """The lag gauges, the failover's fence and its RPO read ends: -1001 is none of them."""
    assert ends(admin(kafka), "source", [("orders", 1)]) == {("orders", 1): 10}
    kafka["source"].leaders[("orders", 1)] = 2
    kafka["source"].cut_off.add(2)
    with pytest.raises(ClusterError, match=r"end of orders-1 not known"):
        ends(admin(kafka), "source", [("orders", 1)])


def test_a_client_whose_metadata_names_an_old_leader_renews_it_and_reads_the_ends(kafka: FakeKafka) -> None:
    """librdkafka's admin client, once a partition's leader moved or its node restarted, is answered
    FENCED_LEADER_EPOCH at every ListOffsets until its metadata is renewed (a probe on Kafka 4.1: 4 tries over 12 s
    after a restart, all refused; one list_topics, answered). A failover's fence watch reads the ends before and
    after it watches, with one client: an election between the two must not fail it."""
    from confluent_kafka import TopicPartition

    from replicator.kafka.log_ranges import LATEST

    client = admin(kafka)
    assert ends(client, "source", [("orders", 1)]) == {("orders", 1): 10}
    kafka["source"].elect("orders", 1)
    kafka["source"].append("orders", 1, None, b"o10")
    raw = client.list_offsets({TopicPartition("orders", 1): LATEST})  # the fake behaves as librdkafka does
    with pytest.raises(KafkaException, match="Leader epoch is older than broker epoch"):
        raw[TopicPartition("orders", 1)].result()
    assert ends(client, "source", [("orders", 1)], stable=True) == {("orders", 1): 11}
    kafka["source"].elect("audit", 0, node=2)
    assert watermarks(client, [("orders", 1), ("audit", 0)]) == {("orders", 1): (0, 11), ("audit", 0): (4, 10)}


def test_a_partition_answered_not_leader_is_asked_again_after_the_metadata_is_renewed(kafka: FakeKafka) -> None:
    """librdkafka names Kafka's NOT_LEADER_OR_FOLLOWER (code 6) NOT_LEADER_FOR_PARTITION: the renewal of the
    client's metadata before asking again looked for the Java name, so a partition answered so by a node no longer
    its leader failed the read (a watermark, a fence watch's end) instead of being asked of the new leader."""
    from concurrent.futures import Future

    from confluent_kafka import KafkaError

    client = FakeAdmin({}, kafka["source"])
    real = client.list_offsets
    renewed = []

    def old_leader_first(offsets, **kwargs):  # type: ignore[no-untyped-def]
        answers = real(offsets, **kwargs)
        if renewed:
            return answers
        refused: Future[object] = Future()
        refused.set_exception(KafkaException(KafkaError(KafkaError.NOT_LEADER_FOR_PARTITION,
                                                        "Broker: Not leader for partition")))
        return {tp: refused for tp in answers}

    def list_topics(*args, **kwargs):  # type: ignore[no-untyped-def]
        renewed.append(True)
        return FakeAdmin.list_topics(client, *args, **kwargs)

    client.list_offsets = old_leader_first  # type: ignore[method-assign]
    client.list_topics = list_topics  # type: ignore[method-assign]
    assert ends(cast(AdminClient, client), "source", [("orders", 1)]) == {("orders", 1): 10}
    assert renewed


def test_a_partition_whose_leader_died_is_asked_of_its_new_leader_after_the_metadata_is_renewed(
        kafka: FakeKafka) -> None:
    """Found by the fault harness (three-node clusters, a source node killed while a worker left): librdkafka's
    admin client sends ListOffsets to the leader its metadata names, and a dead node's partitions were answered
    with no offset, after the request's timeout, at every request (a probe on Kafka 4.1: for 60 s after the new
    leaders were elected, 10 s each). The worker placing its partitions failed and blocked its loop each time;
    a failover's fence watch would fail the same way."""
    kafka["source"].leaders[("orders", 1)] = 3
    kafka["source"].leaders[("audit", 0)] = 2
    client = admin(kafka)
    assert watermarks(client, [("orders", 1), ("audit", 0)]) == {("orders", 1): (0, 10), ("audit", 0): (4, 10)}
    kafka["source"].kill_node(3, successor=2)
    kafka["source"].append("orders", 1, None, b"o10")
    assert watermarks(client, [("orders", 1), ("audit", 0)]) == {("orders", 1): (0, 11), ("audit", 0): (4, 10)}
    assert ends(client, "source", [("orders", 1)]) == {("orders", 1): 11}


def test_a_leader_out_of_reach_but_alive_is_not_asked_twice(kafka: FakeKafka) -> None:
    """A node black-holed for this client only is still the leader the cluster names: asking again would wait out
    a second request timeout for the same answer, with the worker's loop held meanwhile."""
    client = FakeAdmin({}, kafka["source"])
    kafka["source"].leaders[("orders", 1)] = 2
    kafka["source"].cut_off.add(2)
    asked = []
    real = client.list_offsets

    def counted(offsets, **kwargs):  # type: ignore[no-untyped-def]
        asked.append(sorted((tp.topic, tp.partition) for tp in offsets))
        return real(offsets, **kwargs)

    renewals = []

    def list_topics(*args, **kwargs):  # type: ignore[no-untyped-def]
        renewals.append(kwargs["timeout"])
        return FakeAdmin.list_topics(client, *args, **kwargs)

    client.list_offsets = counted  # type: ignore[method-assign]
    client.list_topics = list_topics  # type: ignore[method-assign]
    with pytest.raises(ClusterError, match=r"log range of orders\[1\] not known"):
        watermarks(cast(AdminClient, client), [("orders", 0), ("orders", 1)])
    assert asked == [[("orders", 0), ("orders", 1)]] * 2  # the log start and the end, each asked once
    # The renewal that found every node up is bounded: were the whole cluster out of reach, it would fail, and a
    # second request timeout on top of the first would hold the worker's loop twice as long.
    assert len(renewals) == 1 and 0 < renewals[0] <= RENEWAL_S
