"""Leaders moving between brokers, on clusters of three nodes (topics with three copies, min.insync.replicas 2):
the most common event of a real cluster, and one a single-node cluster cannot make. A node leading the route's
partitions is killed on the target and stopped cleanly on the source while records are written; every record must
arrive byte for byte, in order per partition, and no worker may stop.

The fault harness runs the same faults at random (``bench/chaos.py --brokers 3``); these are the ones a release
must pass every time. The clusters are this module's own (their nodes are killed).
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient

from replicator.dev import ports
from replicator.dev.broker_config import cluster_nodes
from replicator.dev.localcluster import LocalCluster, LocalClusterSpec
from replicator.kafka.admin import create_topics
from tests.kafka_io import Rec, committed, end_offsets, produce, read_all, read_committed, wait_until
from tests.records import by_partition, make_records, write_config
from tests.support import Worker

pytestmark = pytest.mark.kafka

PARTITIONS = 4
NODE_START_S = 180.0  # a node's JVM beside five others and the rest of the suite on two cores


class Cluster:
    """Three nodes of one cluster."""

    def __init__(self, home: Path, name: str) -> None:
        base = LocalClusterSpec(name=name, home=home / name, port=0, controller_port=0, heap="384m")
        self.nodes = [LocalCluster(spec) for spec in cluster_nodes(base, 3, ports.free_port)]

    @property
    def bootstrap(self) -> str:
        return ",".join(node.spec.bootstrap_servers for node in self.nodes)

    def start(self) -> None:
        with ThreadPoolExecutor(max_workers=3) as pool:
            list(pool.map(lambda node: node.start(NODE_START_S), self.nodes))
        wait_until(lambda: len(self._admin().list_topics(timeout=10).brokers) == 3, 60, f"{self} to list 3 brokers")

    def leader_of(self, topic: str, partition: int) -> LocalCluster:
        """The node that leads ``topic[partition]`` now."""
        leader = self._admin().list_topics(topic, timeout=10).topics[topic].partitions[partition].leader
        return next(node for node in self.nodes if node.spec.node_id == leader)

    def in_sync(self) -> bool:
        """Every partition of every topic with all its replicas in sync."""
        topics = self._admin().list_topics(timeout=10).topics.values()
        return all(len(p.isrs) == len(p.replicas) for t in topics for p in t.partitions.values())

    def stop(self) -> None:
        with ThreadPoolExecutor(max_workers=3) as pool:
            list(pool.map(lambda node: node.stop(5), self.nodes))

    def _admin(self) -> AdminClient:
        return AdminClient({"bootstrap.servers": self.bootstrap})


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Cluster, Cluster]]:
    home = tmp_path_factory.mktemp("three-nodes")
    source, target = Cluster(home, "primary"), Cluster(home, "backup")
    try:
        with ThreadPoolExecutor(max_workers=2) as pool:
            list(pool.map(Cluster.start, (source, target)))
        yield source, target
    finally:
        source.stop()
        target.stop()


def _route(pair: tuple[Cluster, Cluster], topic: str, path: Path, guarantee: str) -> Path:
    source, target = pair
    create_topics(source.bootstrap, {topic: PARTITIONS})
    return write_config(path / "m.yaml", source.bootstrap, target.bootstrap, [
        {"name": "leaders", "source": "primary", "target": "backup", "topics": [topic], "guarantee": guarantee}])


def _move_leaders(pair: tuple[Cluster, Cluster], topic: str) -> list[Rec]:
    """Kill the target node leading the replica's partition 0, write, start it again; then stop the source node
    leading partition 0 cleanly, write, start it again. Returns what was written meanwhile."""
    source, target = pair
    written = []
    victim = target.leader_of(f"primary.{topic}", 0)
    victim.kill()
    written += make_records(PARTITIONS, 300, "target-node-down")
    produce(source.bootstrap, topic, written[-PARTITIONS * 300:])
    victim.start(NODE_START_S)
    wait_until(target.in_sync, 120, "the target's replicas back in sync")
    victim = source.leader_of(topic, 0)
    victim.stop()
    written += make_records(PARTITIONS, 300, "source-node-down")
    produce(source.bootstrap, topic, written[-PARTITIONS * 300:])
    victim.start(NODE_START_S)
    wait_until(source.in_sync, 120, "the source's replicas back in sync")
    return written


def _at_the_ends(source: Cluster, topic: str) -> None:
    wait_until(lambda: committed(source.bootstrap, "mirrorflow-leaders", topic, PARTITIONS)
               == end_offsets(source.bootstrap, topic, PARTITIONS), 120, "the route to commit the source's ends")


def _clean(workers: list[Worker]) -> None:
    for worker in workers:
        assert worker.process.poll() is None, worker.output()[-3000:]
        code, _ = worker.terminate(60)
        assert code == 0, worker.output()[-3000:]
        assert "Traceback" not in worker.output(), worker.output()[-3000:]


def _copy_while_leaders_move(pair: tuple[Cluster, Cluster], topic: str, tmp_path: Path, workers: list[Worker],
                             guarantee: str) -> list[Rec]:
    """Two workers copy records written before and while leaders move; returns every record written, once the
    route committed the source's ends (on an exactly-once route: the positions' copy, after their commit)."""
    source, _ = pair
    config = _route(pair, topic, tmp_path, guarantee)
    first = make_records(PARTITIONS, 500, "before")
    produce(source.bootstrap, topic, first)
    workers += [Worker(config, log_dir=tmp_path), Worker(config, log_dir=tmp_path)]
    wait_until(lambda: all("placed" in w.output() for w in workers), 90, "both workers copying")
    records = first + _move_leaders(pair, topic)
    _at_the_ends(source, topic)
    return records


@pytest.mark.parametrize("guarantee", ["at-least-once", "exactly-once"])
def test_leaders_moving_on_both_clusters_lose_nothing_and_stop_no_worker(  # type: ignore[no-untyped-def]
        pair, unique_name, tmp_path, workers, guarantee) -> None:
    """On an exactly-once route the transaction and group coordinators live on the target's nodes too (one dies
    mid-transaction): a read_committed reader sees every record exactly once."""
    records = _copy_while_leaders_move(pair, unique_name, tmp_path, workers, guarantee)
    replica = f"primary.{unique_name}"
    if guarantee == "exactly-once":
        got = read_committed(pair[1].bootstrap, replica, PARTITIONS)
    else:  # repeats allowed, first copies in order
        got = {p: list(dict.fromkeys(recs)) for p, recs in read_all(pair[1].bootstrap, replica, PARTITIONS).items()}
    want = by_partition(records, PARTITIONS)
    for p in range(PARTITIONS):
        assert got[p] == want[p], f"partition {p}: a record missing, repeated, changed or out of order"
    _clean(workers)
