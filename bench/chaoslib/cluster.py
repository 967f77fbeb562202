"""The two local clusters of a fault run, each with a listener the workers reach through Toxiproxy.

Each broker has its usual PLAINTEXT listener (the verifier's: producer, reader, admin)
and a PROXIED listener whose advertised address is the Toxiproxy proxy in front of it, so
the workers, which bootstrap through the proxy, stay behind it for every connection.

A cluster is one node by default (``--brokers 1``): a broker fault is then an outage of
the whole side. With several nodes (each broker and controller, topics with three copies,
``min.insync.replicas`` 2) every node has a proxy of its own, the network's faults act on
all of a side's proxies, and a broker fault strikes one node: its partitions' leaders move
(``restart`` is then a rolling restart of every node, one after the other).
"""

from __future__ import annotations

import dataclasses
import os
import signal
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from bench.chaoslib.toxiproxy import ToxiproxyClient
from replicator.dev.broker_config import cluster_nodes
from replicator.dev.localcluster import LocalCluster, LocalClusterSpec
from replicator.dev.ports import free_port

SIDES = ("source", "target")
CLUSTER_NAMES = {"source": "src", "target": "dst"}  # the replica of `t` is `src.t`
TEARDOWN_STOP_S = 5.0  # at the end of a run a node that does not stop at once is killed (its data is not kept)
IN_SYNC_TIMEOUT_S = 120.0  # a rolling restart waits this long for every replica to be back in sync
# A node's JVM started beside five others, the workers and the load on two cores took 64 s to answer (the broker's
# own start-up waits for the quorum and its metadata): the single-node clusters' 60 s was not enough.
START_TIMEOUT_S = 180.0


@dataclass
class ProxiedCluster:
    """One side: its nodes, and the names of the proxies the workers go through (one per node)."""

    side: str
    nodes: list[LocalCluster]
    proxies: list[str]
    frozen: set[int] = field(default_factory=set)  # indexes of the nodes SIGSTOPped

    @property
    def direct(self) -> str:
        """Bootstrap servers of the verifier (no proxy)."""
        return ",".join(node.spec.bootstrap_servers for node in self.nodes)

    @property
    def proxied(self) -> str:
        """Bootstrap servers of the workers (through the proxies)."""
        return ",".join(str(node.spec.proxied_bootstrap_servers) for node in self.nodes)

    def led_by(self, node: int | None) -> frozenset[tuple[str, int]] | None:
        """The partitions (this cluster's topic names) node ``node`` leads now; None for a cluster of one node (its
        faults strike every partition) or when the metadata does not answer."""
        if node is None:
            return None
        node_id = self.nodes[node].spec.node_id
        try:
            topics = AdminClient({"bootstrap.servers": self.direct, "log_level": 0}).list_topics(timeout=10).topics
        except KafkaException:
            return None
        return frozenset((name, p.id) for name, topic in topics.items() for p in topic.partitions.values()
                         if p.leader == node_id)

    def pick(self, draw: Callable[[list[int]], int]) -> int | None:
        """The node a broker fault strikes (``draw`` chooses among the indexes), None for a cluster of one node,
        whose faults strike all of it."""
        return None if len(self.nodes) == 1 else draw(list(range(len(self.nodes))))

    def _which(self, node: int | None) -> list[int]:
        return list(range(len(self.nodes))) if node is None else [node]

    def freeze(self, node: int | None = None) -> None:
        """SIGSTOP one node's JVM, or every node's (its KRaft controller freezes with it)."""
        for n in self._which(node):
            pid = self.nodes[n].pid()
            if pid is not None:
                os.kill(pid, signal.SIGSTOP)
                self.frozen.add(n)

    def thaw(self) -> None:
        """SIGCONT: every frozen node resumes where it stopped."""
        for n in sorted(self.frozen):
            pid = self.nodes[n].pid()
            if pid is not None:
                os.kill(pid, signal.SIGCONT)
        self.frozen.clear()

    def kill(self, node: int | None = None) -> None:
        """SIGKILL one node, or all (data stays)."""
        for n in self._which(node):
            self.nodes[n].kill()

    def stop(self, node: int | None = None) -> None:
        """A clean stop of one node, or of all (thawed first: a stopped JVM cannot act on SIGTERM)."""
        self.thaw()
        for n in self._which(node):
            self.nodes[n].stop()

    def start(self, node: int | None = None) -> None:
        """Start one node, or all of them at once (a quorum of several answers once most of it runs)."""
        which = self._which(node)
        with ThreadPoolExecutor(max_workers=len(which)) as pool:
            list(pool.map(lambda n: self.nodes[n].start(START_TIMEOUT_S), which))

    def roll(self, first: int, stand: Callable[[float], None]) -> None:
        """The rest of a rolling restart whose first node was stopped: start it, and once every replica is in sync
        again, stop and start each other node in turn, as an operator does."""
        order = [first] + [n for n in range(len(self.nodes)) if n != first]
        self.start(first)
        for n in order[1:]:
            self.wait_in_sync(stand)
            self.stop(n)
            stand(1.0)
            self.start(n)
        self.wait_in_sync(stand)

    def wait_in_sync(self, stand: Callable[[float], None]) -> None:
        """Until every partition of every topic has all its replicas in sync (a node back has caught up)."""
        admin = AdminClient({"bootstrap.servers": self.direct, "log_level": 0})
        deadline = time.monotonic() + IN_SYNC_TIMEOUT_S
        while True:
            topics = admin.list_topics(timeout=10).topics
            behind = [name for name, topic in topics.items() for p in topic.partitions.values()
                      if len(p.isrs) < len(p.replicas)]
            if not behind:
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"{self.side}: replicas of {sorted(set(behind))[:5]} not in sync "
                                   f"{IN_SYNC_TIMEOUT_S:.0f} s after a node came back")
            stand(0.5)

    def toxic(self, client: ToxiproxyClient, name: str, kind: str, attributes: dict[str, int],
              node: int | None = None) -> Callable[[], None]:
        """The toxic on every proxy of this side (or on one node's), both ways; returns what removes it."""
        added = [(proxy, client.add_toxic(proxy, name, kind, attributes))
                 for proxy in (self.proxies if node is None else [self.proxies[node]])]

        def remove() -> None:
            for proxy, names in added:
                client.remove_toxics(proxy, names)

        return remove

    def wait_registered(self, timeout: float = 60.0) -> None:
        """Until the cluster's metadata lists every node (a topic with three copies needs three brokers)."""
        admin = AdminClient({"bootstrap.servers": self.direct, "log_level": 0})
        deadline = time.monotonic() + timeout
        while len(admin.list_topics(timeout=10).brokers) < len(self.nodes):
            if time.monotonic() > deadline:
                raise TimeoutError(f"{self.side}: not every node registered {timeout:.0f} s after the start")
            time.sleep(0.2)

    def close(self) -> None:
        """The end of the run: every node stopped (killed if it does not stop at once)."""
        self.thaw()
        with ThreadPoolExecutor(max_workers=len(self.nodes)) as pool:
            list(pool.map(lambda node: node.stop(TEARDOWN_STOP_S), self.nodes))


