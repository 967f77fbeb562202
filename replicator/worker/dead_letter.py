"""Writing a route's refused records to its dead-letter topic on the target.

Rare by nature, so simple: a producer of its own, created on first use, and each
record waited for (acks=all) before the route goes on. The record then counts as
handled: the commit may move past it once a later record is acknowledged, and a
crash before that writes it again (a duplicate in the dead-letter topic, never a
loss).
"""

from __future__ import annotations

import logging
import time

from confluent_kafka import KafkaError, Message, Producer

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
ACK_TIMEOUT_S = 30.0


class DeadLetterError(Exception):
    """The dead-letter topic did not take a record: the route must stop, commit nothing past it."""


class DeadLetterWriter:
    """The route's dead-letter topic and the producer that writes to it."""

    def __init__(self, config: Config, route: RouteConfig, clients: ClientFactory = KAFKA_CLIENTS) -> None:
        self.config, self.route, self.clients = config, route, clients
        self.topic = dead_letter_topic_name(route.name, route.dead_letter_topic)
        self._producer: Producer | None = None

    def _open(self) -> Producer:
        target = self.config.cluster(self.route.target).client_properties(self.route.producer)
        create_topics(self.clients.admin(admin_settings(target)), {self.topic: 1},
                      {"max.message.bytes": str(TOPIC_LIMIT)})
        return self.clients.producer({**target, "acks": "all", "enable.idempotence": "true", "message.timeout.ms": "0",
                         "message.max.bytes": str(TOPIC_LIMIT + 1024 * 1024),
                         "client.id": f"mirrorflow-{self.route.name}-dead-letter", "logger": LIBRDKAFKA_LOG})

    def write(self, message: Message, limit: int) -> None:
        """Set ``message`` aside (it does not fit the target topic's ``limit``); acknowledged on return."""
        if self._producer is None:
            self._producer = self._open()
        key, value, headers = message.key(), message.value(), headers_of(message)
        size = record_size(key, value, headers)
        _, timestamp = message.timestamp()
        topic, partition = key_of(message)
        refused = RefusedRecord(self.route.source, topic, partition, offset_of(message),
                                timestamp if timestamp > 0 else None, size,
                                f"record of {size} bytes larger than the target topic accepts ({limit} bytes)")
        kept = size <= TOPIC_LIMIT
        outcome: list[KafkaError | None] = []
        self._producer.produce(self.topic, value if kept else None, key,
                               headers=for_producer(dead_letter_headers(refused, headers, kept)),
                               on_delivery=lambda error, _msg: outcome.append(error))
        deadline = time.monotonic() + ACK_TIMEOUT_S
        while not outcome and time.monotonic() < deadline:
            self._producer.poll(0.1)
        where = f"{refused.topic}[{refused.partition}] at source offset {refused.offset}"
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
        """Flush what is left (nothing: every write waited for its acknowledgement)."""
        if self._producer is not None:
            self._producer.flush(5)
