"""librdkafka settings of a route's consumer, producer and admin clients (the one place)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka.admin import AdminClient

from replicator.config import Config, RouteConfig
from replicator.domain.client_rules import CONSUMER_FIXED, PRODUCER_FIXED
from replicator.domain.commit_pace import INTERVAL_KEY, interval_of
from replicator.domain.naming import group_id, positions_group_id
from replicator.domain.withheld import GroupSays
from replicator.errors import ConfigError
from replicator.kafka.group_members import member_assignment

# A broker back from a restart is found within a second: librdkafka's reconnect backoff doubles up to 10 s by
# default, so after a restart of a few seconds the route's clients waited up to 10 s more before trying again
# (the fault harness: flow 10.5 s after a 6 s target restart, the clients reconnected exactly 10 s after the
# broker was back). Java's clients (MirrorMaker 2) use 1 s too.
LINK_DEFAULTS = {"reconnect.backoff.max.ms": "1000"}

# Settings that carry the no-loss guarantee: see replicator.domain.client_rules (a config cannot change them).
CONSUMER_DEFAULTS = {
    **LINK_DEFAULTS,
    # How often the worker commits the offsets it stored (itself: see replicator.domain.commit_pace), the
    # window of duplicates after a crash. librdkafka's auto-commit is off; this is its name for the same wish.
    "auto.commit.interval.ms": "250",
    "fetch.min.bytes": "1",
    "fetch.wait.max.ms": "500",
    "queued.max.messages.kbytes": "65536",
    # Fairness (bench/fairness.py): librdkafka pauses a partition's fetching for fetch.queue.backoff.ms
    # (1 s by default) once its prefetch queue holds queued.min.messages (100,000). While one topic's
    # backlog drained, the others' new records waited ~1.2 s (p99) and the drain itself went at half
    # speed; with these two, p99 0.39 s and the drain twice as fast.
    "queued.min.messages": "10000",
    "fetch.queue.backoff.ms": "20",
    # Fairness again: librdkafka's prefetch is one queue for all partitions, in the order fetched, and each
    # fetch answer brings up to this much of every busy partition; a small topic's record waits behind it.
    # Half librdkafka's 1 MiB: the others' p99 during a drain 0.75-0.98 s instead of 1.1-1.9 s (6 and 11
    # runs, 2026-11-30), the drain 7 % slower (median; the ranges overlap). Read over a long link, a topic of
    # few partitions carries less per round trip: docs/operations.md, "A long link to the target".
    "max.partition.fetch.bytes": str(512 * 1024),
}
PRODUCER_DEFAULTS = {
    **LINK_DEFAULTS,
    # Latency (bench/latency.py): at 2,000 records/s the copy added 6 ms (p50) over a plain consumer of the
    # source, 5 of them this wait; with 1 it adds 2 ms and copies as fast (bench/replication_bench.py). 0
    # sent a request per record and slowed the whole machine (p99 of every reader up).
    "linger.ms": "1",
    "batch.size": str(1024 * 1024),
    "compression.type": "lz4",
    "queue.buffering.max.messages": "200000",
    "queue.buffering.max.kbytes": str(256 * 1024),
    # A record as large as a source topic may hold must reach the target, which decides
    # (librdkafka's own 1 MB default would refuse it before it is sent).
    "message.max.bytes": str(100 * 1024 * 1024),
}


# librdkafka's own log lines go through our structured logging, not raw to stderr. It
# logs every failed reconnect; the worker reports link state changes itself (one line
# each), so these are shown only with --log-level debug (see replicator.logs).
LIBRDKAFKA_LOG = logging.getLogger("replicator.librdkafka")



# An exactly-once route's producer: a transaction open longer is aborted by the target's coordinator. A worker
# killed or frozen mid-transaction holds back what read_committed consumers of those partitions see until then
# (plus the coordinator's check, every 10 s by default); a commit normally comes every `transactions.interval_ms`,
# and one held longer by a slow target is aborted and copied again. Kafka Streams' exactly-once uses 10 s too.
TRANSACTIONAL_DEFAULTS = {"transaction.timeout.ms": "10000"}


def consumer_settings(config: Config, route: RouteConfig, worker_id: str | None = None,
                      **callbacks: Callable[..., Any]) -> dict[str, Any]:
    """Consumer of the route's source cluster; a ``worker_id`` makes it a static member. An exactly-once
    route's consumer is no member: the membership consumer on the target gives it its partitions, and it
    commits the source group's offsets itself, once a transaction committed (a copy, for status and lag)."""
    source = config.cluster(route.source)
    exactly_once = route.guarantee == "exactly-once"
    static = {"group.instance.id": worker_id} if worker_id and not exactly_once else {}
    return {
        **CONSUMER_DEFAULTS,
        "client.id": f"mirrorflow-{route.name}-consumer",  # a user's own client.id (quotas) wins
        **source.client_properties(route.consumer),
        **CONSUMER_FIXED,
        "group.id": group_id(route),
        **static,
        "logger": LIBRDKAFKA_LOG,
        **callbacks,
    }


def commit_interval(config: Config, route: RouteConfig) -> float:
    """Seconds between an at-least-once worker's commits of what it stored: the route's consumer
    ``auto.commit.interval.ms`` (250 ms by default)."""
    try:
        return interval_of(consumer_settings(config, route)[INTERVAL_KEY])
    except ValueError as exc:
        raise ConfigError(f"route {route.name}: consumer {INTERVAL_KEY} {exc}") from None


