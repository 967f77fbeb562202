"""DeadLetterWriter: the route's dead-letter topic on the target.

(Writes need a producer; it builds a confluent-kafka Producer itself instead of taking a ClientFactory as
Subscription does, so the fakes cannot stand in for it.)
"""

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
