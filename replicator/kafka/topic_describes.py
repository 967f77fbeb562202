"""Topics' configs and ids, read in requests of ``TOPICS_PER_REQUEST`` topics.

confluent-kafka turns a whole describe answer into Python objects in one hold of the
GIL, during which a worker's copy loop cannot run; smaller requests, all sent before
any answer is waited for, keep each hold short and take no longer in all.
"""

from __future__ import annotations

from concurrent.futures import Future

from confluent_kafka import KafkaException, TopicCollection
from confluent_kafka.admin import AdminClient, ConfigEntry, ConfigResource, TopicDescription

from replicator.kafka.admin import ANSWER_GRACE_S

# The configs of 2,000 topics (some 40 entries each) in one answer held the GIL 74-95 ms, 100 topics 9-15 ms;
# sent together, the requests took no longer in all (2 cores, 2026-11-29; bench/README.md).
TOPICS_PER_REQUEST = 100
DESCRIBE_TIMEOUT_S = 15.0  # a describe request's own timeout (its wait: ANSWER_GRACE_S more)


def _batches(topics: list[str]) -> list[list[str]]:
    return [topics[start:start + TOPICS_PER_REQUEST] for start in range(0, len(topics), TOPICS_PER_REQUEST)]


def describe_topic_configs(admin: AdminClient, topics: list[str], timeout: float = DESCRIBE_TIMEOUT_S
                           ) -> dict[ConfigResource, Future[dict[str, ConfigEntry]]]:
    """Each topic's configs, asked ``TOPICS_PER_REQUEST`` topics per request, all requests sent before any is waited
    for: a future per topic, as ``AdminClient.describe_configs`` gives them."""
    futures: dict[ConfigResource, Future[dict[str, ConfigEntry]]] = {}
    for batch in _batches(topics):
        resources = [ConfigResource(ConfigResource.Type.TOPIC, t) for t in batch]
        futures.update(admin.describe_configs(resources, request_timeout=timeout))
    return futures


def topic_ids(admin: AdminClient, topics: list[str], timeout: float = 10.0) -> dict[str, str]:
    """The current id of each topic that exists (one deleted meanwhile is left out), ``TOPICS_PER_REQUEST``
    topics per request, all sent before any is waited for."""
    futures: dict[str, Future[TopicDescription]] = {}
    for batch in _batches(topics):
        futures.update(admin.describe_topics(TopicCollection(batch), request_timeout=timeout))
    ids = {}
    for name, future in futures.items():
        try:
            ids[name] = str(future.result(timeout=timeout + 5).topic_id)
        except KafkaException:
            continue
    return ids


def message_limits(admin: AdminClient, topics: list[str]) -> dict[str, int]:
    """Each topic's ``max.message.bytes`` (the broker's default where the topic sets none)."""
    if not topics:
        return {}
    limits = {}
    for resource, future in describe_topic_configs(admin, topics).items():
        try:
            entry = future.result(timeout=DESCRIBE_TIMEOUT_S + ANSWER_GRACE_S).get("max.message.bytes")
        except (KafkaException, TimeoutError):
            continue  # unknown for now: records go to the target, which decides
        if entry is not None and entry.value and entry.value.isdigit():
            limits[resource.name] = int(entry.value)
    return limits
