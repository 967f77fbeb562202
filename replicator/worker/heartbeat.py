"""The heartbeat emitter a worker starts: a record on the route's heartbeat topic every few seconds.

It runs on its own thread with its own small producer, apart from the hot path, and
never stops the route: a source that refuses the writes (no WRITE ACL, say) is logged
once, and once more when heartbeats get through again.
"""

from __future__ import annotations

import logging
import threading
import time

from confluent_kafka import KafkaError, KafkaException, Message, Producer

from replicator.config import Config, RouteConfig
from replicator.domain.heartbeat import Heartbeat, encode_heartbeat, heartbeat_topic
from replicator.errors import ClusterError
from replicator.kafka.admin import create_topics
from replicator.kafka.clients import KAFKA_CLIENTS, LIBRDKAFKA_LOG, ClientFactory, admin_settings

log = logging.getLogger(__name__)

# One partition keeps heartbeats in order; a day of them is a few MB at most.
TOPIC_CONFIG = {"cleanup.policy": "delete", "retention.ms": str(24 * 3600 * 1000)}


class HeartbeatEmitter:
    """Writes the route's heartbeats to its source cluster until :meth:`stop`."""

    def __init__(self, config: Config, route: RouteConfig, clients: ClientFactory = KAFKA_CLIENTS) -> None:
        self.route, self.clients = route, clients
        self.properties = config.cluster(route.source).client_properties()
        self.interval = route.sla.heartbeat_interval
        self.topic = heartbeat_topic(route.name)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._failing = False

    @classmethod
    def for_route(cls, config: Config, route: RouteConfig,
                  clients: ClientFactory = KAFKA_CLIENTS) -> HeartbeatEmitter | None:
        """An emitter for ``route``, or None when its ``sla.heartbeats`` is off."""
        return cls(config, route, clients) if route.sla.heartbeats else None

    def start(self) -> None:
        """Create the heartbeat topic when missing (before the route's first topic scan), then beat."""
        try:
            create_topics(self.clients.admin(admin_settings(self.properties)), {self.topic: 1}, TOPIC_CONFIG)
        except (ClusterError, KafkaException) as exc:
            log.warning("heartbeat topic not created, heartbeats may fail route=%s cluster=%s topic=%s error=%s",
                        self.route.name, self.route.source, self.topic, exc)
        self._thread = threading.Thread(target=self._run, name=f"heartbeat-{self.route.name}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop beating and wait for the thread (its producer flushes for at most a few seconds)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def _run(self) -> None:
        producer = self.clients.producer({**self.properties, "acks": "all", "linger.ms": "0",
                             "message.timeout.ms": str(int(max(10.0, 3 * self.interval) * 1000)),
                             "client.id": f"mirrorflow-{self.route.name}-heartbeat", "logger": LIBRDKAFKA_LOG})
        try:
            while not self._stop.is_set():
                self._beat(producer)
                self._stop.wait(self.interval)
                producer.poll(0)
        finally:
            producer.flush(5)

    def _beat(self, producer: Producer) -> None:
        key, value = encode_heartbeat(Heartbeat(self.route.source, self.route.name, int(time.time() * 1000)))
        try:
            producer.produce(self.topic, value, key, on_delivery=self._delivered)
        except (BufferError, KafkaException) as exc:
            self._report(str(exc))

    def _delivered(self, error: KafkaError | None, _message: Message) -> None:
        if error is not None:
            self._report(error.str())
        elif self._failing:
            self._failing = False
            log.warning("heartbeats written again route=%s cluster=%s", self.route.name, self.route.source)

    def _report(self, reason: str) -> None:
        if not self._failing:
            self._failing = True
            log.warning("heartbeat not written (said once until one is) route=%s cluster=%s topic=%s error=%s",
                        self.route.name, self.route.source, self.topic, reason)
