"""The fleet bench's and the Spark audit bench's pure parts: their options and their tables."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))  # the bench's scripts import by file name

import fleet
import spark_audit


def test_fleet_sizes_are_read_and_checked(capsys: pytest.CaptureFixture[str]) -> None:
    assert fleet.parse_args(["--quick"]).records == 200_000
    assert fleet.parse_args(["--workers", "1,3"]).workers == [1, 3]
    with pytest.raises(SystemExit):
        fleet.parse_args(["--workers", "0,2"])
    assert "--workers: fleet sizes of 1 or more" in capsys.readouterr().err


def test_the_fleet_table_shows_each_size_against_one_worker_and_mm2() -> None:
    def copy(rate: float) -> dict[str, float]:
        return {"records_per_s": rate, "mb_per_s": rate / 1024, "startup_s": 3.0, "cpu_s_per_gib": 15.0}

    report = {"settings": {"records": 1000, "size": 1024, "partitions": 12}, "machine": {"cpus": 2}, "wall_s": 60,
              "backlog": {"records_per_s": 20_000}, "runs": [
                  {"workers": 1, "mirrorflow": copy(50_000), "mm2": copy(25_000)},
                  {"workers": 2, "mirrorflow": copy(75_000), "mm2": {"label": "MirrorMaker 2 tasks.max=2",
                                                                   "error": "stalled"}}]}
    lines = fleet.table(report).splitlines()
    one = next(line for line in lines if line.split() and line.split()[0] == "1")
    two = next(line for line in lines if line.split() and line.split()[0] == "2")
    assert one.split()[1:4] == ["50,000", "48.8", "1.00"] and one.split()[-1] == "2.00"
    assert two.split()[1:4] == ["75,000", "73.2", "1.50"] and two.split()[-1] == "-"
    assert any("MirrorMaker 2 tasks.max=2 FAILED: stalled" in line for line in lines)


def test_the_audit_table_says_whether_the_verdicts_agree() -> None:
    def run(master: str, wall: float, missing: int) -> dict[str, object]:
        counts = {"source": 100, "target": 100 - missing, "missing": missing}
        return {"master": master, "wall_s": wall, "records_per_s": 200 / wall, "status": "clean", "counts": counts}

    settings = {"records": 100, "size": 100, "spark_workers": 1, "worker_cores": 2}
    report = {"settings": settings, "machine": {"cpus": 2}, "wall_s": 120,
              "runs": [run("local[2]", 10.0, 0), run("spark://h:1", 12.5, 0)]}
    text = spark_audit.table(report)
    assert "verdicts: the same on every run" in text and "    spark://h:1     12.5" in text
    report["runs"].append(run("local[2]", 9.0, 3))
    assert "verdicts: DIFFER" in spark_audit.table(report)
