"""An AdminClient of a FakeCluster: the calls the worker's subscription makes."""

from __future__ import annotations

import functools
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, TypeVar

from confluent_kafka import OFFSET_INVALID, IsolationLevel, KafkaError, KafkaException, TopicCollection, TopicPartition
from confluent_kafka.admin import ConfigResource, ConfigSource, NewPartitions, NewTopic, OffsetSpec

from replicator.kafka.log_ranges import EARLIEST
from replicator.testing.cluster import FakeCluster
from replicator.testing.login import FakeLogin
from replicator.testing.process import FakeProcess

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class PartitionMeta:
    """A partition of ``list_topics``."""

    leader: int
    replicas: list[int] = field(default_factory=lambda: [1])


@dataclass(frozen=True, slots=True)
class TopicMeta:
    """A topic of ``list_topics``."""

    partitions: dict[int, PartitionMeta]
    error: None = None


@dataclass(frozen=True, slots=True)
class Metadata:
    """What ``list_topics`` returns."""

    cluster_id: str
    topics: dict[str, TopicMeta]
    brokers: dict[int, str] = field(default_factory=lambda: {1: "fake"})  # node id -> its address


@dataclass(frozen=True, slots=True)
class Description:
    """What ``describe_topics`` resolves to."""

    name: str
    topic_id: str


@dataclass(frozen=True, slots=True)
class ConfigEntry:
    """One entry of ``describe_configs``: a broker default, or an override set on the topic."""

    value: str
    is_default: bool = False
    is_sensitive: bool = False

    @property
    def source(self) -> int:
        """Where the value comes from, as confluent-kafka's ``ConfigEntry.source`` says it."""
        return int((ConfigSource.DEFAULT_CONFIG if self.is_default else ConfigSource.DYNAMIC_TOPIC_CONFIG).value)


@dataclass(frozen=True, slots=True)
class ListedOffset:
    """What ``list_offsets`` resolves to (``ListOffsetsResultInfo``)."""

    offset: int


def _settled(work: Callable[[], T]) -> Future[T]:
    future: Future[T] = Future()
    try:
        future.set_result(work())
    except KafkaException as exc:
        future.set_exception(exc)
    return future


def _raise(error: KafkaException) -> None:
    raise error


