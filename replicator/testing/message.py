"""A record as confluent-kafka's ``Message`` shows it (accessor methods, not attributes)."""

from __future__ import annotations

from confluent_kafka import TIMESTAMP_CREATE_TIME, KafkaError

Headers = list[tuple[str, bytes | None]] | None


class FakeMessage:
    """A consumed record, a delivery report's record, or an error event."""

    __slots__ = ("_error", "_headers", "_key", "_offset", "_partition", "_timestamp", "_topic", "_value")

    def __init__(self, topic: str | None, partition: int | None, offset: int, key: bytes | None = None,
                 value: bytes | None = None, headers: Headers = None, timestamp: int = 0,
                 error: KafkaError | None = None) -> None:
        self._topic, self._partition, self._offset = topic, partition, offset
        self._key, self._value, self._headers = key, value, headers
        self._timestamp, self._error = timestamp, error

    def topic(self) -> str | None:
        """The topic (None in an error event of the whole client)."""
        return self._topic

    def partition(self) -> int | None:
        """The partition (None in an error event of the whole client)."""
        return self._partition

    def offset(self) -> int | None:
        """The offset (source offset when consumed, target offset in a delivery report); None when
        unknown, as confluent-kafka returns it."""
        return self._offset if self._offset >= 0 else None

    def key(self) -> bytes | None:
        """The key."""
        return self._key

    def value(self) -> bytes | None:
        """The value."""
        return self._value

    def headers(self) -> Headers:
        """The headers as a list of pairs, or None (as confluent-kafka returns them)."""
        return None if not self._headers else list(self._headers)

    def timestamp(self) -> tuple[int, int]:
        """(kind, milliseconds)."""
        return TIMESTAMP_CREATE_TIME, self._timestamp

    def error(self) -> KafkaError | None:
        """The error of an error event, else None."""
        return self._error

    def __len__(self) -> int:
        return len(self._value or b"")
