"""Reading a route's newest heartbeat on the target: a replica whose leader is still settling is read again, not
a failed SLA check (found as a CI failure: NOT_LEADER_FOR_PARTITION right after the replica was created)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException

from replicator.config import parse_config
from replicator.domain.heartbeat import Heartbeat, encode_heartbeat
from replicator.errors import MirrorFlowError
from replicator.runbooks.sla import observe

CONFIG = parse_config("clusters: {a: {bootstrap.servers: 'h:1'}, b: {bootstrap.servers: 'h:2'}}\n"
                      "routes: [{name: r, source: a, target: b, topics: [t]}]\n")


class _Message:
    def __init__(self, value: bytes) -> None:
        self._value = value

    def error(self) -> None:
        return None

    def value(self) -> bytes:
        return self._value

    def partition(self) -> int:
        return 0

    def offset(self) -> int:
        return 0


def _consumer(failures: list[KafkaError]) -> type:
    """A consumer of a one-partition replica holding one heartbeat, whose watermark reads fail with
    ``failures`` first (as librdkafka raises them)."""
    beat = encode_heartbeat(Heartbeat("a", "r", 1_700_000_000_000))[1]

    class FakeConsumer:
        def __init__(self, _settings: dict[str, Any]) -> None:
            self.closed = False

        def list_topics(self, topic: str, timeout: float) -> Any:
            return SimpleNamespace(topics={topic: SimpleNamespace(error=None, partitions={0: None})})

        def get_watermark_offsets(self, _tp: Any, timeout: float) -> tuple[int, int]:
            if failures:
                raise KafkaException(failures.pop(0))
            return 0, 1

        def assign(self, _partitions: Any) -> None:
            pass

        def consume(self, _count: int, _timeout: float) -> list[_Message]:
            return [_Message(beat)]

        def close(self) -> None:
            self.closed = True

    return FakeConsumer


def test_a_replica_whose_leader_is_settling_is_read_again(monkeypatch: pytest.MonkeyPatch) -> None:
    settling = [KafkaError(KafkaError.NOT_LEADER_FOR_PARTITION), KafkaError(KafkaError.LEADER_NOT_AVAILABLE)]
    monkeypatch.setattr(observe, "Consumer", _consumer(settling))
    assert observe.newest_heartbeat_ms(CONFIG, CONFIG.route("r"), timeout=5) == 1_700_000_000_000
    assert not settling


def test_an_error_that_will_not_pass_is_raised_at_once_naming_the_target(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(observe, "Consumer", _consumer([KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED)]))
    with pytest.raises(MirrorFlowError, match=r"target .b.: topic a\.mirrorflow-heartbeats\.r: "):
        observe.newest_heartbeat_ms(CONFIG, CONFIG.route("r"), timeout=5)
