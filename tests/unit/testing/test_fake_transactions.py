"""The fakes' transactions behave as Kafka's and librdkafka's do where the exactly-once worker relies on them."""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import OFFSET_BEGINNING, KafkaError, KafkaException, TopicPartition

from replicator.testing.cluster import FakeCluster
from replicator.testing.consumer import FakeConsumer
from replicator.testing.transactional import FakeTransactionalProducer

Reports = list[tuple[int | None, bytes | None]]


@pytest.fixture
def cluster() -> FakeCluster:
    made = FakeCluster("t")
    made.create_topic("t", 1)
    return made


def producer(cluster: FakeCluster, reports: Reports | None = None) -> FakeTransactionalProducer:
    def report(error: KafkaError | None, message: Any) -> None:
        if reports is not None:
            reports.append((None if error is None else error.code(), message.value()))
    made = FakeTransactionalProducer({"transactional.id": "tx", "on_delivery": report}, cluster)
    made.init_transactions()
    return made


def values(cluster: FakeCluster, isolation: str) -> list[bytes | None]:
    reader = FakeConsumer({"group.id": "reader", "isolation.level": isolation}, cluster)
    reader.incremental_assign([TopicPartition("t", 0, OFFSET_BEGINNING)])
    return [m.value() for m in reader.consume(100, 0)]


def error_of(call: Any, *args: Any) -> KafkaError:
    with pytest.raises(KafkaException) as raised:
        call(*args)
    error: KafkaError = raised.value.args[0]
    return error


@pytest.mark.parametrize(("commit", "committed_view"), [(True, [b"a", b"b", b"c"]), (False, [b"c"])])
def test_read_committed_sees_a_transaction_only_once_it_commits(cluster: FakeCluster, commit: bool,
                                                                committed_view: list[bytes]) -> None:
    txn = producer(cluster)
    txn.begin_transaction()
    txn.produce("t", b"a", partition=0)
    txn.produce("t", b"b", partition=0)
    txn.flush()
    cluster.append("t", 0, None, b"c")  # a record of no transaction, after the open one's
    assert values(cluster, "read_committed") == []  # held back at the last stable offset
    assert values(cluster, "read_uncommitted") == [b"a", b"b", b"c"]
    (txn.commit_transaction if commit else txn.abort_transaction)()
    assert values(cluster, "read_committed") == committed_view
    assert values(cluster, "read_uncommitted") == [b"a", b"b", b"c"]  # the marker is no record
    assert cluster.watermarks("t", 0) == (0, 4)


def test_an_abort_purges_what_is_queued_and_reports_it_before_it_returns(cluster: FakeCluster) -> None:
    reports: Reports = []
    txn = producer(cluster, reports)
    txn.begin_transaction()
    txn.produce("t", b"a", partition=0)
    txn.abort_transaction()
    assert reports == [(KafkaError._PURGE_QUEUE, b"a")]
    assert cluster.records("t", 0) == []


def test_group_offsets_commit_with_the_transaction_and_are_waited_for_until_then(cluster: FakeCluster) -> None:
    member = FakeConsumer({"group.id": "g"}, cluster)
    member.subscribe(["t"])
    member.consume(1, 0)
    txn = producer(cluster)
    txn.begin_transaction()
    txn.send_offsets_to_transaction([TopicPartition("t", 0, 7, metadata="m")], member.consumer_group_metadata())
    waiting = error_of(member.committed, [TopicPartition("t", 0)])
    assert (waiting.code(), waiting.retriable()) == (KafkaError._TIMED_OUT, True)
    txn.commit_transaction()
    [got] = member.committed([TopicPartition("t", 0)])
    assert (got.offset, got.metadata) == (7, "m")


def test_a_member_whose_session_expired_cannot_send_offsets(cluster: FakeCluster) -> None:
    member = FakeConsumer({"group.id": "g"}, cluster)
    member.subscribe(["t"])
    member.consume(1, 0)
    metadata = member.consumer_group_metadata()
    cluster.group("g").expire(member.member_id)
    txn = producer(cluster)
    txn.begin_transaction()
    refused = error_of(txn.send_offsets_to_transaction, [TopicPartition("t", 0, 1)], metadata)
    assert (refused.code(), refused.txn_requires_abort(), refused.fatal()) == \
        (KafkaError.UNKNOWN_MEMBER_ID, True, False)
    assert error_of(txn.commit_transaction).txn_requires_abort()
    member.consume(1, 0)  # it learns it lost its partitions and rejoins: a new epoch, the old metadata is stale
    assert error_of(txn.send_offsets_to_transaction, [TopicPartition("t", 0, 1)], metadata).txn_requires_abort()


def test_a_failed_delivery_makes_the_transaction_abortable(cluster: FakeCluster) -> None:
    txn = producer(cluster)
    txn.begin_transaction()
    txn.produce("t", b"a", partition=0)
    cluster.hidden_partitions.add(("t", 0))
    failed = error_of(txn.commit_transaction)
    assert (failed.code(), failed.txn_requires_abort()) == (KafkaError._UNKNOWN_PARTITION, True)
    assert error_of(txn.produce, "t", b"b").code() == KafkaError._STATE
    txn.abort_transaction()
    txn.begin_transaction()  # usable again


def test_a_newer_producer_of_the_same_id_fences_the_older_and_aborts_its_transaction(cluster: FakeCluster) -> None:
    errors: list[KafkaError] = []
    old = FakeTransactionalProducer({"transactional.id": "tx", "error_cb": errors.append}, cluster)
    old.init_transactions()
    old.begin_transaction()
    old.produce("t", b"old", partition=0)
    old.flush()
    producer(cluster)  # the newer one
    assert values(cluster, "read_committed") == []
    assert cluster.watermarks("t", 0) == (0, 2)  # the old one's record and its abort marker
    fenced = error_of(old.commit_transaction)
    assert (fenced.code(), fenced.fatal()) == (KafkaError._FENCED, True)
    assert error_of(old.begin_transaction).code() == KafkaError._FENCED


def test_records_sent_by_a_fenced_producer_are_purged_and_it_is_told_it_is_fatal(cluster: FakeCluster) -> None:
    errors: list[KafkaError] = []
    reports: Reports = []
    old = FakeTransactionalProducer({"transactional.id": "tx", "error_cb": errors.append,
                                     "on_delivery": lambda e, m: reports.append((e and e.code(), m.value()))},
                                    cluster)
    old.init_transactions()
    old.begin_transaction()
    old.produce("t", b"old", partition=0)
    producer(cluster)
    with pytest.raises(KafkaException) as fatal:  # confluent-kafka raises it from poll, error_cb is not called
        old.poll(0)
    assert fatal.value.args[0].code() == KafkaError._FENCED and fatal.value.args[0].fatal() and not errors
    assert old.poll(0) == 1  # once: the next poll serves the purged record's report
    assert reports == [(KafkaError._PURGE_QUEUE, b"old")]
    assert cluster.records("t", 0) == []
