"""An in-memory Kafka cluster: topics of partition logs, consumer groups, a freeze switch."""

from __future__ import annotations

import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field

from confluent_kafka import KafkaError, KafkaException

from replicator.domain.request_batches import BROKER_PARTITIONS_PER_REQUEST
from replicator.testing.group import FakeGroup
from replicator.testing.process import FakeProcess
from replicator.testing.transactions import Coordinator

TP = tuple[str, int]


@dataclass(frozen=True, slots=True)
class FakeRecord:
    """A record as a partition log holds it; a transaction's marker is one too (``control``, no data)."""

    offset: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]
    timestamp: int
    txn: int | None = None  # the number of the transaction that wrote it
    control: bool = False  # a commit or abort marker: no consumer ever gets it


@dataclass(slots=True)
class FakeLog:
    """One partition: records from ``start`` (the log start offset) to ``end``."""

    records: list[FakeRecord] = field(default_factory=list)
    start: int = 0
    end: int = 0
    open_txns: dict[int, int] = field(default_factory=dict)  # open transaction -> its first offset here

    @property
    def stable_end(self) -> int:
        """The last stable offset: a ``read_committed`` reader gets nothing from an open transaction's
        first record on."""
        return min(self.open_txns.values(), default=self.end)

    def read(self, offset: int, limit: int) -> list[FakeRecord]:
        """Up to ``limit`` records from ``offset`` on (which must be within the log)."""
        first = self.records[0].offset if self.records else self.end
        index = max(0, offset - first)
        return self.records[index:index + limit]


@dataclass(slots=True)
class FakeTopic:
    """A topic: its id, partition logs and configs."""

    logs: list[FakeLog]
    configs: dict[str, str]
    topic_id: str = field(default_factory=lambda: str(uuid.uuid4()))


