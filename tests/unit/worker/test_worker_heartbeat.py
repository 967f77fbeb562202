"""HeartbeatEmitter: made only for a route with heartbeats on, writing to the route's own topic on the
source; a source that refuses them is said once, and once when they get through again."""

from __future__ import annotations

import pytest

from replicator.config import Config, parse_config
from replicator.worker.heartbeat import HeartbeatEmitter


def config(sla: str) -> Config:
    return parse_config("clusters:\n  a: {bootstrap.servers: 'a:9092', client.id: x}\n"
                        "  b: {bootstrap.servers: 'b:9092'}\n"
                        f"routes: [{{name: orders-dr, source: a, target: b, topics: [t], sla: {sla}}}]\n")


@pytest.mark.parametrize(("sla", "made", "interval"), [
    ("{}", True, 5.0),
    ("{heartbeats: true, heartbeat_interval: 0.5}", True, 0.5),
    ("{heartbeats: false}", False, None),
])
def test_an_emitter_is_made_only_when_the_route_wants_heartbeats(sla: str, made: bool,
                                                                 interval: float | None) -> None:
    cfg = config(sla)
    emitter = HeartbeatEmitter.for_route(cfg, cfg.routes[0])
    assert (emitter is not None) is made
    if emitter is not None:
        assert emitter.interval == interval
        assert emitter.topic == "mirrorflow-heartbeats.orders-dr"
        assert emitter.properties["bootstrap.servers"] == "a:9092"  # on the source cluster


def test_stopping_an_emitter_never_started_returns_at_once() -> None:
    cfg = config("{}")
    emitter = HeartbeatEmitter(cfg, cfg.routes[0])
    emitter.stop()
    emitter.stop()


def test_heartbeats_reach_the_source_and_a_refusal_is_said_once_then_its_end(caplog: pytest.LogCaptureFixture) -> None:
    import logging

    from replicator.domain.heartbeat import decode_heartbeat
    from replicator.testing import FakeKafka
    from tests.fake_route import wait_until

    caplog.set_level(logging.WARNING, logger="replicator.worker.heartbeat")
    kafka = FakeKafka("source", "target")
    cfg = parse_config(kafka.config_yaml(
        "  - {name: r, source: source, target: target, topics: [t], sla: {heartbeat_interval: 0.01}}\n"))
    topic = "mirrorflow-heartbeats.r"
    kafka["source"].freeze()  # the topic cannot be created: every beat is refused (unknown topic)
    emitter = HeartbeatEmitter.for_route(cfg, cfg.routes[0], kafka.clients("w"))
    assert emitter is not None
    emitter.start()
    try:
        kafka["source"].thaw()
        wait_until(lambda: "heartbeat not written" in caplog.text, what="the refusal said")
        kafka["source"].create_topic(topic, 1)  # as the worker's own topic scan would
        wait_until(lambda: len(kafka["source"].records(topic, 0)) >= 3, what="heartbeats written")
    finally:
        emitter.stop()
    lines = [r.getMessage() for r in caplog.records]
    assert sum("heartbeat not written" in line for line in lines) == 1
    assert sum("heartbeats written again" in line for line in lines) == 1
    beat = kafka["source"].records(topic, 0)[0]
    decoded = decode_heartbeat(beat.value)
    assert decoded is not None and decoded.route == "r"
