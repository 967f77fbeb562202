"""Small, connection-per-call admin helpers over confluent-kafka's AdminClient."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from replicator.errors import ClusterError


@dataclass(frozen=True, slots=True)
class ClusterMetadata:
    """What a metadata request tells about a cluster."""

    cluster_id: str | None
    brokers: int
    topics: tuple[str, ...]


def admin_client(bootstrap_or_properties: str | Mapping[str, str]) -> AdminClient:
    """An AdminClient for ``host:port`` or a full librdkafka property mapping."""
    if isinstance(bootstrap_or_properties, str):
        properties: dict[str, str] = {"bootstrap.servers": bootstrap_or_properties}
    else:
        properties = dict(bootstrap_or_properties)
    # Quiet: an unreachable broker is reported by us, once, not logged every second.
    properties.setdefault("log_level", "0")
    return AdminClient(properties)


def cluster_metadata(
    bootstrap_or_properties: str | Mapping[str, str], timeout: float = 5.0
) -> ClusterMetadata:
    """Ask the cluster for its metadata; ClusterError when it does not answer in time."""
    client = admin_client(bootstrap_or_properties)
    try:
        meta = client.list_topics(timeout=timeout)
    except KafkaException as exc:
        error = exc.args[0]
        raise ClusterError(
            f"cluster did not answer a metadata request: {error.str()}",
            retriable=error.retriable(),
        ) from exc
    topics = tuple(sorted(name for name in meta.topics if not name.startswith("__")))
    return ClusterMetadata(cluster_id=meta.cluster_id, brokers=len(meta.brokers), topics=topics)


def create_topics(
    bootstrap_or_properties: str | Mapping[str, str],
    partitions: Mapping[str, int],
    config: Mapping[str, str] | None = None,
    timeout: float = 15.0,
) -> list[str]:
    """Create the topics that do not exist yet; "already exists" is success.

    Returns the names actually created. Per-topic failures are collected and
    raised together, naming each topic.
    """
    from confluent_kafka import KafkaError
    from confluent_kafka.admin import NewTopic

    client = admin_client(bootstrap_or_properties)
    wanted = [
        NewTopic(name, num_partitions=count, replication_factor=-1, config=dict(config or {}))
        for name, count in partitions.items()
    ]
    if not wanted:
        return []
    created, problems = [], []
    for name, future in client.create_topics(wanted, request_timeout=timeout).items():
        try:
            future.result(timeout=timeout)
            created.append(name)
        except KafkaException as exc:
            error = exc.args[0]
            if error.code() != KafkaError.TOPIC_ALREADY_EXISTS:
                problems.append(f"topic {name}: {error.str()}")
    if problems:
        raise ClusterError("; ".join(problems))
    return sorted(created)