class FakeCluster:
    """Topics and groups of one cluster. ``freeze()`` makes it a SIGSTOPped broker."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.cluster_id = f"fake-{name}"
        self.topics: dict[str, FakeTopic] = {}
        # Topics created again that the brokers still describe by the deleted one's id, for a moment (topic -> id).
        self.stale_ids: dict[str, str] = {}
        self.groups: dict[str, FakeGroup] = {}
        self.lock = threading.RLock()
        self.transactions = Coordinator(self)
        self.frozen = False
        self.thaws = 0  # times thawed: a consumer's first fetch after one comes before the group's word
        # A consumer cut off from the cluster (or meeting it frozen) loses its group coordinator, and finds it again
        # this long after the cluster answers it again: librdkafka reconnects, then asks for the coordinator again.
        # Until then it gets no word of its group, its ``committed`` times out, and its close sends no leave (the
        # group keeps the member until its session expires: ``FakeKafka.expire``).
        self.coordinator_refind_s = 0.0
        # A slow broker: at most this many delivery reports per producer poll (None: all).
        self.deliveries_per_poll: int | None = None
        # Deliveries to report without an offset, as librdkafka does for a retried request the broker had
        # already written (DUPLICATE_SEQUENCE_NUMBER after a frozen broker thaws).
        self.offsetless_deliveries = 0
        # Per topic, deliveries to report without an offset that the broker never wrote: a new partition, on which
        # the broker has no state of the producer, took a later batch's sequence as its first, and the retry of
        # the earlier batch then looked like a duplicate (the long form of seed 381 lost the record at a new
        # partition's offset 0 so).
        self.offsetless_unwritten: Counter[str] = Counter()
        # Topics whose partitions race a new producer's first batches: when a producer's first record of a
        # partition is delivered with more of that partition queued behind it, its batch failed (a partition
        # just created, a leader moving) and the next was written first, as the broker takes any sequence
        # number as the first of a producer it knows nothing of; the retried first batch is then acknowledged
        # without an offset as a duplicate, never written (the long form of seed 381; confluent-kafka-go#921).
        self.first_batch_race: set[str] = set()
        # Topics where the same race is run batch by batch (a producer's records of a partition queued between two
        # of its polls are a batch), and the brokers forget a producer at once on a partition whose records written
        # are older than ``producer_memory_ms`` (as at their next look): a batch of fewer than five records is
        # overtaken by a later one queued behind it whenever they hold no state of the producer there.
        self.batch_race: set[str] = set()
        self.producers_forgotten = 0  # how often the brokers dropped every producer's state: ``forget_producers``
        self.producer_memory_ms = 86_400_000  # the brokers' producer.id.expiration.ms, as describe_configs says
        # (topic, partition) missing from the producers' metadata for a while: produce() refuses new records
        # for it and the queued ones fail with ``hidden_error``, unwritten (as librdkafka does: "Local: Unknown
        # partition", _DESTROY when the topic was deleted and its queued records purged, or the broker's
        # UNKNOWN_TOPIC_OR_PART when the topic's metadata did not come within topic.metadata.propagation.max.ms)
        self.hidden_partitions: set[tuple[str, int]] = set()
        self.hidden_error = KafkaError._UNKNOWN_PARTITION
        # The node leading each partition (1 unless set here), as metadata names it. Nodes in ``cut_off`` are
        # out of the producers' reach while the cluster sees them healthy (black-holed for the worker): records
        # of the partitions they lead stay queued, counted in the queue, and the records of every other partition
        # are written and reported around them (librdkafka queues per partition); metadata still answers.
        self.leaders: dict[tuple[str, int], int] = {}
        self.cut_off: set[int] = set()
        # Nodes killed (``kill_node``): gone from the cluster's metadata, their partitions led by another node.
        self.dead: set[int] = set()
        # Each partition's leader epoch (0 unless raised by ``elect``: a leader moved, or its node restarted).
        self.leader_epochs: dict[tuple[str, int], int] = {}
        # Producers whose commit never completes, counted down as producers begin committing: librdkafka answers
        # the first commit_transaction "retry call to resume" and every later one "Conflicting commit_transaction
        # API call is already in progress", both retriable, for as long as that producer lives (seen after a
        # target restart: 6.5 minutes, until the worker's partitions moved).
        self.stuck_commits = 0
        # librdkafka #5456/#5511: once a transactional producer lost the cluster (it reported all brokers down)
        # and found it again, its send_offsets_to_transaction may never return. True: it never does; the calls
        # that would have hung are counted in ``hung_offsets`` (and block for good: a worker gives them up).
        self.offsets_hang_after_outage = False
        self.hung_offsets = 0
        # The node holding a producer's transaction coordinator died (one of several: librdkafka reports no error
        # for it): the next this many transactional calls fail with a retriable "Broker transport failure" naming
        # TxnCoordinator, and the producer counts as one that lost the cluster (``offsets_hang_after_outage``).
        self.coordinator_moves = 0
        # The brokers' offset.metadata.max.bytes: a committed offset's metadata longer than this is refused.
        self.offset_metadata_max_bytes = 4096
        # Partitions one CreateTopics request may carry in all (Kafka's controller refuses more than 10,000).
        self.partitions_per_request = BROKER_PARTITIONS_PER_REQUEST
        # Requests to time out before answering again, by name ("committed", "list_topics", ...).
        self.failures: dict[str, int] = {}
        # Requests held until their gate opens, by name (a broker slow to answer: the metadata of thousands of
        # topics over a slow link); ``waiting`` counts the calls held now.
        self.gates: dict[str, threading.Event] = {}
        self.waiting: Counter[str] = Counter()
        self.answered: Counter[str] = Counter()  # requests answered, by name

    @property
    def bootstrap_servers(self) -> str:
        """What a client config names to reach this cluster."""
        return f"{self.name}.fake:9092"

    def leader(self, topic: str, partition: int) -> int:
        """The node leading ``topic[partition]``."""
        return self.leaders.get((topic, partition), 1)

    def elect(self, topic: str, partition: int, node: int | None = None) -> None:
        """A new leader of ``topic[partition]`` (``node``, or the same node after its restart): a new leader
        epoch, which clients that cached the old one learn only from new metadata."""
        with self.lock:
            if node is not None:
                self.leaders[(topic, partition)] = node
            self.leader_epochs[(topic, partition)] = self.leader_epochs.get((topic, partition), 0) + 1

    def kill_node(self, node: int, successor: int) -> None:
        """Node ``node`` dies and the cluster elects ``successor`` leader of each partition it led (every
        partition has a copy on every node). Clients that cached the old leader send it their requests until
        they renew their metadata."""
        with self.lock:
            self.dead.add(node)
            for key in [key for key, leader in self.leaders.items() if leader == node]:
                self.leaders[key] = successor
                self.leader_epochs[key] = self.leader_epochs.get(key, 0) + 1

    def nodes(self) -> set[int]:
        """Every node the cluster has had (node 1, the leaders named, the dead)."""
        return {1, *self.leaders.values(), *self.dead}

    def out_of_reach(self, topic: str, partition: int) -> bool:
        """Whether the leader of ``topic[partition]`` is cut off from the producers."""
        return bool(self.cut_off) and self.leader(topic, partition) in self.cut_off

    def freeze(self) -> None:
        """Stop answering: nothing is delivered, fetched or answered until ``thaw``."""
        self.frozen = True

    def thaw(self) -> None:
        """Answer again."""
        self.frozen = False
        self.thaws += 1

    def forget_producers(self) -> None:
        """The brokers drop every producer's state (``producer.id.expiration.ms`` passed since the timestamps of
        its last records): a producer's next record of a partition is its first there again."""
        self.producers_forgotten += 1

    def check_reachable(self, request: str = "", process: FakeProcess | None = None) -> None:
        """Raise what librdkafka raises for a request that timed out: when frozen, cut off from
        ``process``, or while ``failures[request]`` says so."""
        if self.frozen or (process is not None and not process.reaches(self.name)):
            time.sleep(0.01)
            raise KafkaException(KafkaError(KafkaError._TIMED_OUT, "fake broker frozen"))
        with self.lock:
            if self.failures.get(request, 0) > 0:
                self.failures[request] -= 1
                raise KafkaException(KafkaError(KafkaError._TIMED_OUT, f"fake {request} timed out"))
            name = f"{request}@{process.name}" if process is not None else request
            if name not in self.gates:
                name = request
            gate = self.gates.get(name)
            if gate is not None:
                self.waiting[name] += 1
            self.answered[request] += 1
        if gate is not None:
            gate.wait()
            with self.lock:
                self.waiting[name] -= 1

    # -- topics ------------------------------------------------------------------

    def create_topic(self, name: str, partitions: int = 1, configs: dict[str, str] | None = None) -> None:
        """Create ``name``; TOPIC_ALREADY_EXISTS when it does."""
        with self.lock:
            if name in self.topics:
                raise KafkaException(KafkaError(KafkaError.TOPIC_ALREADY_EXISTS, f"{name} exists"))
            self.topics[name] = FakeTopic([FakeLog() for _ in range(partitions)], dict(configs or {}))

    def add_partitions(self, name: str, total: int) -> None:
        """Grow ``name`` to ``total`` partitions."""
        with self.lock:
            logs = self.topics[name].logs
            if total <= len(logs):
                raise KafkaException(KafkaError(KafkaError.INVALID_PARTITIONS, f"{name} has {len(logs)}"))
            logs.extend(FakeLog() for _ in range(total - len(logs)))

    def delete_topic(self, name: str) -> None:
        """Delete ``name`` and its records."""
        with self.lock:
            del self.topics[name]

    def log(self, topic: str, partition: int) -> FakeLog:
        """The log of one partition; UNKNOWN_TOPIC_OR_PART when there is none."""
        found = self.topics.get(topic)
        if found is None or not 0 <= partition < len(found.logs):
            raise KafkaException(KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART, f"{topic}[{partition}]"))
        return found.logs[partition]

    def append(self, topic: str, partition: int, key: bytes | None, value: bytes | None,
               headers: list[tuple[str, bytes | None]] | None = None, timestamp: int = 0,
               txn: int | None = None) -> int:
        """Write a record (of transaction number ``txn``, if any); returns its offset."""
        with self.lock:
            log = self.log(topic, partition)
            offset = log.end
            log.records.append(FakeRecord(offset, key, value, tuple(headers or ()),
                                          timestamp or int(time.time() * 1000), txn))
            log.end += 1
            if txn is not None:
                log.open_txns.setdefault(txn, offset)
            return offset

    def append_marker(self, topic: str, partition: int, txn: int) -> None:
        """End transaction ``txn`` in one partition: a marker takes the next offset."""
        with self.lock:
            log = self.log(topic, partition)
            log.records.append(FakeRecord(log.end, None, None, (), int(time.time() * 1000), txn, control=True))
            log.end += 1
            log.open_txns.pop(txn, None)

    def records(self, topic: str, partition: int) -> list[FakeRecord]:
        """Every record of one partition still held, in offset order, as a ``read_uncommitted`` reader sees
        them: aborted and open transactions' records included, markers left out."""
        with self.lock:
            return [r for r in self.log(topic, partition).records if not r.control]

    def watermarks(self, topic: str, partition: int) -> tuple[int, int]:
        """(log start, log end) of one partition."""
        with self.lock:
            log = self.log(topic, partition)
            return log.start, log.end

    def delete_records(self, topic: str, partition: int, before: int) -> None:
        """Move the log start to ``before`` (what retention does)."""
        with self.lock:
            log = self.log(topic, partition)
            log.records = [r for r in log.records if r.offset >= before]
            log.start = max(log.start, before)

    def group(self, group_id: str) -> FakeGroup:
        """The consumer group ``group_id`` (created empty on first use)."""
        with self.lock:
            if group_id not in self.groups:
                self.groups[group_id] = FakeGroup(self, group_id)
            return self.groups[group_id]

    def partitions_of(self, topics: list[str]) -> list[TP]:
        """Every partition of the existing ``topics``, sorted."""
        with self.lock:
            return sorted((t, p) for t in topics if t in self.topics for p in range(len(self.topics[t].logs)))
