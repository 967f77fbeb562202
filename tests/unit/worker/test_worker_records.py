"""Typed accessors of librdkafka records: a consumed record always has its fields, an error event may not."""

from __future__ import annotations

from typing import cast

import pytest
from confluent_kafka import KafkaError, Message

from replicator.testing.message import FakeMessage
from replicator.worker.records import error_of, event_partition, for_producer, headers_of, key_of, offset_of

ERROR = KafkaError(KafkaError._FATAL, "instance ID still used", fatal=True)


def message(topic: str | None = "orders", partition: int | None = 2, offset: int = 7,
            headers: list[tuple[str, bytes | None]] | None = None, error: KafkaError | None = None) -> Message:
    return cast(Message, FakeMessage(topic, partition, offset, b"k", b"v", headers, 1_000, error))


@pytest.mark.parametrize(("record", "key", "event"), [
    (message(), ("orders", 2), ("orders", 2)),
    (message(partition=0), ("orders", 0), ("orders", 0)),
    (message(error=KafkaError(KafkaError._AUTO_OFFSET_RESET, "out of range")), ("orders", 2), ("orders", 2)),
])
def test_a_record_and_a_partition_event_name_their_partition(record: Message, key: tuple[str, int],
                                                             event: tuple[str, int]) -> None:
    assert key_of(record) == key
    assert event_partition(record) == event


@pytest.mark.parametrize("record", [message(None, None, -1, error=ERROR), message("orders", None, -1, error=ERROR),
                                    message(None, 0, -1, error=ERROR)])
def test_an_event_of_the_whole_client_has_no_partition(record: Message) -> None:
    assert event_partition(record) is None
    with pytest.raises(ValueError, match="a record without topic or partition"):
        key_of(record)


@pytest.mark.parametrize(("offset", "expected"), [(0, 0), (7, 7), (-1, -1)])
def test_offset_of_is_minus_one_when_unknown(offset: int, expected: int) -> None:
    assert offset_of(message(offset=offset)) == expected


@pytest.mark.parametrize(("headers", "expected"), [
    (None, None),
    ([("h", b"x"), ("h", None), ("origin", b"east")], [("h", b"x"), ("h", None), ("origin", b"east")]),
])
def test_headers_are_a_list_of_pairs_kept_in_order_with_repeats(headers: list[tuple[str, bytes | None]] | None,
                                                               expected: list[tuple[str, bytes | None]] | None) -> None:
    assert headers_of(message(headers=headers)) == expected
    assert for_producer(headers_of(message(headers=headers))) == expected


def test_error_of_an_error_event_and_of_a_record() -> None:
    assert error_of(message(error=ERROR)) is ERROR
    with pytest.raises(ValueError, match="not an error event"):
        error_of(message())
