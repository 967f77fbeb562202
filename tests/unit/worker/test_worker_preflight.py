"""Preflight: a cluster that does not answer is a retriable error naming the route, side and cluster, never a
secret; a stop that came first starts nothing."""

from __future__ import annotations

import threading
import time

import pytest

from replicator.config import Config, parse_config
from replicator.errors import ClusterError
from replicator.worker.preflight import check_clusters, wait_for_clusters
from tests.support import free_port


def config(source: str, target: str) -> Config:
    return parse_config(
        f"clusters:\n  a: {{bootstrap.servers: '{source}', sasl.password: hunter2}}\n"
        f"  b: {{bootstrap.servers: '{target}', sasl.password: hunter2}}\n"
        "routes: [{name: r, source: a, target: b, topics: [t]}]\n")


def test_a_source_that_does_not_answer_is_a_retriable_error_naming_it() -> None:
    source = f"127.0.0.1:{free_port()}"
    cfg = config(source, f"127.0.0.1:{free_port()}")
    with pytest.raises(ClusterError) as caught:
        check_clusters(cfg, cfg.routes[0], timeout=0.5)
    assert caught.value.retriable
    message = str(caught.value)
    assert message.startswith(f"route r: source cluster 'a' ({source}): ")
    assert "hunter2" not in message


def test_a_stop_that_came_first_starts_nothing() -> None:
    cfg = config(f"127.0.0.1:{free_port()}", f"127.0.0.1:{free_port()}")
    stop = threading.Event()
    stop.set()
    began = time.monotonic()
    assert wait_for_clusters(cfg, cfg.routes[0], stop) is None
    assert time.monotonic() - began < 1.0  # no cluster was asked (each question waits up to 5 s)


def test_the_worker_learns_how_long_the_target_remembers_a_producer_or_takes_kafkas_default(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """Records older than the target's producer.id.expiration.ms are copied serially: the worker must know it,
    from the one read of the target at start that also tells whether it can run transactions."""
    from confluent_kafka import KafkaError, KafkaException

    from replicator.testing import FakeKafka
    from replicator.testing.admin import FakeAdmin
    from replicator.worker import preflight

    kafka = FakeKafka("source", "target")
    config = parse_config(kafka.config_yaml("  - {name: r, source: source, target: target, topics: [orders]}\n"))
    kafka["target"].producer_memory_ms = 3_600_000
    admin = FakeAdmin({}, kafka["target"])
    meta = admin.list_topics()
    target = preflight.read_target(admin, meta)
    assert (target.brokers, target.unread) == (1, None)
    assert preflight.worker_timeouts(config.routes[0], target).forgets == 3_600.0

    def refused(*args: object, **kwargs: object) -> None:
        raise KafkaException(KafkaError(KafkaError.CLUSTER_AUTHORIZATION_FAILED))
    monkeypatch.setattr(FakeAdmin, "describe_configs", refused)
    caplog.set_level("INFO", logger="replicator.worker.preflight")
    target = preflight.read_target(admin, meta)
    assert target.brokers == 1 and not target.settings
    assert preflight.worker_timeouts(config.routes[0], target).forgets == 86_400.0
    assert "producer.id.expiration.ms not read, taken as Kafka's default (86400 s) route=r" in caplog.text
    assert "CLUSTER_AUTHORIZATION_FAILED" in caplog.text
