"""One target partition out of the worker's reach (its leader black-holed for the worker while its cluster sees
it healthy) must not stop the route's other partitions, though its records fill the producer's queue; a target
that acknowledges nothing at all holds nothing apart. Fake clients: the producer's queue is bounded and
librdkafka's per-partition queues deliver around the records of a partition cut off."""

from __future__ import annotations

import dataclasses
import logging

import pytest

from replicator.testing import FakeKafka
from replicator.worker import metrics
from tests.fake_route import FAST, WorkerThread, route_config, wait_until

PARTITIONS = 4
# The producer watch's own renewal (no report at all for `stalled` s) left out of it: 60 s, as by default.
TIMEOUTS = dataclasses.replace(FAST, stalled=60.0, ack_stall=0.5, ack_give_up=1.0, ack_retry=0.5)


def _produce(kafka: FakeKafka, partition: int, count: int, start: int = 0) -> None:
    for n in range(start, start + count):
        kafka["source"].append("orders", partition, f"k{n}".encode(), f"{partition}-{n}".encode(), [], 1_000 + n)


def _copies(kafka: FakeKafka, partition: int) -> list[bytes | None]:
    """First copies on the target, in order of arrival."""
    if "source.orders" not in kafka["target"].topics:
        return []
    return list(dict.fromkeys(r.value for r in kafka["target"].records("source.orders", partition)))


def _source(kafka: FakeKafka, partition: int) -> list[bytes | None]:
    return [r.value for r in kafka["source"].records("orders", partition)]


def _renewals() -> float:
    """Producers replaced to make room for the partitions not held apart (the process's registry)."""
    return metrics.ERRORS.labels("r", "queue_full_of_held")._value.get()  # type: ignore[no-any-return]


def test_a_target_partition_out_of_reach_holds_up_only_itself(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="replicator.worker.held_apart")
    kafka = FakeKafka("source", "target")
    kafka["source"].create_topic("orders", PARTITIONS)
    config = route_config(kafka, producer='{queue.buffering.max.messages: "20"}')
    for p in range(PARTITIONS):
        _produce(kafka, p, 10)
    worker, renewals = WorkerThread(kafka, "a", config, TIMEOUTS), _renewals()
    try:
        wait_until(lambda: all(len(_copies(kafka, p)) == 10 for p in range(PARTITIONS)), what="the first copy",
                   alive=(worker,))
        kafka["target"].leaders.update({("source.orders", 0): 2, ("source.orders", 1): 2})  # node 1: the others
        kafka["target"].cut_off.add(2)
        _produce(kafka, 0, 200, start=10)  # ten times what the queue holds
        wait_until(lambda: worker.worker.producer.queue_full > 0, what="the queue full",  # type: ignore[attr-defined]
                   alive=(worker,))
        for p in range(1, PARTITIONS):
            _produce(kafka, p, 100, start=10)
        wait_until(lambda: all(_copies(kafka, p) == _source(kafka, p) for p in (2, 3)), timeout=20,
                   what="the partitions node 1 leads copied while node 2 is cut off", alive=(worker,))
        assert len(_copies(kafka, 0)) == len(_copies(kafka, 1)) == 10
        # Partition 1 was set aside with 0 once the metadata named their leader: it never filled the queue.
        assert set(worker.worker.ack_stalls.limits) == {("orders", 0), ("orders", 1)}
        assert _renewals() - renewals == 1

        kafka["target"].cut_off.clear()
        wait_until(lambda: _copies(kafka, 0) == _source(kafka, 0), timeout=20,
                   what="partition 0 copied once its leader is back", alive=(worker,))
        wait_until(lambda: not worker.worker.ack_stalls.limits, what="partition 0 let go", alive=(worker,))
        for p in range(1, PARTITIONS):
            _produce(kafka, p, 5, start=110)
        _produce(kafka, 0, 5, start=210)
        wait_until(lambda: all(_copies(kafka, p) == _source(kafka, p) for p in range(PARTITIONS)),
                   what="every partition copying on", alive=(worker,))
    finally:
        assert worker.finish() is None
    # Told when the trouble began and when it ended: one line each, not one per look (TIMEOUTS: 0.1 s apart)
    told = [r.getMessage() for r in caplog.records if r.name == "replicator.worker.held_apart"
            and r.levelno == logging.WARNING and "held apart" in r.getMessage()]
    assert "held apart, fetching paused" in told[0] and "orders[0]" in told[0]
    assert "none is held apart now" in told[-1] and "orders[0]" in told[-1] and "orders[1]" in told[-1]


def test_a_whole_target_away_is_waited_for_without_replacing_the_producer() -> None:
    """Frozen: the partition whose records fill the queue is held apart (acknowledgements cannot tell a node out
    of reach from a whole target away), but its metadata does not answer, so nothing says the others would be
    taken: the producer is not replaced, and once the target is back every record is on it exactly once, in
    order."""
    kafka = FakeKafka("source", "target")
    kafka["source"].create_topic("orders", PARTITIONS)
    config = route_config(kafka, producer='{queue.buffering.max.messages: "20"}')
    for p in range(PARTITIONS):
        _produce(kafka, p, 5)
    worker = WorkerThread(kafka, "a", config, TIMEOUTS)
    try:
        wait_until(lambda: all(len(_copies(kafka, p)) == 5 for p in range(PARTITIONS)), what="the first copy",
                   alive=(worker,))
        producer, renewals = worker.worker.producer, _renewals()
        kafka["target"].freeze()
        for p in range(PARTITIONS):
            _produce(kafka, p, 50, start=5)
        wait_until(lambda: producer.queue_full > 0, what="the queue full", alive=(worker,))  # type: ignore[attr-defined]
        wait_until(lambda: worker.worker.ack_stalls.limits, what="a partition held apart", alive=(worker,))
        looks = worker.worker.ack_stalls.looks
        wait_until(lambda: worker.worker.ack_stalls.looks > looks + 10, what="two ack_stalls more",
                   alive=(worker,))
        assert _renewals() == renewals and worker.worker.producer is producer
        kafka["target"].thaw()
        wait_until(lambda: all(_copies(kafka, p) == _source(kafka, p) for p in range(PARTITIONS)),
                   what="everything copied after the thaw", alive=(worker,))
        wait_until(lambda: not worker.worker.ack_stalls.limits, what="every partition let go", alive=(worker,))
        for p in range(PARTITIONS):
            assert [r.value for r in kafka["target"].records("source.orders", p)] == _source(kafka, p)
    finally:
        assert worker.finish() is None
