"""Which routes a scheduled DAG run covers: the one named now, else every due one."""

from __future__ import annotations

import pytest

from replicator.airflow.schedule import chosen_routes
from replicator.config import parse_config
from replicator.errors import ConfigError

CONFIG = parse_config("""
clusters: {a: {bootstrap.servers: "127.0.0.1:1"}, b: {bootstrap.servers: "127.0.0.1:2"}}
routes:
  - {name: one, source: a, target: b, topics: [x]}
  - {name: two, source: a, target: b, topics: [y]}
""")


def test_the_named_route_now_else_every_due_one() -> None:
    assert chosen_routes(CONFIG) == ["one", "two"]
    assert chosen_routes(CONFIG, "two", lambda config, route: False) == ["two"]  # asked for: due or not
    assert chosen_routes(CONFIG, None, lambda config, route: route == "one") == ["one"]
    assert chosen_routes(CONFIG, "") == ["one", "two"]


def test_an_unknown_route_is_named_with_the_known_ones() -> None:
    with pytest.raises(ConfigError, match=r"unknown route 'nope' \(known: one, two\)"):
        chosen_routes(CONFIG, "nope")
