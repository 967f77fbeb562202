"""DeadLetterWriter: the route's dead-letter topic on the target, and a route that sets refused records
aside there and goes on."""

from __future__ import annotations

import pytest

from replicator.config import Config, parse_config
from replicator.worker.dead_letter import DeadLetterWriter


def config(options: str = "") -> Config:
    return parse_config("clusters:\n  a: {bootstrap.servers: 'a:9092'}\n  b: {bootstrap.servers: 'b:9092'}\n"
                        f"routes: [{{name: r, source: a, target: b, topics: [t], on_refused_record: dead-letter"
                        f"{options}}}]\n")


@pytest.mark.parametrize(("options", "topic"), [
    ("", "mirrorflow-dead-letter.r.internal"),
    (", dead_letter_topic: refused-orders", "refused-orders"),
])
def test_the_dead_letter_topic_is_the_routes_own_or_the_configured_one(options: str, topic: str) -> None:
    cfg = config(options)
    assert DeadLetterWriter(cfg, cfg.routes[0]).topic == topic


def test_a_record_too_large_for_the_target_goes_aside_and_the_route_goes_on() -> None:
    from replicator.testing import FakeKafka
    from tests.fake_route import WorkerThread, route_config, wait_until

    kafka = FakeKafka("source", "target")
    kafka["source"].create_topic("orders", 1)
    kafka["target"].create_topic("source.orders", 1, {"max.message.bytes": "1000"})
    values = [b"x" * (2000 if n == 4 else 10) + str(n).encode() for n in range(10)]
    for value in values:
        kafka["source"].append("orders", 0, b"k", value, [("h", b"v")])
    worker = WorkerThread(kafka, "a", route_config(kafka, on_refused_record="dead-letter"))
    dead = "mirrorflow-dead-letter.r.internal"
    wait_until(lambda: len(kafka["target"].records("source.orders", 0)) == 9
               and dead in kafka["target"].topics and len(kafka["target"].records(dead, 0)) == 1,
               what="nine records copied, one set aside", alive=(worker,))
    assert worker.finish() is None
    assert [r.value for r in kafka["target"].records("source.orders", 0)] == values[:4] + values[5:]
    aside = kafka["target"].records(dead, 0)[0]
    assert aside.value == values[4] and aside.key == b"k"
    headers = dict(aside.headers or [])
    assert headers["h"] == b"v"
    assert any(name.startswith("mirrorflow.") for name in headers), headers
    assert kafka["source"].group("mirrorflow-r").committed[("orders", 0)][0] == 10
