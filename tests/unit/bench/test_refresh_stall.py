"""bench/refresh_stall.py: bad sizes are refused before anything starts; the table reads the report."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))  # the bench's scripts import by file name

import refresh_stall


@pytest.mark.parametrize("option", ["--topics", "--partitions", "--looks"])
def test_a_size_below_one_is_refused_by_name(option: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        refresh_stall.main([option, "0"])
    assert exit_.value.code == 2
    assert f"{option} must be at least 1" in capsys.readouterr().err


def test_the_table_shows_each_window_and_the_collectors_pauses() -> None:
    gaps = {"p50_ms": 5.0, "p90_ms": 40.0, "max_ms": 51.0}
    report = {"settings": {"topics": 2000, "partitions": 1}, "looks": 20, "look_s": {"mean": 0.7, "max": 2.1},
              "frozen_objects": 109_000,
              "longest_gap_per_window": {"no look": {"thread": gaps, "process": gaps},
                                         "look": {"thread": {**gaps, "max_ms": 65.0}, "process": gaps}},
              "collector_pauses": {"generation 2": {"count": 20, "p50_ms": 12.7, "p90_ms": 37.2, "max_ms": 64.7}}}
    text = refresh_stall.table(report)
    assert text is not None
    assert "2,000 topics x 1; 20 looks" in text and "109,000 objects frozen" in text
    assert "5 / 40 / 65" in text and "generation 2: 20, 12.7 / 37.2 / 64.7" in text
    assert refresh_stall.table({"settings": {}}) is None  # a run that failed before measuring
