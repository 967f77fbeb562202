"""procs.run_bench: every bench ends the same way, whatever happened in it."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))  # the bench's scripts import by file name

from procs import run_bench


def _run(tmp_path: Path, body: Any, step_failed: bool = False, keep: bool = False) -> tuple[int, Path, dict[str, Any],
                                                                                              list[str]]:
    work = tmp_path / "work"
    work.mkdir(parents=True)
    report: dict[str, Any] = {"settings": {}}
    stopped: list[str] = []
    code = run_bench(work, report, lambda: body(report), lambda: stopped.append("stopped"), lambda: step_failed,
                     lambda: "the table", keep, tmp_path / "report.json")
    return code, work, json.loads((tmp_path / "report.json").read_text()), stopped


def test_a_run_that_went_well_exits_0_and_leaves_no_temp_dir(tmp_path: Path, capsys: Any) -> None:
    code, work, report, stopped = _run(tmp_path, lambda report: report.update(figure=42))
    assert (code, work.exists(), report["figure"], stopped) == (0, False, 42, ["stopped"])
    assert "wall_s" in report and "the table" in capsys.readouterr().out


def test_a_failing_step_is_reported_torn_down_and_its_logs_kept(tmp_path: Path, capsys: Any) -> None:
    def body(_report: dict[str, Any]) -> None:
        raise RuntimeError("the source cluster did not start")

    code, work, report, stopped = _run(tmp_path, body)
    assert (code, work.exists(), stopped) == (1, True, ["stopped"])
    assert report["error"] == "RuntimeError: the source cluster did not start"
    assert f"logs kept in {work}" in capsys.readouterr().out


def test_a_peer_that_failed_its_step_fails_the_run_and_keep_keeps_the_dir(tmp_path: Path) -> None:
    assert _run(tmp_path / "a", lambda report: None, step_failed=True)[0] == 1
    code, work, _report, _stopped = _run(tmp_path / "b", lambda report: None, keep=True)
    assert (code, work.exists()) == (0, True)
