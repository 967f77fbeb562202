"""Pausing and resuming many partitions a slice at a time: all of them, in order, and other threads run between."""

from __future__ import annotations

import threading
import time

from confluent_kafka import TopicPartition

from replicator.kafka import pausing


class _Consumer:
    """What ``pausing`` calls, recorded; each call holds the GIL for the whole of it, as librdkafka's does, for
    ``work`` steps of a C loop per partition."""

    def __init__(self, work: int = 0) -> None:
        self.calls: list[tuple[str, list[TopicPartition]]] = []
        self.work = work

    def pause(self, partitions: list[TopicPartition]) -> None:
        self.calls.append(("pause", partitions))
        sum(range(self.work * len(partitions)))  # one C call: no other thread runs until it returns

    def resume(self, partitions: list[TopicPartition]) -> None:
        self.calls.append(("resume", partitions))
        sum(range(self.work * len(partitions)))


def _work_per_partition(seconds: float, partitions: int) -> int:
    """Steps of ``sum`` per partition for a pause of ``partitions`` to hold the GIL about ``seconds`` here."""
    took = []
    for _ in range(3):  # the quickest: one taken while another process had the core would make the pause too short
        started = time.monotonic()
        sum(range(2_000_000))
        took.append(time.monotonic() - started)
    per_step = min(took) / 2_000_000
    return max(1, int(seconds / per_step / partitions))


def test_every_partition_is_paused_and_resumed_in_order_in_slices() -> None:
    partitions = [TopicPartition(f"t{i // 4:04d}", i % 4) for i in range(503)]
    consumer = _Consumer()
    pausing.pause(consumer, partitions)  # type: ignore[arg-type]
    pausing.resume(consumer, iter(partitions))  # type: ignore[arg-type]
    for kind in ("pause", "resume"):
        slices = [given for name, given in consumer.calls if name == kind]
        assert [len(given) for given in slices] == [250, 250, 3]
        assert [tp for given in slices for tp in given] == partitions
    pausing.pause(consumer, [])  # type: ignore[arg-type]
    assert len(consumer.calls) == 6  # nothing to pause: no call


def test_other_threads_run_between_the_slices() -> None:
    """The point of slicing: a thread of the worker (the loop's watch, its heartbeats) is not kept waiting for the
    whole pause of thousands of partitions."""
    partitions = [TopicPartition("t", p) for p in range(5_000)]
    consumer = _Consumer(work=_work_per_partition(0.5, len(partitions)))
    gaps: list[float] = []
    stop = threading.Event()

    def tick() -> None:
        last = time.monotonic()
        while not stop.wait(0.005):
            now = time.monotonic()
            gaps.append(now - last)
            last = now

    ticker = threading.Thread(target=tick, daemon=True)
    ticker.start()
    try:
        started = time.monotonic()
        pausing.pause(consumer, partitions)  # type: ignore[arg-type]
        took = time.monotonic() - started
    finally:
        stop.set()
        ticker.join(5)
    assert took >= 0.25
    assert max(gaps) < took / 2, (max(gaps), took)
