"""describe_refusal: one line that names the refused record and what to change."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError

from replicator.domain.dead_letter import record_size
from replicator.worker.refusals import describe_refusal

TOO_LARGE = KafkaError(KafkaError.MSG_SIZE_TOO_LARGE, "Broker: Message size too large")
LIMIT = 1_048_588
OVERHEAD = record_size(None, b"", None)


@pytest.mark.parametrize(("sizes", "limit", "expected"), [
    # the largest refused record is named, with its size
    ({7: 2_000_000, 8: 3_000_000, 9: 10}, LIMIT,
     "the record of orders[0] at source offset 8 (3000000 bytes) is larger than the target accepts "
     "(MSG_SIZE_TOO_LARGE); nothing from offset 7 on was committed"),
    # the limit unknown: the record is blamed
    ({7: 100}, None,
     "the record of orders[0] at source offset 7 (100 bytes) is larger than the target accepts "
     "(MSG_SIZE_TOO_LARGE); nothing from offset 7 on was committed"),
    # small records, refused together: the batch is too large, batch.size is what to change
    ({7: 100, 8: 200}, LIMIT,
     f"a batch of orders[0] from source offset 7 is larger than the target topic accepts "
     f"(max.message.bytes={LIMIT}) although its records are small: set the route's producer batch.size below "
     f"{LIMIT}; nothing from offset 7 on was committed"),
    # just under half the limit is still "small"; at half it may be the record itself
    ({7: LIMIT // 2 - OVERHEAD - 1}, LIMIT, "a batch of orders[0]"),
    ({7: LIMIT // 2 - OVERHEAD}, LIMIT, "the record of orders[0] at source offset 7"),
], ids=["largest-named", "limit-unknown", "small-records", "just-small", "half-limit"])
def test_a_record_too_large_is_named_and_a_batch_too_large_points_at_batch_size(
        sizes: dict[int, int], limit: int | None, expected: str) -> None:
    assert describe_refusal("orders[0]", 7, TOO_LARGE, sizes, limit).startswith(expected)


@pytest.mark.parametrize(("error", "sizes", "expected"), [
    (KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED, "Broker: Topic authorization failed"), {},
     "target refused the record of orders[3] at source offset 42: TOPIC_AUTHORIZATION_FAILED: "
     "Broker: Topic authorization failed"),
    (KafkaError(KafkaError.INVALID_RECORD, "Broker: Invalid record"), {42: 10},
     "target refused the record of orders[3] at source offset 42: INVALID_RECORD: Broker: Invalid record"),
    # too large, but no size noted (the report came without its record): the error as it is
    (TOO_LARGE, {}, "target refused the record of orders[3] at source offset 42: MSG_SIZE_TOO_LARGE: "
     "Broker: Message size too large"),
])
def test_any_other_refusal_names_the_record_and_the_error(error: KafkaError, sizes: dict[int, int],
                                                          expected: str) -> None:
    assert describe_refusal("orders[3]", 42, error, sizes, LIMIT) == expected


@pytest.mark.parametrize(("big", "committed"), [(0, 0), (5, 5), (9, 9)])
def test_a_route_stops_at_a_record_the_target_refuses_naming_it_and_commits_nothing_from_it_on(
        big: int, committed: int) -> None:
    from replicator.testing import FakeKafka
    from replicator.worker.route_worker import RouteFailed
    from tests.fake_route import WorkerThread, route_config, wait_until

    kafka = FakeKafka("source", "target")
    kafka["source"].create_topic("orders", 1)
    kafka["target"].create_topic("source.orders", 1, {"max.message.bytes": "1000"})
    for n in range(10):
        kafka["source"].append("orders", 0, None, b"x" * (2000 if n == big else 10))
    worker = WorkerThread(kafka, "a", route_config(kafka))
    wait_until(lambda: not worker.thread.is_alive(), what="the route to stop")
    assert isinstance(worker.error, RouteFailed)
    assert str(worker.error) == (
        f"route r: the record of orders[0] at source offset {big} (2000 bytes) is larger than the target accepts "
        f"(MSG_SIZE_TOO_LARGE); nothing from offset {big} on was committed")
    assert kafka["source"].group("mirrorflow-r").committed.get(("orders", 0), (0, None))[0] == committed