def membership_settings(config: Config, route: RouteConfig, worker_id: str | None = None,
                        **callbacks: Callable[..., Any]) -> dict[str, Any]:
    """An exactly-once worker's member of the route's positions group on the *target*: it is given the
    target partitions (the worker copies their source partitions) and fetches nothing itself."""
    target = config.cluster(route.target)
    static = {"group.instance.id": worker_id} if worker_id else {}
    return {
        **LINK_DEFAULTS,
        "client.id": f"mirrorflow-{route.name}-member",
        **target.client_properties(route.consumer),
        **CONSUMER_FIXED,  # its offsets are committed only inside the route's transactions
        "group.id": positions_group_id(route),
        **static,
        "logger": LIBRDKAFKA_LOG,
        **callbacks,
    }


def transactional_id(route: RouteConfig, worker_id: str) -> str:
    """The transactional id of one worker of an exactly-once route (a restart under the same id aborts what
    the crashed process left open at once; another id leaves it to the target's transaction timeout)."""
    return f"mirrorflow-{route.name}-{worker_id}"


def producer_settings(config: Config, route: RouteConfig, worker_id: str | None = None,
                      **callbacks: Callable[..., Any]) -> dict[str, Any]:
    """Idempotent, acks=all producer of the route's target cluster; transactional on an exactly-once route
    (``worker_id`` names its transactional id)."""
    target = config.cluster(route.target)
    transactional = {}
    if route.guarantee == "exactly-once":
        if worker_id is None:
            raise ValueError(f"route {route.name}: an exactly-once producer needs a worker id")
        transactional = {"transactional.id": transactional_id(route, worker_id)}
    return {
        **PRODUCER_DEFAULTS,
        **(TRANSACTIONAL_DEFAULTS if transactional else {}),
        "client.id": f"mirrorflow-{route.name}-producer",
        **target.client_properties(route.producer),
        **PRODUCER_FIXED,
        **transactional,
        "logger": LIBRDKAFKA_LOG,
        **callbacks,
    }


# librdkafka's idempotent producer keeps at most this many requests in flight per connection, whatever it is set to.
IDEMPOTENT_IN_FLIGHT_MAX = 5


def serial_below(config: Config, route: RouteConfig) -> int:
    """How few records of a partition in flight let the route's idempotent producer send it another batch:
    ``max.in.flight.requests.per.connection`` (librdkafka compares a partition's records in flight with it; 5 at
    most). At 1 it never sends a partition's next batch before the last is acknowledged."""
    settings = producer_settings(config, route)
    value = settings.get("max.in.flight.requests.per.connection", settings.get("max.in.flight"))
    try:
        return min(int(value), IDEMPOTENT_IN_FLIGHT_MAX) if value is not None else IDEMPOTENT_IN_FLIGHT_MAX
    except ValueError:  # librdkafka refuses it when the producer is made, naming the key
        return IDEMPOTENT_IN_FLIGHT_MAX


def admin_settings(properties: Mapping[str, str]) -> dict[str, Any]:
    """An admin client of a cluster, quiet about connection failures (we report them)."""
    return {**properties, "logger": LIBRDKAFKA_LOG}


class LiveConsumer(Consumer):
    """confluent-kafka's Consumer, weakly referable: a worker keeps track of its live clients without keeping
    them alive (``replicator.worker.logins``); librdkafka's own type cannot be referred to weakly."""


class LiveProducer(Producer):
    """confluent-kafka's Producer, weakly referable (see ``LiveConsumer``)."""


@dataclass(frozen=True, slots=True)
class ClientFactory:
    """How a worker makes its clients: confluent-kafka's, or the fakes of ``replicator.testing``. ``checkpoint``
    is where a thread of the worker's own may stand still: nothing in a real process (SIGSTOP stops every thread
    wherever it is); a fake process's frozen threads block there, as they do in any fake client's call. ``cpu``
    is the process's CPU seconds (none used while it stands still; ``stall.LoopWatch``)."""

    consumer: Callable[[dict[str, Any]], Consumer] = LiveConsumer
    producer: Callable[[dict[str, Any]], Producer] = LiveProducer
    admin: Callable[[dict[str, Any]], AdminClient] = AdminClient
    checkpoint: Callable[[], object] = lambda: None
    cpu: Callable[[], float] = time.process_time
    # What a group's coordinator says of one member and the others (None: it does not know the member).
    assignment: Callable[[Mapping[str, str], str, str, str], GroupSays | None] = member_assignment


KAFKA_CLIENTS = ClientFactory()


def close_within(close: Callable[[], object], seconds: float) -> bool:
    """Run a librdkafka client's ``close`` in a thread of its own, waiting at most ``seconds``; False when it did
    not return (a client that stopped getting answers can block in its close for good: left behind, closing)."""
    done = threading.Event()

    def run() -> None:
        try:
            close()
        except (KafkaException, RuntimeError) as exc:  # closed already, or a fatal error left it unusable
            logging.getLogger(__name__).debug("closing a client left behind error=%s", exc)
        finally:
            done.set()

    threading.Thread(target=run, name="close-client", daemon=True).start()
    return done.wait(seconds)
