"""``mirrorflow failback`` without clusters: help, and bad input exits 2 with nothing stored."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from replicator.cli.main import build_parser, main

CLUSTERS = ("clusters: {a: {bootstrap.servers: '127.0.0.1:1', sasl.password: s3cret}, "
            "b: {bootstrap.servers: '127.0.0.1:1'}}\n")
ROUTE = "routes: [{name: r, source: a, target: b, topics: [x]}]\n"


def _config(tmp_path: Path) -> Path:
    config = tmp_path / "m.yaml"
    config.write_text(CLUSTERS + ROUTE + f"state: {{url: 'sqlite:///{tmp_path / 's.db'}'}}\n")
    return config


def test_failback_has_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        build_parser().parse_args(["failback", "--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    for flag in ("--route NAME", "--mode {incremental,resync}", "--group GROUP", "--drain-timeout SECONDS",
                 "--accept-loss", "--dry-run", "--json", "--config FILE"):
        assert flag in out, flag


@pytest.mark.parametrize(("argv", "message"), [
    (["--route", "nope"], "unknown route 'nope' (known: r)"),
    (["--route", "r"], "route r is not failed over (no failover run holds it): there is nothing to fail back"),
    (["--route", "r", "--accept-loss"], "--accept-loss is for mode resync"),
    (["--route", "r", "--drain-timeout", "soon"], "--drain-timeout: expected seconds"),
])
def test_bad_input_exits_2_naming_it_and_stores_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                        argv: list[str], message: str) -> None:
    config = _config(tmp_path)
    assert main(["failback", "--config", str(config), *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and "s3cret" not in err
    if (tmp_path / "s.db").exists():
        with sqlite3.connect(tmp_path / "s.db") as db:
            assert db.execute("select count(*) from mf_failback_run").fetchone() == (0,)


def test_the_run_is_rendered_as_a_table_of_groups_then_what_to_do() -> None:
    import dataclasses
    import datetime as dt

    from replicator.cli.failback_cmd import render
    from replicator.domain.failback import FailbackRequest, FailbackRun, FailbackStep, FailbackStepRecord
    from replicator.domain.failover import StepStatus
    from replicator.domain.resume_point import Basis, GroupCommit, ResumePoint
    from replicator.domain.target_group import TargetOutcome

    t0 = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)
    run = FailbackRun.new(FailbackRequest("r"), "a", "b", t0)
    for step in FailbackStep:
        run = run.with_step(FailbackStepRecord(step, StepStatus.DONE, "ok"))
    point = ResumePoint("app", "a.x", 0, "x", 17, Basis.EXACT, 12)
    busy = ResumePoint("busy", "a.x", 0, "x", 9, Basis.EXACT, 4)
    run = dataclasses.replace(run, run_id=4, copied=5, finished_at=t0 + dt.timedelta(seconds=3),
                              commits=(GroupCommit(point, TargetOutcome.WRITTEN),
                                       GroupCommit(busy, TargetOutcome.ACTIVE_MEMBERS)),
                              notes=("group app x-0: never saw 2 offsets",))
    text = render(run)
    assert text.startswith("failback run 4 of route r (incremental): b -> a: done")
    assert "committed 17" in text and "kept: active members" in text and "note: group app x-0" in text
    assert "Group busy: it has active members on 'a'" in text and "`mirrorflow run --route r`" in text


def test_failback_offers_restart_like_failover(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["failback", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "abandon the route's unfinished failback run and start a new one" in help_text
    assert build_parser().parse_args(["failback", "--route", "r", "--restart"]).restart is True


def test_a_dry_run_says_which_unfinished_run_a_real_one_would_resume(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    import datetime as dt
    import json

    from replicator.domain.failback import FailbackRequest, FailbackRun, FailbackStep, FailbackStepRecord
    from replicator.domain.failover import StepStatus
    from replicator.state.failbacks import save_run
    from replicator.state.store import StateStore

    config = _config(tmp_path)
    stopped = FailbackRun.new(FailbackRequest("r"), "a", "b", dt.datetime(2026, 11, 1, 12, 0, 5, tzinfo=dt.UTC))
    stopped = stopped.with_step(FailbackStepRecord(FailbackStep.CHECK, StepStatus.DONE, "ok"))
    stopped = stopped.with_step(FailbackStepRecord(FailbackStep.PREPARE, StepStatus.FAILED, "", "broker down"))
    with StateStore(f"sqlite:///{tmp_path / 's.db'}") as store:
        store.run(lambda session: save_run(session, stopped))
    # the clusters are not there: the dry run stops at its first step, and prints the run as JSON first
    assert main(["failback", "--config", str(config), "--route", "r", "--dry-run", "--json"]) == 1
    printed = json.loads(capsys.readouterr().out)
    assert printed["status"] == "dry-run" and printed["run_id"] is None
    assert ("failback run 1 is unfinished since 2026-11-01 12:00:05Z (stopped at step prepare): a real run with "
            "its options resumes it there, unless --restart") in printed["notes"]
    with sqlite3.connect(tmp_path / "s.db") as db:
        assert db.execute("select id, status from mf_failback_run").fetchall() == [(1, "failed")]
