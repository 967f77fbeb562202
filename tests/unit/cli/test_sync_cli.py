"""``mirrorflow sync`` without clusters: its help, and exit 2 for a bad config or route."""

from __future__ import annotations

from pathlib import Path

import pytest

from replicator.cli.main import build_parser, main


def test_sync_has_help_and_is_no_longer_planned(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        build_parser().parse_args(["sync", "--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert "--dry-run" in out and "--route NAME" in out and "--json" in out
    assert "planned" not in (build_parser().epilog or "")  # every command of DESIGN.md is there


@pytest.mark.parametrize(
    ("routes", "argv", "message"),
    [
        ("routes: []\n", [], "the config has no routes to sync"),
        ("routes: [{name: r, source: a, target: b, topics: [x]}]\n", ["--route", "nope"], "unknown route 'nope'"),
        ("routes: [{name: r, source: a, target: b, topics: [x], sync: {acls: maybe}}]\n", [],
         "routes[0].sync.acls"),
    ],
)
def test_bad_input_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str], routes: str, argv: list[str],
                           message: str) -> None:
    config = tmp_path / "m.yaml"
    config.write_text("clusters: {a: {bootstrap.servers: 'h:1', sasl.password: s3cret},"
                      " b: {bootstrap.servers: 'h:2'}}\n"
                      + routes + f"state: {{url: 'sqlite:///{tmp_path / 's.db'}'}}\n")
    assert main(["sync", "--config", str(config), *argv]) == 2
    captured = capsys.readouterr()
    assert message in captured.err and "s3cret" not in captured.err + captured.out
