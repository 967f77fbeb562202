"""kafka.groups: listing a cluster's groups while its coordinator settles (a broker just started answers
COORDINATOR_LOAD_IN_PROGRESS inside the result, not as a raised error)."""

from __future__ import annotations

from concurrent.futures import Future
from typing import cast

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, ConsumerGroupListing, ListConsumerGroupsResult

from replicator.errors import ClusterError
from replicator.kafka import groups
from replicator.kafka.groups import list_groups


class ScriptedAdmin:
    """Answers ``list_consumer_groups`` with the given results, one per call (the last one repeats)."""

    def __init__(self, *results: ListConsumerGroupsResult) -> None:
        self.results = list(results)
        self.calls = 0

    def list_consumer_groups(self, request_timeout: float) -> Future[ListConsumerGroupsResult]:
        future: Future[ListConsumerGroupsResult] = Future()
        future.set_result(self.results[min(self.calls, len(self.results) - 1)])
        self.calls += 1
        return future


def listing(*names: str) -> ListConsumerGroupsResult:
    return ListConsumerGroupsResult(valid=[ConsumerGroupListing(n, False) for n in names], errors=[])


def loading() -> ListConsumerGroupsResult:
    """What a broker whose group coordinator is still loading its partitions answers."""
    return ListConsumerGroupsResult(valid=[], errors=[KafkaError(KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
                                                                 "Broker: Coordinator load in progress")])


@pytest.fixture(autouse=True)
def no_waiting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(groups.time, "sleep", lambda _s: None)


def test_a_loading_coordinator_is_asked_again_until_it_answers() -> None:
    admin = ScriptedAdmin(loading(), loading(), listing("mirrorflow-b", "mirrorflow-a"))
    assert list_groups(cast(AdminClient, admin), "cluster 'backup'") == ["mirrorflow-a", "mirrorflow-b"]
    assert admin.calls == 3


def test_a_coordinator_that_never_settles_is_a_retriable_error_naming_the_cluster(
        monkeypatch: pytest.MonkeyPatch) -> None:
    clock = iter(range(0, 1000, 5))
    monkeypatch.setattr(groups.time, "monotonic", lambda: float(next(clock)))
    with pytest.raises(ClusterError, match="cluster 'backup': list consumer groups: COORDINATOR_LOAD_IN_PROGRESS") \
            as caught:
        list_groups(cast(AdminClient, ScriptedAdmin(loading())), "cluster 'backup'")
    assert caught.value.retriable  # a worker starting waits for it (until_answers) instead of exiting


def test_another_error_in_the_result_is_raised_at_once() -> None:
    denied = ListConsumerGroupsResult(valid=[], errors=[KafkaError(KafkaError.CLUSTER_AUTHORIZATION_FAILED)])
    admin = ScriptedAdmin(denied, listing("never"))
    with pytest.raises(ClusterError, match="CLUSTER_AUTHORIZATION_FAILED"):
        list_groups(cast(AdminClient, admin), "cluster 'backup'")
    assert admin.calls == 1


class SilentAdmin:
    """A cluster that does not answer: librdkafka's local timeout, not flagged retriable."""

    def list_consumer_groups(self, request_timeout: float) -> Future[ListConsumerGroupsResult]:
        future: Future[ListConsumerGroupsResult] = Future()
        future.set_exception(KafkaException(KafkaError(KafkaError._TIMED_OUT, "Local: Timed out")))
        return future


def test_a_cluster_that_does_not_answer_is_a_retriable_error() -> None:
    """Found by the fault harness: a worker started while the source was cut off exited ("list consumer groups:
    _TIMED_OUT") instead of waiting for the cluster as it does for every other start-up check."""
    with pytest.raises(ClusterError, match="cluster 'src': list consumer groups: _TIMED_OUT") as caught:
        list_groups(cast(AdminClient, SilentAdmin()), "cluster 'src'")
    assert caught.value.retriable
