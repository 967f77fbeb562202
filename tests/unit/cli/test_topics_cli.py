"""``mirrorflow topics``: the route and topic by option (the style of every command) or by position (as before)."""

from __future__ import annotations

from pathlib import Path

import pytest

from replicator.cli.main import main
from tests.records import write_config


@pytest.fixture
def config(tmp_path: Path) -> Path:
    return write_config(tmp_path / "m.yaml", "primary:9092", "backup:9092", [
        {"name": "r", "source": "primary", "target": "backup", "topics": ["orders"]}])


@pytest.mark.parametrize("argv", [
    ["topics", "add", "--route", "r", "--topic", "audit-log"],
    ["topics", "add", "r", "audit-log"],
    ["topics", "add", "--route", "r", "audit-log"],
])
def test_a_topic_is_added_by_option_or_by_position(config: Path, argv: list[str],
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*argv, "--config", str(config)]) == 0
    assert "route r: topic audit-log -> replicate" in capsys.readouterr().out
    assert main(["topics", "list", "--route", "r", "--config", str(config)]) == 0
    listed = capsys.readouterr().out
    assert "audit-log" in listed and "cli" in listed


@pytest.mark.parametrize(("argv", "says"), [
    (["topics", "add", "--topic", "x"], "topics add: name the route (--route NAME)"),
    (["topics", "remove", "--route", "r"], "topics remove: name the topic (--topic NAME)"),
    (["topics", "add", "r", "x", "y"], "topics add: unexpected 'y' (route 'r', topic 'x' given)"),
    (["topics", "list", "--route", "r", "x"], "topics list: unexpected 'x' (route 'r' given)"),
    (["topics", "add", "--route", "nope", "--topic", "x"], "nope"),
])
def test_a_missing_or_extra_name_exits_2_saying_what(config: Path, argv: list[str], says: str,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*argv, "--config", str(config)]) == 2
    assert says in capsys.readouterr().err
