"""A password rotated in its file reaches a running worker's clients when the cluster refuses the old one."""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

import pytest
from confluent_kafka import KafkaError

from replicator.config import Config, load_config
from replicator.errors import ConfigError
from replicator.testing import FakeKafka
from replicator.testing.consumer import FakeConsumer
from replicator.worker.logins import REREAD_EVERY_S, Logins
from tests.fake_route import WorkerThread, wait_until

OLD, NEW = "Old-Pa55-4d1e", "New-Pa55-93b7"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _config(tmp_path: Path, kafka: FakeKafka, source_login: str, target_login: str = "") -> Config:
    (tmp_path / "source.password").write_text(OLD + "\n")
    (tmp_path / "mirrorflow.yaml").write_text(
        "clusters:\n"
        f"  source: {{bootstrap.servers: \"{kafka['source'].bootstrap_servers}\", security.protocol: SASL_SSL,"
        f" sasl.mechanism: SCRAM-SHA-512, {source_login}}}\n"
        f"  target: {{bootstrap.servers: \"{kafka['target'].bootstrap_servers}\"{target_login}}}\n"
        "routes:\n  - {name: r, source: source, target: target, topics: [orders], sla: {heartbeats: false}}\n")
    return load_config(tmp_path / "mirrorflow.yaml", {"TARGET_PASSWORD": OLD})


@pytest.fixture
def kafka() -> FakeKafka:
    fake = FakeKafka("source", "target")
    fake["source"].create_topic("orders", 2)
    return fake


def test_only_a_login_read_whole_from_a_file_is_followed(tmp_path: Path, kafka: FakeKafka) -> None:
    config = _config(tmp_path, kafka, "sasl.username: mf, sasl.password: '${file:source.password}'",
                     ", sasl.username: mf, sasl.password: '${TARGET_PASSWORD}'")
    assert config.cluster("source").login_files == {"sasl.password": str(tmp_path / "source.password")}
    assert config.cluster("source").login() == ("mf", OLD)
    assert config.cluster("target").login_files == {}  # the environment cannot change under a running worker
    (tmp_path / "source.password").write_text(NEW + "\n")
    assert config.cluster("source").reread_login() == ("mf", NEW)
    (tmp_path / "source.password").unlink()
    with pytest.raises(ConfigError) as refused:
        config.cluster("source").reread_login()
    assert str(refused.value).startswith("clusters.source.sasl.password: cannot read the file ")
    assert OLD not in repr(config.cluster("source").login_files)


def test_a_changed_file_reaches_new_clients_at_once_and_live_ones_when_applied_once_the_cluster_refuses(
        tmp_path: Path, kafka: FakeKafka, caplog: pytest.LogCaptureFixture) -> None:
    config = _config(tmp_path, kafka, "sasl.username: mf, sasl.password: '${file:source.password}'")
    clock = Clock()
    logins = Logins(config, clock)
    clients = logins.factory(kafka.clients())
    source = config.cluster("source").client_properties()
    live = clients.consumer({**source, "group.id": "g"})
    other = clients.producer(config.cluster("target").client_properties())  # another cluster: left alone
    closed = clients.consumer({**source, "group.id": "g2"})
    closed.close()
    assert logins.refused("source") is False  # the file says what the clients use: nothing to do
    assert live.login == ("mf", OLD)  # type: ignore[attr-defined]

    (tmp_path / "source.password").write_text(NEW + "\n")
    clock.now += 1
    assert logins.refused("source") is False, "read again within seconds of the last read"
    clock.now += REREAD_EVERY_S
    with caplog.at_level(logging.WARNING, "replicator.worker.logins"):
        assert logins.refused("source") is True
        assert live.login == ("mf", OLD)  # type: ignore[attr-defined]  # not from inside a callback
        assert clients.admin(source).login == ("mf", NEW)  # type: ignore[attr-defined]  # a new one: at once
        logins.apply()
    assert live.login == ("mf", NEW)  # type: ignore[attr-defined]
    assert other.login == ("", "")  # type: ignore[attr-defined]
    assert "cluster source: login read again from" in caplog.text
    assert OLD not in caplog.text and NEW not in caplog.text
    assert logins.refused("target") is False  # no login files there


def test_an_unreadable_file_is_said_once_and_never_raises(tmp_path: Path, kafka: FakeKafka,
                                                          caplog: pytest.LogCaptureFixture) -> None:
    config = _config(tmp_path, kafka, "sasl.username: mf, sasl.password: '${file:source.password}'")
    clock = Clock()
    logins = Logins(config, clock)
    (tmp_path / "source.password").unlink()
    with caplog.at_level(logging.ERROR, "replicator.worker.logins"):
        for _ in range(3):
            clock.now += REREAD_EVERY_S
            assert logins.refused("source") is False
    said = [r.getMessage() for r in caplog.records if r.name == "replicator.worker.logins"]
    assert len(said) == 1 and "clusters.source.sasl.password: cannot read the file" in said[0], said


def test_the_worker_gives_its_consumer_the_new_login_after_the_consumer_reports_it_refused(
        tmp_path: Path, kafka: FakeKafka) -> None:
    config = _config(tmp_path, kafka, "sasl.username: mf, sasl.password: '${file:source.password}'")
    worker = WorkerThread(kafka, "w", config)
    try:
        wait_until(lambda: worker.worker._consumer is not None, what="the worker's consumer", alive=(worker,))
        consumer = worker.worker.consumer
        assert isinstance(consumer, FakeConsumer) and consumer.login == ("mf", OLD)
        (tmp_path / "source.password").write_text(NEW)
        # Served by consume (error_cb): the new login is given outside the callback (inside, confluent-kafka
        # aborts the process: FakeAbort)
        consumer.report(KafkaError(KafkaError._AUTHENTICATION, "SASL authentication error: Authentication failed"))
        wait_until(lambda: consumer.login == ("mf", NEW), what="the new login", alive=(worker,))
    finally:
        assert worker.finish() is None


def test_the_group_is_asked_what_it_gave_the_worker_with_the_current_login(tmp_path: Path, kafka: FakeKafka) -> None:
    """The withheld watch's describe runs in a child process made from client properties, not a tracked client:
    it gets the rotated login too, and the fakes' process freezes it like any client call."""
    config = _config(tmp_path, kafka, "sasl.username: mf, sasl.password: '${file:source.password}'")
    clock = Clock()
    logins = Logins(config, clock)
    asked: list[tuple[str, str]] = []
    given = kafka.clients()
    clients = logins.factory(dataclasses.replace(given, assignment=lambda properties, *rest: asked.append(
        (properties["sasl.username"], properties["sasl.password"]))))
    assert clients.checkpoint is given.checkpoint
    source = config.cluster("source").client_properties()
    clients.assignment(source, "g", "m", "route r")
    (tmp_path / "source.password").write_text(NEW + "\n")
    clock.now += REREAD_EVERY_S
    assert logins.refused("source") is True
    clients.assignment(source, "g", "m", "route r")
    assert asked == [("mf", OLD), ("mf", NEW)]
