"""Pausing and resuming many partitions of a consumer a slice at a time.

librdkafka looks each partition of a pause or resume up in a list of all the client's topics, and confluent-kafka
holds the GIL for the whole call: at 10,000 partitions of 2,500 topics one call took 5-7 s, through which no other
thread of the worker ran (its heartbeats, its topic refresh, its metrics server, the watch of its loop). Called
with ``SLICE`` partitions at a time, the interpreter can hand over between the calls: the same work, without the
other threads waiting for all of it. Nothing is lost by it: each partition is paused or resumed on its own anyway.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from confluent_kafka import Consumer, TopicPartition

SLICE = 250  # partitions per call: ~0.1 s of librdkafka's look-ups at 10,000 partitions, ~3 ms at 2,000


def pause(consumer: Consumer, partitions: Sequence[TopicPartition]) -> None:
    """``consumer.pause(partitions)``, ``SLICE`` partitions at a time."""
    _in_slices(consumer.pause, partitions)


def resume(consumer: Consumer, partitions: Sequence[TopicPartition]) -> None:
    """``consumer.resume(partitions)``, ``SLICE`` partitions at a time."""
    _in_slices(consumer.resume, partitions)


def _in_slices(call: Callable[[list[TopicPartition]], object], partitions: Sequence[TopicPartition]) -> None:
    listed = list(partitions)
    for start in range(0, len(listed), SLICE):
        call(listed[start:start + SLICE])
