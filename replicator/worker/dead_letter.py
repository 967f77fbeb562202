"""Writing a route's refused records to its dead-letter topic on the target.

Rare by nature, so simple: a producer of its own, created on first use, and each
record waited for (acks=all) before the route goes on. The record then counts as
handled: the commit may move past it once a later record is acknowledged, and a
crash before that writes it again (a duplicate in the dead-letter topic, never a
loss).

An exactly-once route writes it through its own transactional producer instead, in
the open transaction: it shows (to read_committed readers) when the transaction
commits, never when it aborts. The position still moves past it only with a later
record of its partition (an offset sync can only describe a record that was copied),
so a worker that stops or hands the partition over before one writes it again in
its next transaction: a second copy, named by the same source coordinates.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from confluent_kafka import KafkaError, KafkaException, Message, Producer

from replicator.config import Config, RouteConfig
from replicator.domain.dead_letter import (
    RefusedRecord,
    dead_letter_headers,
    dead_letter_topic_name,
    record_size,
)
from replicator.kafka.admin import create_topics
from replicator.kafka.clients import KAFKA_CLIENTS, LIBRDKAFKA_LOG, ClientFactory, admin_settings
from replicator.worker import metrics
from replicator.worker.records import for_producer, headers_of, key_of, offset_of

log = logging.getLogger(__name__)

# The dead-letter topic takes records far larger than a usual topic (up to Kafka's
# default request limit); a value larger still is left out, its source named.
TOPIC_LIMIT = 64 * 1024 * 1024
REQUEST_LIMIT = TOPIC_LIMIT + 1024 * 1024  # message.max.bytes of a producer writing there
ACK_TIMEOUT_S = 30.0


class DeadLetterError(Exception):
    """The dead-letter topic did not take a record: the route must stop, commit nothing past it (``error``:
    the producer's, when it raised one)."""

    def __init__(self, message: str, error: KafkaError | None = None) -> None:
        super().__init__(message)
        self.error = error


class DeadLetterWriter:
    """The route's dead-letter topic and the producer that writes to it."""

    def __init__(self, config: Config, route: RouteConfig, clients: ClientFactory = KAFKA_CLIENTS,
                 through: Callable[[], Producer] | None = None, value_limit: int = TOPIC_LIMIT) -> None:
        """``through``: the producer to write with (an exactly-once route's current transactional one), called
        at each write; else one of its own. ``value_limit``: larger values are left out (``through``'s
        message.max.bytes less room for the rest)."""
        self.config, self.route, self.clients = config, route, clients
        self.topic = dead_letter_topic_name(route.name, route.dead_letter_topic)
        self._through, self._value_limit = through, min(value_limit, TOPIC_LIMIT)
        self._producer: Producer | None = None
        self._created = False

    def _open(self) -> Producer:
        target = self.config.cluster(self.route.target).client_properties(self.route.producer)
        if not self._created:
            create_topics(self.clients.admin(admin_settings(target)), {self.topic: 1},
                          {"max.message.bytes": str(TOPIC_LIMIT)})
            self._created = True
        if self._through is not None:
            return self._through()
        if self._producer is None:
            self._producer = self.clients.producer({
                **target, "acks": "all", "enable.idempotence": "true", "message.timeout.ms": "0",
                "message.max.bytes": str(REQUEST_LIMIT), "client.id": f"mirrorflow-{self.route.name}-dead-letter",
                "logger": LIBRDKAFKA_LOG})
        return self._producer

    def write(self, message: Message, limit: int) -> None:
        """Set ``message`` aside (it does not fit the target topic's ``limit``); acknowledged on return."""
        producer = self._open()
        key, value, headers = message.key(), message.value(), headers_of(message)
        size = record_size(key, value, headers)
        _, timestamp = message.timestamp()
        topic, partition = key_of(message)
        refused = RefusedRecord(self.route.source, topic, partition, offset_of(message),
                                timestamp if timestamp > 0 else None, size,
                                f"record of {size} bytes larger than the target topic accepts ({limit} bytes)")
        kept = size <= self._value_limit
        where = f"{refused.topic}[{refused.partition}] at source offset {refused.offset}"
        outcome: list[KafkaError | None] = []
        deadline = time.monotonic() + ACK_TIMEOUT_S
        try:
            while True:
                try:
                    producer.produce(self.topic, value if kept else None, key,
                                     headers=for_producer(dead_letter_headers(refused, headers, kept)),
                                     on_delivery=lambda error, _msg: outcome.append(error))
                    break
                except BufferError:  # a shared producer's queue is full: room comes as it delivers
                    if time.monotonic() >= deadline:
                        raise DeadLetterError(f"dead-letter topic {self.topic}: no room in the producer's queue "
                                              f"for the record of {where} in {ACK_TIMEOUT_S:.0f} s") from None
                    producer.poll(0.1)
            while not outcome and time.monotonic() < deadline:
                producer.poll(0.1)
        except KafkaException as exc:
            raise DeadLetterError(f"dead-letter topic {self.topic} did not take the record of {where}: "
                                  f"{exc.args[0].str()}", exc.args[0]) from None
        except SystemError as exc:  # the producer's fatal error taken inside a delivery report (see GroupMember)
            raise DeadLetterError(f"dead-letter topic {self.topic} did not take the record of {where}: the "
                                  f"producer failed ({exc})", KafkaError(KafkaError._FATAL, str(exc), fatal=True)
                                  ) from None
        if not outcome:
            raise DeadLetterError(f"dead-letter topic {self.topic} did not acknowledge the record of {where} "
                                  f"in {ACK_TIMEOUT_S:.0f} s")
        if outcome[0] is not None:
            raise DeadLetterError(f"dead-letter topic {self.topic} refused the record of {where}: "
                                  f"{outcome[0].str()}")
        metrics.DEAD_LETTERS.labels(self.route.name, refused.topic).inc()
        log.warning("record set aside in the dead-letter topic route=%s topic=%s partition=%s offset=%s "
                    "size=%s limit=%s dead_letter_topic=%s", self.route.name, refused.topic, refused.partition,
                    refused.offset, size, limit, self.topic)

    def close(self) -> None:
        """Flush what is left of its own producer (nothing: every write waited for its acknowledgement)."""
        if self._producer is not None:
            self._producer.flush(5)
