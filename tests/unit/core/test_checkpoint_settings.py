"""``routes[].checkpoints`` in mirrorflow.yaml: defaults, and errors that name the key path."""

from __future__ import annotations

import pytest

from replicator.config import parse_config
from replicator.errors import ConfigError

BASE = ("clusters: {a: {bootstrap.servers: 'h:1'}, b: {bootstrap.servers: 'h:2'}}\n"
        "routes:\n  - {name: r, source: a, target: b, topics: [x]%s}\n")


def test_defaults_are_mirrormaker2_like_plus_our_own_groups() -> None:
    settings = parse_config(BASE % "").routes[0].checkpoints
    assert settings.groups == (".*",)
    assert settings.exclude_groups == ("console-consumer-.*", "connect-.*", "__.*", "mirrorflow-.*")
    assert (settings.interval, settings.write_target_groups) == (60, False)
    assert not settings.group_filter.should_checkpoint_group("mirrorflow-r")
    assert settings.group_filter.should_checkpoint_group("orders-app")


def test_every_key() -> None:
    settings = parse_config(BASE % ", checkpoints: {groups: ['app-.*'], exclude_groups: [], interval: 15, "
                                   "write_target_groups: true}").routes[0].checkpoints
    assert settings.groups == ("app-.*",) and settings.exclude_groups == () and settings.interval == 15
    assert settings.write_target_groups
    assert settings.group_filter.select(["app-1", "console-consumer-2", "other"]) == ["app-1"]


@pytest.mark.parametrize(
    ("checkpoints", "problem"),
    [
        ("{groups: ['(']}", "routes[0].checkpoints.groups[0]: invalid regex '('"),
        ("{exclude_groups: [ok, '[']}", "routes[0].checkpoints.exclude_groups[1]: invalid regex '['"),
        ("{interval: 0}", "routes[0].checkpoints.interval: Input should be greater than or equal to 1"),
        ("{write: true}", "routes[0].checkpoints.write: unknown key"),
        ("{write_target_groups: maybe}", "routes[0].checkpoints.write_target_groups: Input should be a valid boolean"),
    ],
)
def test_errors_name_the_key(checkpoints: str, problem: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(BASE % f", checkpoints: {checkpoints}")
    assert problem in str(caught.value)
