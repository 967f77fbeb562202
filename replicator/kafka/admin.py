"""Small, connection-per-call admin helpers over confluent-kafka's AdminClient."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient
from confluent_kafka.admin import ClusterMetadata as Answer

from replicator.errors import ClusterError
from replicator.kafka import tls_probe
from replicator.kafka.refusal import certificate_hint, refusal, speaks_tls_hint

# A wait for an admin request's future outlasts the request's own timeout by this much: one as long as the request
# could run out before librdkafka failed the request, and its bare TimeoutError escaped handlers that catch
# KafkaException (a worker starting during a source restart died of it, in create_topics).
ANSWER_GRACE_S = 5.0


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
    bootstrap_or_properties: str | Mapping[str, str], timeout: float = 5.0, explain: bool = True
) -> ClusterMetadata:
    """Ask the cluster for its metadata; ClusterError when it does not answer in time (``retriable``) or
    refuses us (not retriable: a password, a certificate, a protocol that does not match its listener).
    ``explain=False``: no TLS handshake of our own to say why a plaintext client got no answer (a broker
    that is starting, polled every second)."""
    meta = connect(bootstrap_or_properties, timeout, explain)[1]
    topics = tuple(sorted(name for name in meta.topics if not name.startswith("__")))
    return ClusterMetadata(cluster_id=meta.cluster_id, brokers=len(meta.brokers), topics=topics)


def connected_admin(properties: Mapping[str, object], timeout: float = 5.0) -> AdminClient:
    """An AdminClient that got the cluster's metadata: what a command makes before its first request, so that a
    cluster refusing us is named (``cluster_metadata``'s errors) instead of failing the first request vaguely."""
    return connect(properties, timeout)[0]


def connect(bootstrap_or_properties: str | Mapping[str, object], timeout: float = 5.0,
            explain: bool = True) -> tuple[AdminClient, Answer]:
    """The connected AdminClient and the metadata it got, as confluent-kafka gives it (``cluster_metadata``'s
    errors)."""
    properties = ({"bootstrap.servers": bootstrap_or_properties} if isinstance(bootstrap_or_properties, str)
                  else dict(bootstrap_or_properties))
    refusals: list[KafkaError] = []  # why the connection failed, when the broker said so

    def on_error(error: KafkaError) -> None:
        if not refusals and refusal(error) is not None:  # the first says why; the client may live on
            refusals.append(error)

    try:
        client = admin_client({**properties, "error_cb": on_error})
    except KafkaException as exc:  # a setting librdkafka refuses to start with (a file it cannot load)
        raise ClusterError(f"client settings refused: {exc.args[0].str()}", retriable=False) from None
    settings = {k: str(v) for k, v in properties.items() if isinstance(v, str | int | float | bool)}
    deadline = time.monotonic() + timeout
    while True:  # in short steps: a refused login is reported at once, not after the timeout
        try:
            meta = client.list_topics(timeout=max(0.1, min(1.0, deadline - time.monotonic())))
            break
        except KafkaException as exc:
            error = exc.args[0]
            client.poll(0)  # serve the error callbacks
            if refusals:
                raise ClusterError(_explained(refusals[0], settings), retriable=False) from None
            if time.monotonic() >= deadline:
                if explain:
                    _raise_if_tls_listener(settings)
                raise ClusterError(f"cluster did not answer a metadata request: {error.str()}",
                                   retriable=True) from None  # down or cut off: it may answer later
    return client, meta


def _explained(error: KafkaError, properties: Mapping[str, str]) -> str:
    """The refusal in one line; a broker certificate that failed verification is looked at (expired, another
    host's, an unknown CA) with one handshake of our own, as librdkafka does not say which."""
    if error.code() == KafkaError._SSL and "certificate verify failed" in error.str():
        seen = tls_probe.probe(properties["bootstrap.servers"], properties)
        if seen.problem is not None:
            return f"TLS: {certificate_hint(seen.problem)} ({seen.address})"
    return refusal(error) or error.str()


def _raise_if_tls_listener(properties: Mapping[str, str]) -> None:
    """A plaintext client gets no answer at all from a TLS listener: when the listener answers a TLS handshake,
    that is the cause, and final."""
    protocol = properties.get("security.protocol", "PLAINTEXT")
    if protocol.upper() not in ("PLAINTEXT", "SASL_PLAINTEXT"):
        return
    seen = tls_probe.probe(properties["bootstrap.servers"], properties, verify=False)
    if seen.tls:
        raise ClusterError(speaks_tls_hint(protocol, seen.address), retriable=False)


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
    created, problems, unanswered = [], [], False
    for name, future in client.create_topics(wanted, request_timeout=timeout).items():
        try:
            future.result(timeout=timeout + ANSWER_GRACE_S)
            created.append(name)
        except KafkaException as exc:
            error = exc.args[0]
            if error.code() != KafkaError.TOPIC_ALREADY_EXISTS:
                problems.append(f"topic {name}: {error.str()}")
        except TimeoutError:
            unanswered = True
            problems.append(f"topic {name}: no answer in {timeout + ANSWER_GRACE_S:.0f} s")
    if problems:
        raise ClusterError("; ".join(problems), retriable=unanswered)
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
