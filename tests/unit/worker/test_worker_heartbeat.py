"""HeartbeatEmitter: made only for a route with heartbeats on, writing to the route's own topic.

(Its writes and the once-only "not written" line need a producer; it builds a confluent-kafka Producer
itself instead of taking a ClientFactory as Subscription does, so the fakes cannot stand in for it.)
"""

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
