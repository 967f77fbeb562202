"""``routes[].sync`` in mirrorflow.yaml: defaults, and errors that name the key path."""

from __future__ import annotations

import pytest

from replicator.config import parse_config
from replicator.errors import ConfigError

BASE = ("clusters: {a: {bootstrap.servers: 'h:1'}, b: {bootstrap.servers: 'h:2'}}\n"
        "routes:\n  - {name: r, source: a, target: b, topics: [x]%s}\n")


def test_defaults() -> None:
    sync = parse_config(BASE % "").routes[0].sync
    assert (sync.discovery_interval, sync.exclude_configs, sync.acls, dict(sync.principals), sync.grant_write,
            sync.delete_topics) == (5, (), True, {}, False, False)


def test_every_key() -> None:
    sync = parse_config(BASE % (", sync: {discovery_interval: 15, exclude_configs: ['retention\\..*'], "
                                "acls: false, principals: {'User:app': 'User:app-dr'}, grant_write: true, "
                                "delete_topics: true}")).routes[0].sync
    assert sync.discovery_interval == 15 and sync.exclude_configs == ("retention\\..*",)
    assert not sync.acls and dict(sync.principals) == {"User:app": "User:app-dr"}
    assert sync.grant_write and sync.delete_topics


@pytest.mark.parametrize(
    ("sync", "problem"),
    [
        ("{exclude_configs: ['(']}", "routes[0].sync.exclude_configs[0]: invalid regex '('"),
        ("{principals: {alice: 'User:b'}}", "routes[0].sync.principals.alice: 'alice' is not a principal"),
        ("{principals: {'User:a': bob}}", "routes[0].sync.principals.User:a: 'bob' is not a principal"),
        ("{discovery_interval: 0}", "routes[0].sync.discovery_interval: Input should be greater than or equal to 1"),
        ("{delete: true}", "routes[0].sync.delete: unknown key"),
        ("{acls: maybe}", "routes[0].sync.acls: Input should be a valid boolean"),
    ],
)
def test_errors_name_the_key(sync: str, problem: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(BASE % f", sync: {sync}")
    assert problem in str(caught.value)
