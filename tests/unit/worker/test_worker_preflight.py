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
    assert wait_for_clusters(cfg, cfg.routes[0], stop) is False
    assert time.monotonic() - began < 1.0  # no cluster was asked (each question waits up to 5 s)
