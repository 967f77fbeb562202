"""The scale benches' seed: one record acknowledged on every partition, or a step that fails saying how many not."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))  # the bench's scripts import by file name

from procs import StepFailed
from scale_load import Shape, SteadyLoad


class RefusingProducer:
    """Acknowledges a partition's record only once it was refused ``refusals`` times (a topic created a moment
    before: its leader not known yet); reports from ``flush``, as librdkafka's ``poll`` does."""

    def __init__(self, refusals: int, at_once: bool = False) -> None:
        self.refusals, self.tries, self.at_once = refusals, {}, at_once
        self.acked: set[tuple[str, int]] = set()
        self.reports: list[tuple[Any, tuple[str, int]]] = []

    def produce(self, topic: str, value: bytes, partition: int, on_delivery: Any) -> None:
        key = (topic, partition)
        self.tries[key] = self.tries.get(key, 0) + 1
        if self.at_once and self.tries[key] <= self.refusals:  # librdkafka, once it knows the topic as unknown
            raise KafkaException(KafkaError(KafkaError._UNKNOWN_TOPIC, "Unknown topic"))
        self.reports.append((on_delivery, key))

    def poll(self, _timeout: float) -> int:
        return 0

    def flush(self, _timeout: float) -> int:
        reports, self.reports = self.reports, []
        for on_delivery, key in reports:
            if self.tries[key] <= self.refusals:
                on_delivery(KafkaError(KafkaError.NOT_LEADER_FOR_PARTITION, "leader not known"), None)
            else:
                self.acked.add(key)
                on_delivery(None, None)
        return 0

    def close(self) -> None:
        pass


SHAPE = Shape("s", 3, 2)


def load_with(producer: RefusingProducer, monkeypatch: pytest.MonkeyPatch) -> SteadyLoad:
    load = SteadyLoad("h:1", SHAPE, 0)
    monkeypatch.setattr(load, "_producer", lambda: producer)
    monkeypatch.setattr("scale_load.time.sleep", lambda _s: None)
    return load


@pytest.mark.parametrize("at_once", [False, True])
def test_a_record_refused_by_a_new_topic_is_sent_again_until_every_partition_has_one(
        at_once: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """Found at 2,500 topics x 4: 7,200 seed records were refused and the bench then waited for partitions that
    would never have a record. Sent again, librdkafka refused some at once (the topic known as unknown)."""
    producer = RefusingProducer(refusals=2, at_once=at_once)
    load_with(producer, monkeypatch).seed()
    assert producer.acked == {(tp.topic, tp.partition) for tp in SHAPE.partitions_of()}


def test_partitions_that_keep_refusing_fail_the_step_saying_how_many(monkeypatch: pytest.MonkeyPatch) -> None:
    producer = RefusingProducer(refusals=10**6)
    with pytest.raises(StepFailed, match=r"6 of them still refuse a record after 0 s \(.*leader not known"):
        load_with(producer, monkeypatch).seed(within=0.0)
