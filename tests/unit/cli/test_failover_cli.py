"""``mirrorflow failover`` without clusters: help, bad input (exit 2, nothing changed), a failed step resumed."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import sqlite3
from pathlib import Path

import pytest

from replicator.cli.failover_cmd import render
from replicator.cli.main import build_parser, main
from replicator.domain.failover import FailoverRequest
from replicator.domain.failover_run import FailoverRun
from replicator.domain.resume_point import Basis, GroupCommit, ResumePoint
from replicator.domain.target_group import TargetOutcome

CLUSTERS = ("clusters: {a: {bootstrap.servers: '127.0.0.1:1', sasl.password: s3cret}, "
            "b: {bootstrap.servers: '127.0.0.1:1'}}\n")
ROUTE = "routes: [{name: r, source: a, target: b, topics: [x]}]\n"


def _config(tmp_path: Path, routes: str = ROUTE) -> Path:
    config = tmp_path / "m.yaml"
    config.write_text(CLUSTERS + routes + f"state: {{url: 'sqlite:///{tmp_path / 's.db'}'}}\n")
    return config


def test_failover_has_help_and_is_no_longer_planned(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        build_parser().parse_args(["failover", "--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    for flag in ("--route NAME", "--group GROUP", "--mode {checkpoint,timestamp}", "--at ISO", "--margin DURATION",
                 "--drain-timeout SECONDS", "--dry-run", "--json", "--restart", "--release", "--config FILE"):
        assert flag in out, flag
    assert "planned" not in (build_parser().epilog or "")  # every command of DESIGN.md is there


@pytest.mark.parametrize(("argv", "message"), [
    (["--route", "nope"], "unknown route 'nope' (known: r)"),
    (["--route", "r", "--mode", "timestamp", "--group", "g"], "failover of route r: mode timestamp needs --at"),
    (["--route", "r", "--mode", "timestamp", "--at", "2026-11-01T00:00:00Z"], "needs the groups by name"),
    (["--route", "r", "--at", "2026-11-01T00:00:00Z"], "--at is for mode timestamp"),
    (["--route", "r", "--mode", "timestamp", "--group", "g", "--at", "noon"], "--at: expected an ISO 8601 instant"),
    (["--route", "r", "--margin", "ten"], "--margin: expected seconds like 60, 60s, 5m or 1h, got 'ten'"),
    (["--route", "r", "--drain-timeout", "-1"], "--drain-timeout: expected seconds"),
    (["--route", "nope", "--release"], "unknown route 'nope'"),
])
def test_bad_input_exits_2_and_changes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str],
                                                message: str) -> None:
    assert main(["failover", "--config", str(_config(tmp_path)), *argv]) == 2
    captured = capsys.readouterr()
    assert message in captured.err, captured.err
    assert "s3cret" not in captured.err + captured.out and "Traceback" not in captured.err
    assert not (tmp_path / "s.db").exists(), "bad input must change nothing"


def test_unreachable_target_fails_the_first_step_and_a_rerun_resumes_it(tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    config = _config(tmp_path)
    assert main(["failover", "--config", str(config), "--route", "r", "--json"]) == 1
    captured = capsys.readouterr()
    assert "[1/8] check-source: failed" in captured.err
    assert "route r: failover run 1 stopped at step check-source: route r: target 'b' is unreachable" in captured.err
    assert "run the same failover again to resume it there" in captured.err
    printed = json.loads(captured.out)
    assert printed["status"] == "failed" and printed["stopped_at"] == "check-source" and printed["run_id"] == 1
    with sqlite3.connect(tmp_path / "s.db") as db:
        assert db.execute("select id, status, stopped_at_step, route_stopped_at from mf_failover_run").fetchall() == [
            (1, "failed", "check-source", None)]
        assert db.execute("select status from mf_failover_step where step = 'drain'").fetchall() == [("pending",)]
    assert main(["failover", "--config", str(config), "--route", "r", "--group", "app"]) == 2  # other options
    assert "failover run 1 is unfinished (stopped at check-source" in capsys.readouterr().err
    assert main(["failover", "--config", str(config), "--route", "r"]) == 1
    assert "resuming failover run 1 of route r (stopped at check-source)" in capsys.readouterr().out
    assert main(["failover", "--config", str(config), "--route", "r", "--restart"]) == 1
    out = capsys.readouterr().out
    assert "failover run 1 abandoned (--restart)" in out and "failover run 2 of route r" in out
    with sqlite3.connect(tmp_path / "s.db") as db:
        assert db.execute("select id, status from mf_failover_run order by id").fetchall() == [
            (1, "abandoned"), (2, "failed")]
    # Nothing stopped the route: it may still run; releasing it is a no-op.
    assert main(["failover", "--config", str(config), "--route", "r", "--release"]) == 0
    assert "route r: not held by any failover run" in capsys.readouterr().out


def test_render_lists_each_group_partition_and_what_to_do() -> None:
    t0 = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)
    point = ResumePoint("app", "orders", 0, "primary.orders", 52, Basis.EXACT, 57, 0, t0)
    busy = ResumePoint("busy", "orders", 0, "primary.orders", 52, Basis.EXACT, 57, 0, t0)
    run = dataclasses.replace(FailoverRun.new(FailoverRequest("r"), "primary", "backup", "mirrorflow-r", t0),
                              run_id=4, points=(point, busy), commits=(GroupCommit(point, TargetOutcome.WRITTEN, 50),
                                                                       GroupCommit(busy, TargetOutcome.ACTIVE_MEMBERS)))
    lines = render(run).splitlines()
    assert lines[0] == "failover run 4 of route r: primary -> backup: running"
    assert lines[2].split() == ["app", "orders", "0", "57", "->", "primary.orders", "52", "exact", "committed", "52"]
    assert lines[3].split()[-3:] == ["kept:", "active", "members"]
    assert "group busy: left as it is on 'backup'" in render(run)


def test_a_dry_run_says_which_unfinished_run_a_real_one_would_resume(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    config = _config(tmp_path)
    assert main(["failover", "--config", str(config), "--route", "r"]) == 1  # the target is not there
    with sqlite3.connect(tmp_path / "s.db") as db:
        [(triggered,)] = db.execute("select triggered_at from mf_failover_run").fetchall()
    capsys.readouterr()
    assert main(["failover", "--config", str(config), "--route", "r", "--dry-run", "--json"]) == 1
    printed = json.loads(capsys.readouterr().out)
    assert printed["status"] == "dry-run" and printed["run_id"] is None
    since = dt.datetime.fromisoformat(str(triggered)).strftime("%Y-%m-%d %H:%M:%SZ")
    assert (f"failover run 1 is unfinished since {since} (stopped at step check-source): a real run with its "
            "options resumes it there, unless --restart") in printed["notes"]
