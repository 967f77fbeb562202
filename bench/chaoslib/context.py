"""What every fault may act on: the run's settings, clusters, proxies, workers, workload and state DB."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from confluent_kafka.admin import AdminClient, NewTopic

from bench.chaoslib.cluster import CLUSTER_NAMES, ProxiedCluster
from bench.chaoslib.producer import Verifier
from bench.chaoslib.reader import TargetReader
from bench.chaoslib.statedb import StateDb
from bench.chaoslib.supervisor import Supervisor
from bench.chaoslib.toxiproxy import ToxiproxyClient

ROUTE = "chaos"
TOPIC_PREFIX = "chaos-"  # the route copies every topic named so
SESSION_TIMEOUT_S = 10.0  # group.consumer.session.timeout.ms of the local brokers


@dataclass(frozen=True)
class Settings:
    """One run's parameters (the CLI's options)."""

    cycles: int = 100
    seed: int = 7
    kinds: tuple[str, ...] = ()
    workers: int = 2
    topics: int = 3
    partitions: int = 2
    rate: float = 200.0
    fault_seconds: float = 8.0
    state: str = "sqlite"
    toxiproxy: Path = Path(".cache/bin/toxiproxy-server")
    report: Path | None = None
    keep: bool = False
    work_dir: Path | None = None  # default: a new temp dir
    settle_timeout: float = 120.0
    padding: int = 100
    guarantee: str = "at-least-once"  # the route's (exactly-once: the target is read read_committed, 0 duplicates)
    overlap: bool = False  # each fault a pair: a mover during a trouble (see faults.PairDeck)
    brokers: int = 1  # nodes per cluster (several: a broker fault strikes one node, see cluster.py)
    producer_queue: int | None = None  # the workers' queue.buffering.max.messages (None: MirrorFlow's default)
    records_age_h: float = 0.0  # every record's CreateTime this many hours back (see cluster.FORGETFUL)
    source_transactions: bool = False  # the steady records written in transactions, a share aborted (producer.py)


@dataclass(frozen=True)
class Injected:
    """A fault in place: how long to leave it, and how to heal it."""

    side: str | None
    detail: str
    hold_s: float
    heal: Callable[[], None] = lambda: None
    loss_topic: str | None = None  # retention-gap: the topic whose losses the route must report
    # A fault striking one node of a side: the partitions (that side's topic names) it led as it struck; the others'
    # pause tells whether the route's other partitions went on.
    struck: frozenset[tuple[str, int]] | None = None


FaultFn = Callable[["Chaos"], Injected]


@dataclass
class Chaos:
    """The run as the faults see it."""

    settings: Settings
    rng: random.Random
    sides: dict[str, ProxiedCluster]
    proxies: ToxiproxyClient
    supervisor: Supervisor
    verifier: Verifier
    reader: TargetReader
    statedb: StateDb
    workers: list[str]  # the regular workers' ids
    extras: list[str] = field(default_factory=list)  # workers added by worker-join, still running
    deleted_below: dict[tuple[str, int], int] = field(default_factory=dict)  # retention-gap truth
    serial: int = 0
    _admin: AdminClient | None = None

    def next_name(self, what: str) -> str:
        """A fresh topic name the route's pattern matches."""
        self.serial += 1
        return f"{TOPIC_PREFIX}{what}-{self.serial}"

    def hold(self, low: float, high: float) -> float:
        """A fault's duration, drawn from the seed."""
        return round(self.rng.uniform(low, high), 1)

    def admin(self) -> AdminClient:
        """The admin client of the source's direct listener (one, kept: a client that is garbage
        collected fails the futures it returned with _DESTROY)."""
        if self._admin is None:
            self._admin = AdminClient({"bootstrap.servers": self.sides["source"].direct, "log_level": 0})
        return self._admin

    def create_topic(self, topic: str, partitions: int, steady: bool = True) -> None:
        """Create ``topic`` on the source, follow its replica, and (``steady``) start writing to it."""
        for future in self.admin().create_topics([NewTopic(topic, partitions, -1)]).values():
            future.result(30)
        self.wait_partitions(topic, partitions)
        self.reader.follow(f"{CLUSTER_NAMES['source']}.{topic}", topic)
        self.verifier.add(topic, range(partitions), steady)

    def wait_partitions(self, topic: str, partitions: int | None, timeout: float = 60) -> None:
        """Until the source lists ``topic`` with that many partitions (None: until it is gone)."""
        deadline = time.monotonic() + timeout
        while True:
            listed = self.admin().list_topics(timeout=10).topics.get(topic)
            count = None if listed is None or listed.error is not None else len(listed.partitions)
            if count == partitions:
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"{topic}: the source shows {count} partitions, not {partitions}, "
                                   f"after {timeout:.0f} s")
            time.sleep(0.2)

    def stand(self, seconds: float) -> None:
        """Leave the faults as they are for ``seconds``; raise at once if the verifier failed."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.verifier.fatal:
                raise RuntimeError(self.verifier.fatal)
            time.sleep(min(0.2, max(0.0, deadline - time.monotonic())))

    def running_workers(self) -> list[str]:
        """Regular and extra workers whose process is alive, in a stable order."""
        alive = set(self.supervisor.running())
        return [w for w in (*self.workers, *self.extras) if w in alive]

    def pick_worker(self, timeout: float = 30) -> str:
        """A running worker, drawn from the seed (waits while the supervisor restarts a crashed one)."""
        deadline = time.monotonic() + timeout
        while not (running := self.running_workers()):
            if time.monotonic() > deadline:
                raise TimeoutError(f"no worker has been running for {timeout:.0f} s")
            time.sleep(0.2)
        return self.rng.choice(running)
