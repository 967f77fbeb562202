"""Where partitions end, read by one client before and after its broker restarted: the failover's fence watch
reads the source's ends with one client before and after it watches, and a leader elected in between (a node
restarted, a leader moved) gives the partition a new leader epoch. librdkafka's admin client sends the epoch its
metadata holds and is refused FENCED_LEADER_EPOCH at every ListOffsets until that metadata is renewed."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient

from replicator.kafka.admin import create_topics
from replicator.kafka.log_ranges import ends, watermarks
from tests.kafka_io import Rec, produce
from tests.support import free_port, start_pair

pytestmark = pytest.mark.kafka


def _record(partition: int) -> Rec:
    return Rec(partition, b"k", b"v", (), int(time.time() * 1000))


def test_one_client_reads_the_ends_before_and_after_the_broker_restarts(tmp_path: Path) -> None:
    (cluster,) = start_pair(tmp_path, {"ends": free_port()}, heap="256m")
    try:
        bootstrap = cluster.spec.bootstrap_servers
        create_topics(bootstrap, {"orders": 2})
        assert produce(bootstrap, "orders", [_record(n % 2) for n in range(6)]) == 6
        client = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
        both = [("orders", 0), ("orders", 1)]
        assert ends(client, "ends", both) == {("orders", 0): 3, ("orders", 1): 3}
        cluster.kill()
        cluster.start()
        assert produce(bootstrap, "orders", [_record(0)]) == 1
        assert ends(client, "ends", both) == {("orders", 0): 4, ("orders", 1): 3}
        assert ends(client, "ends", both, stable=True) == {("orders", 0): 4, ("orders", 1): 3}
        assert watermarks(client, both) == {("orders", 0): (0, 4), ("orders", 1): (0, 3)}
    finally:
        cluster.stop()
