"""Typed views of librdkafka records: the fields a consumed record or a delivery report always has.

confluent-kafka types every field of ``Message`` as optional (a bare error event has no
topic or offset); records the consumer returns and records a delivery report names
always carry them. These accessors say so once, instead of at every use.
"""

from __future__ import annotations

from typing import cast

from confluent_kafka import KafkaError, Message

from replicator.domain.provenance import Headers

TP = tuple[str, int]
ProducedHeaders = list[tuple[str, str | bytes | None]] | None  # what Producer.produce takes
# Delivery reports of records librdkafka dropped unsent (``Producer.purge``, an abort, a fatal producer): they say
# nothing of the record, which is copied again.
PURGED = (KafkaError._PURGE_QUEUE, KafkaError._PURGE_INFLIGHT)


def key_of(message: Message) -> TP:
    """The topic and partition of a record."""
    topic, partition = message.topic(), message.partition()
    if topic is None or partition is None:
        raise ValueError(f"a record without topic or partition: {message!r}")
    return topic, partition


def event_partition(message: Message) -> TP | None:
    """The partition an error event is about; None for an event of the whole client (a fatal error)."""
    topic, partition = message.topic(), message.partition()
    return None if topic is None or partition is None else (topic, partition)


def offset_of(message: Message) -> int:
    """The offset of a consumed record (-1 for a delivery report without one)."""
    offset = message.offset()
    return -1 if offset is None else offset


def headers_of(message: Message) -> Headers:
    """A consumed record's headers: librdkafka gives a list of (name, bytes or None), never a dict."""
    return cast(Headers, message.headers())


def for_producer(headers: Headers) -> ProducedHeaders:
    """Headers as ``produce`` types them (the same list: bytes values are among what it takes)."""
    return cast(ProducedHeaders, headers)


def error_of(message: Message) -> KafkaError:
    """The error of an error event (``message.error()`` was checked to be set)."""
    error = message.error()
    if error is None:
        raise ValueError("not an error event")
    return error


def failed_without_error(exc: SystemError) -> KafkaError:
    """The producer's fatal error when confluent-kafka raised SystemError instead ("returned NULL without setting an
    exception" out of poll or flush; "returned a result with an exception set" inside a delivery report): its
    fatal error was taken inside a report, and it says no more."""
    return KafkaError(KafkaError._FATAL, f"the producer failed: {exc}", fatal=True)
