"""RouteMeter: the hot path's per-iteration tallies reach the exported counters once, then start over."""

from __future__ import annotations

import itertools

import pytest
from prometheus_client import REGISTRY

from replicator.worker.metrics import RouteMeter

_routes = itertools.count()


def exported(name: str, route: str, topic: str) -> float:
    return REGISTRY.get_sample_value(f"mirrorflow_{name}_total", {"route": route, "topic": topic}) or 0.0


@pytest.mark.parametrize(("rounds", "records", "value_bytes"), [
    ([], {}, {}),
    ([{"orders": (3, 30)}], {"orders": 3}, {"orders": 30}),
    ([{"orders": (3, 30), "payments": (1, 5)}, {"orders": (2, 0)}, {}],
     {"orders": 5, "payments": 1}, {"orders": 30, "payments": 5}),
])
def test_each_tally_is_published_once(rounds: list[dict[str, tuple[int, int]]], records: dict[str, int],
                                      value_bytes: dict[str, int]) -> None:
    route = f"meter-{next(_routes)}"
    meter = RouteMeter(route)
    for tallies in rounds:
        for topic, (count, size) in tallies.items():
            meter.records[topic] += count
            meter.bytes[topic] += size
        meter.publish()
        assert not meter.records and not meter.bytes
    meter.publish()  # nothing new: nothing added
    for topic in ("orders", "payments"):
        assert exported("records_replicated", route, topic) == records.get(topic, 0)
        assert exported("bytes_replicated", route, topic) == value_bytes.get(topic, 0)


def test_routes_are_counted_apart() -> None:
    first, second = RouteMeter(f"meter-{next(_routes)}"), RouteMeter(f"meter-{next(_routes)}")
    first.records["orders"] += 4
    first.publish()
    second.publish()
    assert exported("records_replicated", first.route, "orders") == 4
    assert exported("records_replicated", second.route, "orders") == 0
