"""``mirrorflow checkpoint`` without clusters: help, exit codes for bad input and unreachable clusters, output."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from replicator.cli.checkpoint_cmd import render
from replicator.cli.main import build_parser, main
from replicator.domain.checkpoint import Checkpoint, CheckpointStatus
from replicator.domain.checkpoint_run import CheckpointRun
from replicator.domain.target_group import TargetOffset, TargetOutcome

CLUSTERS = "clusters: {a: {bootstrap.servers: '127.0.0.1:1', sasl.password: s3cret}, b: {bootstrap.servers: 'h:2'}}\n"


def test_checkpoint_has_help_and_is_no_longer_planned(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        build_parser().parse_args(["checkpoint", "--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert all(flag in out for flag in ("--route NAME", "--group GROUP", "--json", "--dry-run", "--config FILE"))
    assert "planned" not in (build_parser().epilog or "")  # every command of DESIGN.md is there


@pytest.mark.parametrize(
    ("routes", "argv", "message"),
    [
        ("routes: []\n", [], "the config has no routes to checkpoint"),
        ("routes: [{name: r, source: a, target: b, topics: [x]}]\n", ["--route", "nope"], "unknown route 'nope'"),
        ("routes: [{name: r, source: a, target: b, topics: [x], checkpoints: {groups: ['(']}}]\n", [],
         "routes[0].checkpoints.groups[0]: invalid regex"),
    ],
)
def test_bad_input_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str], routes: str, argv: list[str],
                           message: str) -> None:
    config = tmp_path / "m.yaml"
    config.write_text(CLUSTERS + routes + f"state: {{url: 'sqlite:///{tmp_path / 's.db'}'}}\n")
    assert main(["checkpoint", "--config", str(config), *argv]) == 2
    captured = capsys.readouterr()
    assert message in captured.err and "s3cret" not in captured.err + captured.out
    assert not (tmp_path / "s.db").exists(), "bad input must change nothing"


def test_unreachable_source_exits_1_naming_route_and_cluster(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "m.yaml"
    config.write_text(CLUSTERS + "routes: [{name: r, source: a, target: b, topics: [x]}]\n"
                      f"state: {{url: 'sqlite:///{tmp_path / 's.db'}'}}\n")
    assert main(["checkpoint", "--config", str(config)]) == 1
    captured = capsys.readouterr()
    assert "route r: source 'a': cluster did not answer" in captured.err
    assert "s3cret" not in captured.err + captured.out and "Traceback" not in captured.err


def test_render_shows_each_partition_its_translation_and_the_target_group() -> None:
    t0 = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)
    exact = Checkpoint("app", "orders", 0, 57, "primary.orders", 52, CheckpointStatus.EXACT)
    behind = Checkpoint("app", "orders", 1, 40, "primary.orders", 30, CheckpointStatus.BEHIND, 4)
    busy = Checkpoint("busy", "orders", 0, 9, "primary.orders", 7, CheckpointStatus.EXACT)
    run = CheckpointRun("r", "primary", "backup", t0, t0, ("app", "busy"), (exact, behind, busy),
                        (TargetOffset(exact, TargetOutcome.WRITTEN, 50), TargetOffset(behind, TargetOutcome.WRITTEN),
                         TargetOffset(busy, TargetOutcome.ACTIVE_MEMBERS)))
    lines = render(run).splitlines()
    assert lines[0] == "route r: primary -> backup: 2 groups, 3 checkpoints"
    assert lines[2].split() == ["app", "orders", "0", "57", "->", "primary.orders", "52", "exact", "committed", "52"]
    assert lines[3].split()[6:10] == ["30", "≤4", "may", "repeat"]
    assert lines[-1] == "group busy left as it is on backup: it has active members there"
    empty = CheckpointRun("r", "primary", "backup", t0, t0, (), (), dry_run=True)
    assert "(dry run): 0 groups, 0 checkpoints" in render(empty)