# ``--records-age``: the target's brokers look for producers to forget every second instead of every 10 minutes, so
# records over a day old (``producer.id.expiration.ms``) have the workers' producers forgotten on their partitions
# within a second of each write, and every batch meets the race of a producer's first. The source keeps the
# harness's own producer for 20 days: its order at the source is what the copy is held to.
FORGETFUL = {"target": {"producer.id.expiration.check.interval.ms": "1000"},
             "source": {"producer.id.expiration.ms": str(20 * 24 * 3_600_000)}}  # an int: at most 24.8 days


def start_clusters(home: Path, proxies: ToxiproxyClient, brokers: int = 1,
                   copies: int | None = None, forgetful: bool = False) -> dict[str, ProxiedCluster]:
    """Both clusters running, each node behind its own proxy; stopped again if either fails to start. Topics
    have ``copies`` copies (default: up to three); ``forgetful``: see FORGETFUL."""
    sides = {}
    for side in SIDES:
        name = CLUSTER_NAMES[side]
        base = LocalClusterSpec(name=name, home=home / name, port=free_port(), controller_port=free_port(),
                                extra_properties=FORGETFUL[side] if forgetful else {})
        specs = [base] if brokers == 1 else cluster_nodes(base, brokers, free_port)
        if copies is not None:
            specs = [dataclasses.replace(spec, replicas=copies) for spec in specs]
        nodes, names = [], []
        for n, spec in enumerate(specs, 1):
            proxy = side if brokers == 1 else f"{side}-{n}"
            proxied_port = free_port()
            listen = proxies.create_proxy(proxy, f"127.0.0.1:{proxied_port}")
            nodes.append(LocalCluster(dataclasses.replace(spec, proxied_port=proxied_port, proxy_advertised=listen)))
            names.append(proxy)
        sides[side] = ProxiedCluster(side, nodes, names)
    try:
        with ThreadPoolExecutor(max_workers=2) as pool:
            list(pool.map(lambda c: c.start(), sides.values()))
        for cluster in sides.values():
            cluster.wait_registered()
    except BaseException:
        for cluster in sides.values():
            cluster.close()
        raise
    return sides
