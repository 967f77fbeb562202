"""Links: a cluster that stops answering, or a chore that keeps failing, is one line when it starts and one
when it ends; only a fatal client error stops the route."""

from __future__ import annotations

import logging

import pytest
from confluent_kafka import KafkaError, KafkaException

from replicator.config import parse_config
from replicator.testing import FakeKafka
from replicator.worker.links import Links, group_out_of_reach


@pytest.fixture
def links() -> Links:
    config = parse_config(FakeKafka("east", "west").config_yaml(
        "  - {name: r, source: east, target: west, topics: [orders], sla: {heartbeats: false}}\n"))
    return Links(config.routes[0])


def lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "replicator.worker.links"]


@pytest.mark.parametrize("code", [KafkaError._ALL_BROKERS_DOWN, KafkaError._TRANSPORT, KafkaError._AUTHENTICATION,
                                  KafkaError._SSL])
@pytest.mark.parametrize(("side", "cluster"), [("source", "east"), ("target", "west")])
def test_an_unreachable_cluster_is_logged_once_and_its_return_once(links: Links, caplog: pytest.LogCaptureFixture,
                                                                  code: int, side: str, cluster: str) -> None:
    caplog.set_level(logging.WARNING)
    for _ in range(3):
        assert links.error(side, KafkaError(code, "down")) is None
    assert links.down == {side}
    links.up(side)
    links.up(side)
    said = lines(caplog)
    assert len(said) == 2, said
    if code in (KafkaError._AUTHENTICATION, KafkaError._SSL):  # up, but refusing: an ERROR naming the cause
        assert said[0].startswith(f"{side} cluster refuses the worker, retrying") and f"cluster={cluster}" in said[0]
        assert ("authentication failed (check sasl.username" if code == KafkaError._AUTHENTICATION
                else "TLS handshake failed") in said[0]
        assert caplog.records[0].levelno == logging.ERROR
    else:
        assert said[0].startswith(f"{side} cluster unreachable") and f"cluster={cluster}" in said[0]
        assert caplog.records[0].levelno == logging.WARNING
    assert said[1].startswith(f"{side} cluster reachable again") and "route=r" in said[1]
    assert links.down == set()


def test_a_side_that_answers_all_along_logs_nothing(links: Links, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    links.up("source")
    links.clear("topic refresh")
    assert lines(caplog) == []


@pytest.mark.parametrize(("error", "reason"), [
    (KafkaError(KafkaError._FATAL, "instance id still used", fatal=True), "source client: instance id still used"),
    (KafkaError(KafkaError.FENCED_INSTANCE_ID, "fenced", fatal=True), "source client: fenced"),
    (KafkaError(KafkaError._FATAL, "fatal without the flag"), "source client: fatal without the flag"),
    (KafkaError(KafkaError._TIMED_OUT, "slow"), None),
    (KafkaError(KafkaError._MSG_TIMED_OUT, "slow"), None),
])
def test_only_a_fatal_error_is_a_reason_to_stop(links: Links, error: KafkaError, reason: str | None) -> None:
    assert links.error("source", error) == reason
    assert links.down == set()


def test_a_failing_chore_is_logged_once_with_its_first_reason_and_once_when_it_works(
        links: Links, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    links.trouble("topic refresh", KafkaException(KafkaError(KafkaError._TIMED_OUT, "Local: Timed out")))
    links.trouble("topic refresh", RuntimeError("other"))
    links.trouble("placing assigned partitions", RuntimeError("no leader"))
    assert links.troubles == {"topic refresh": "other", "placing assigned partitions": "no leader"}
    links.clear("topic refresh")
    links.clear("topic refresh")
    assert lines(caplog) == [
        "topic refresh failed, retrying (replication of what is placed goes on) route=r error='Local: Timed out'",
        "placing assigned partitions failed, retrying (replication of what is placed goes on) route=r "
        "error='no leader'",
        "topic refresh works again route=r",
    ]
    assert links.troubles == {"placing assigned partitions": "no leader"}


@pytest.mark.parametrize(("code", "text", "out_of_reach"), [
    (KafkaError._ALL_BROKERS_DOWN, "1/1 brokers are down", True),
    (KafkaError._AUTHENTICATION, "SASL authentication error: Authentication failed", True),
    (KafkaError._TRANSPORT, "GroupCoordinator: 10.213.1.1:40495: Connect to ipv4#10.213.1.1:40495 failed: No route "
                            "to host (after 2331ms in state CONNECT)", True),
    (KafkaError._TRANSPORT, "10.213.1.1:40495/1: Disconnected (after 600000ms in state UP)", False),  # one broker
    (KafkaError._TIMED_OUT, "GroupCoordinator: request timed out", False),
    (KafkaError._SSL, "SSL handshake failed", False),
])
def test_group_out_of_reach(code: int, text: str, out_of_reach: bool) -> None:
    assert group_out_of_reach(KafkaError(code, text)) is out_of_reach
