"""Small, connection-per-call admin helpers over confluent-kafka's AdminClient."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient

from replicator.errors import ClusterError


@dataclass(frozen=True, slots=True)
class ClusterMetadata:
    """What a metadata request tells about a cluster."""

    cluster_id: str | None
    brokers: int
    topics: tuple[str, ...]


def admin_client(bootstrap_or_properties: str | Mapping[str, object]) -> AdminClient:
    """An AdminClient for ``host:port`` or a full librdkafka property mapping (callbacks included)."""
    if isinstance(bootstrap_or_properties, str):
        properties: dict[str, object] = {"bootstrap.servers": bootstrap_or_properties}
    else:
        properties = dict(bootstrap_or_properties)
    # Quiet: an unreachable broker is reported by us, once, not logged every second.
    properties.setdefault("log_level", "0")
    # confluent-kafka types AdminClient's config as scalars only, yet librdkafka takes callbacks
    # there too (error_cb, below); its Producer and Consumer are typed Dict[str, Any].
    return AdminClient(properties)  # type: ignore[arg-type]


def cluster_metadata(
    bootstrap_or_properties: str | Mapping[str, str], timeout: float = 5.0
) -> ClusterMetadata:
    """Ask the cluster for its metadata; ClusterError when it does not answer in time."""
    if isinstance(bootstrap_or_properties, str):
        bootstrap_or_properties = {"bootstrap.servers": bootstrap_or_properties}
    refusals: list[KafkaError] = []  # why the connection failed, when the broker said so

    def on_error(error: KafkaError) -> None:
        if error.code() in (KafkaError._AUTHENTICATION, KafkaError._SSL) or error.fatal():
            refusals.append(error)

    client = admin_client({**bootstrap_or_properties, "error_cb": on_error})
    deadline = time.monotonic() + timeout
    while True:  # in short steps: a refused login is reported at once, not after the timeout
        try:
            meta = client.list_topics(timeout=max(0.1, min(1.0, deadline - time.monotonic())))
            break
        except KafkaException as exc:
            error = exc.args[0]
            client.poll(0)  # serve the error callbacks
            if refusals:
                raise ClusterError(_refusal(refusals[0]), retriable=False) from None
            if time.monotonic() >= deadline:
                raise ClusterError(f"cluster did not answer a metadata request: {error.str()}",
                                   retriable=True) from None  # down or cut off: it may answer later
    topics = tuple(sorted(name for name in meta.topics if not name.startswith("__")))
    return ClusterMetadata(cluster_id=meta.cluster_id, brokers=len(meta.brokers), topics=topics)


def _refusal(error: KafkaError) -> str:
    """What the client said about a refused connection (librdkafka never includes passwords)."""
    if error.code() == KafkaError._AUTHENTICATION:
        return f"authentication failed (check sasl.username / sasl.password / sasl.mechanism): {error.str()}"
    if error.code() == KafkaError._SSL:
        return f"TLS handshake failed (check ssl.* and security.protocol): {error.str()}"
    return error.str()


def create_topics(
    bootstrap_or_properties: str | Mapping[str, str] | AdminClient,
    partitions: Mapping[str, int],
    config: Mapping[str, str] | None = None,
    timeout: float = 15.0,
) -> list[str]:
    """Create the topics that do not exist yet; "already exists" is success.

    ``bootstrap_or_properties``: where to connect, or an admin client to use. Returns the
    names actually created. Per-topic failures are collected and raised together, naming
    each topic.
    """
    from confluent_kafka import KafkaError
    from confluent_kafka.admin import NewTopic

    client = (admin_client(bootstrap_or_properties) if isinstance(bootstrap_or_properties, str | Mapping)
              else bootstrap_or_properties)  # a client already made (by a ClientFactory, say)
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


def error_text(exc: BaseException) -> str:
    """``NAME: message`` of a Kafka error (its code name kept), or the exception's own text."""
    error = exc.args[0] if isinstance(exc, KafkaException) and exc.args else None
    if error is not None and hasattr(error, "name"):
        return f"{error.name()}: {error.str()}"
    return str(exc) or type(exc).__name__


def error_name(exc: BaseException) -> str | None:
    """The Kafka error code name (``TOPIC_ALREADY_EXISTS``) of ``exc``, None for other errors."""
    error = exc.args[0] if isinstance(exc, KafkaException) and exc.args else None
    return error.name() if error is not None and hasattr(error, "name") else None
