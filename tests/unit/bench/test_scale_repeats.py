"""The scale bench times `status` several times: its figure is the median, every run is kept, a failed run
fails the figure."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))  # the bench's scripts import by file name

import scale_control


def test_the_median_of_the_runs_is_the_figure_and_a_failed_run_is_not_hidden(monkeypatch: pytest.MonkeyPatch) -> None:
    runs = iter([(2.8, 0), (1.4, 1), (1.6, 0)])

    def timed(work: Path, name: str, args: list[str]) -> dict[str, Any]:
        seconds, code = next(runs)
        return {"wall_s": seconds, "exit_code": code, "stdout_lines": 2002, "first_line": "route"}

    monkeypatch.setattr(scale_control, "timed_cli", timed)
    result = scale_control.timed_cli_runs(Path("."), "status", ["status"], 3)
    assert result["wall_s"] == 1.6 and result["runs_s"] == [2.8, 1.4, 1.6]
    assert result["exit_code"] == 1
