"""The route's checkpoints topic on the target: compacted, one partition, one key per group partition."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping

from confluent_kafka import KafkaError, Producer

from replicator.config import RouteConfig
from replicator.domain.checkpoint import Checkpoint, encode_checkpoint
from replicator.errors import ClusterError
from replicator.kafka.admin import create_topics

log = logging.getLogger(__name__)


def checkpoints_topic_name(route: RouteConfig) -> str:
    """``mirrorflow-checkpoints.<route>.internal`` (``*.internal``: excluded from every route)."""
    return f"mirrorflow-checkpoints.{route.name}.internal"


def publish(properties: Mapping[str, str], topic: str, checkpoints: Iterable[Checkpoint], at_ms: int,
            what: str, timeout: float = 30.0) -> int:
    """Write the translated checkpoints (creating the topic if missing); returns how many."""
    records = [encode_checkpoint(c, at_ms) for c in checkpoints if c.translated]
    if not records:
        return 0
    create_topics(dict(properties), {topic: 1}, {"cleanup.policy": "compact"}, timeout)
    failures: list[KafkaError] = []

    def delivered(error: KafkaError | None, _message: object) -> None:
        if error is not None:
            failures.append(error)

    producer = Producer({**properties, "acks": "all", "enable.idempotence": "true", "linger.ms": "5",
                         "message.timeout.ms": str(int(timeout * 1000)), "log_level": "0"})
    for key, value in records:
        producer.produce(topic, value, key, partition=0, on_delivery=delivered)
        producer.poll(0)
    left = producer.flush(timeout + 5)
    if failures or left:
        reason = failures[0].str() if failures else f"{left} records still unacknowledged"
        raise ClusterError(f"{what}: writing {topic}: {reason}", retriable=True)
    log.info("checkpoints written topic=%s records=%d", topic, len(records))
    return len(records)