class FakeAdmin(FakeLogin):
    """list/describe/create topics and describe configs, answered at once (or timed out when frozen)."""

    def __init__(self, settings: dict[str, Any], cluster: FakeCluster, process: FakeProcess | None = None) -> None:
        self.cluster = cluster
        self._remember_login(settings)
        self.process = process or FakeProcess("admin")
        # No answer from its cluster any more, though the cluster answers other clients (seen in CI: a worker's
        # look failed for 90 s after two source restarts while the other worker's looked on).
        self.deaf = False
        # The leader epochs this client's metadata holds: learnt at a partition's first request, renewed only by
        # list_topics. librdkafka's ListOffsets sends the epoch it holds and, answered FENCED_LEADER_EPOCH after a
        # leader moved or restarted, fails the partition without renewing it (seen on Kafka 4.1, librdkafka 2.16).
        self._epochs: dict[tuple[str, int], int] = {}
        # The leader this client's metadata names, learnt and renewed as the epochs are. librdkafka sends a
        # partition's ListOffsets to it: a dead node never answers, and the request times out into an answer
        # with no error and no offset, at every request until the metadata is renewed (a probe on Kafka 4.1: 60 s
        # after the new leader was elected; one list_topics, answered at once).
        self._leaders: dict[tuple[str, int], int] = {}

    def _check(self, request: str = "") -> None:
        if self.deaf:
            raise KafkaException(KafkaError(KafkaError._TRANSPORT, "Failed to get metadata: Local: Broker transport "
                                            "failure"))
        self.cluster.check_reachable(request, self.process)

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> Metadata:
        """Every topic and its partitions."""
        self._check("list_topics")
        with self.cluster.lock:
            nodes = sorted(self.cluster.nodes())
            topics = {name: TopicMeta({p: PartitionMeta(self.cluster.leader(name, p), nodes)
                                       for p in range(len(t.logs))})
                      for name, t in self.cluster.topics.items() if topic is None or name == topic}
            self._epochs.update({(name, p): self.cluster.leader_epochs.get((name, p), 0)
                                 for name, meta in topics.items() for p in meta.partitions})
            self._leaders.update({(name, p): part.leader for name, meta in topics.items()
                                  for p, part in meta.partitions.items()})
        return Metadata(self.cluster.cluster_id, topics,
                        {node: f"fake-{node}:9092" for node in nodes if node not in self.cluster.dead})

    def describe_topics(self, topics: TopicCollection, request_timeout: float = -1) -> dict[str, Future[Description]]:
        """Each topic's id."""
        def describe(name: str) -> Description:
            self._check()
            self.cluster.log(name, 0)  # UNKNOWN_TOPIC_OR_PART for a missing topic
            return Description(name, self.cluster.stale_ids.get(name) or self.cluster.topics[name].topic_id)
        return {name: _settled(functools.partial(describe, name)) for name in topics.topic_names}

    def create_topics(self, new_topics: list[NewTopic], request_timeout: float = -1) -> dict[str, Future[None]]:
        """Create each topic (TOPIC_ALREADY_EXISTS per existing one); a request of more partitions in all than
        the cluster takes (Kafka's controller: 10,000) is refused whole, each topic's future failing so."""
        if sum(t.num_partitions for t in new_topics) > self.cluster.partitions_per_request:
            refused = KafkaException(KafkaError(KafkaError.POLICY_VIOLATION,
                                                "Excessively large number of partitions per request."))
            return {t.topic: _settled(functools.partial(_raise, refused)) for t in new_topics}

        def create(topic: NewTopic) -> None:
            self._check()
            self.cluster.create_topic(topic.topic, topic.num_partitions, dict(topic.config or {}))
        return {t.topic: _settled(functools.partial(create, t)) for t in new_topics}

    def create_partitions(self, new_partitions: list[NewPartitions],
                          request_timeout: float = -1) -> dict[str, Future[None]]:
        """Grow each topic, in order; as Kafka's controller, once the partitions added by the request pass the
        cluster's bound (10,000: its records per operation) each topic after that fails, the earlier ones grown."""
        added = 0

        def grow(spec: NewPartitions) -> None:
            nonlocal added
            self._check()
            with self.cluster.lock:
                found = self.cluster.topics.get(spec.topic)
                more = spec.new_total_count - len(found.logs) if found else 0
            if more > 0 and added + more > self.cluster.partitions_per_request:
                raise KafkaException(KafkaError(KafkaError.UNKNOWN, "The server experienced an unexpected error "
                                                                    "when processing the request."))
            self.cluster.add_partitions(spec.topic, spec.new_total_count)
            added += max(more, 0)
        return {p.topic: _settled(functools.partial(grow, p)) for p in new_partitions}

    def describe_configs(self, resources: list[ConfigResource],
                         request_timeout: float = -1) -> dict[ConfigResource, Future[dict[str, ConfigEntry]]]:
        """The topic configs set on each topic (others are broker defaults); a broker's: its settings the worker
        reads."""
        def describe(resource: ConfigResource) -> dict[str, ConfigEntry]:
            self._check()
            if resource.restype == ConfigResource.Type.BROKER:
                return {"producer.id.expiration.ms": ConfigEntry(str(self.cluster.producer_memory_ms), True)}
            self.cluster.log(resource.name, 0)
            configs = self.cluster.topics[resource.name].configs
            return {"max.message.bytes": ConfigEntry("1048588", True),
                    **{k: ConfigEntry(v) for k, v in configs.items()}}
        return {r: _settled(functools.partial(describe, r)) for r in resources}

    def list_offsets(self, topic_partition_offsets: dict[TopicPartition, OffsetSpec],
                     isolation_level: IsolationLevel = IsolationLevel.READ_UNCOMMITTED,
                     request_timeout: float = -1) -> dict[TopicPartition, Future[ListedOffset]]:
        """Each partition's log start (``OffsetSpec.earliest()``) or end (``latest()``: under
        ``READ_COMMITTED``, its last stable offset): one request for all."""
        self._check("list_offsets")

        def listed(tp: TopicPartition, spec: OffsetSpec) -> ListedOffset:
            key = (tp.topic, tp.partition)
            if self._leaders.setdefault(key, self.cluster.leader(*key)) in self.cluster.dead:
                return ListedOffset(OFFSET_INVALID)  # seen on real brokers: no error, no offset
            epoch = self.cluster.leader_epochs.get(key, 0)
            if self._epochs.setdefault(key, epoch) < epoch:
                raise KafkaException(KafkaError(KafkaError.FENCED_LEADER_EPOCH,
                                                "Broker: Leader epoch is older than broker epoch"))
            if self.cluster.out_of_reach(*key):  # black-holed: the same answer
                return ListedOffset(OFFSET_INVALID)
            low, high = self.cluster.watermarks(tp.topic, tp.partition)
            if spec != EARLIEST and isolation_level == IsolationLevel.READ_COMMITTED:
                high = self.cluster.log(tp.topic, tp.partition).stable_end
            return ListedOffset(low if spec == EARLIEST else high)
        return {tp: _settled(functools.partial(listed, tp, spec)) for tp, spec in topic_partition_offsets.items()}
