"""The exactly-once bench's pure parts: its options and its table."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))  # the bench's scripts import by file name

from exactly_once import parse_args, peers, table


def _copy(rate: float) -> dict[str, float]:
    return {"records_per_s": rate, "mb_per_s": rate / 10_000, "cpu_s_per_gib": 12.5}


def test_the_table_compares_the_guarantees_and_the_peers() -> None:
    report = {"sizes": [{"size": 100, "records": 1_000, "runs": [
        {"label": "MirrorFlow at-least-once", "copy": _copy(200_000)},
        {"label": "MirrorFlow exactly-once", "copy": _copy(180_000), "latency_rate": 36_000,
         "latency": {"p50_ms": 70, "p99_ms": 140}},
        {"label": "MirrorMaker 2 exactly-once", "error": "MM2 copy stalled"}]}]}
    text = table(report)
    assert "exactly-once / at-least-once 0.90x; MirrorFlow / MM2, both exactly-once -" in text
    assert "MirrorMaker 2 exactly-once          FAILED: MM2 copy stalled" in text
    assert "36,000" in text.splitlines()[4] and "70" in text.splitlines()[4]


def test_quick_runs_shorter_and_bad_sizes_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    quick = parse_args(["--quick", "--sizes", "100"])
    assert (quick.records, quick.latency_seconds, quick.sizes) == (200_000, 10.0, [100])
    with pytest.raises(SystemExit):
        parse_args(["--sizes", "100,big"])
    assert "--sizes: comma-separated integers" in capsys.readouterr().err


def test_more_intervals_add_exactly_once_runs_and_bad_ones_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    args = parse_args(["--intervals", "20, 5"])
    assert args.intervals == [20, 5]
    assert [(label, alias) for label, alias, _ in peers(args.intervals)] == [
        ("MirrorFlow at-least-once", "alo"), ("MirrorFlow exactly-once", "eos"),
        ("MirrorFlow exactly-once, 20 ms", "eos20"), ("MirrorFlow exactly-once, 5 ms", "eos5"),
        ("MirrorMaker 2 exactly-once", "source")]
    for bad in ("fast", "0"):
        with pytest.raises(SystemExit):
            parse_args(["--intervals", bad])
    assert "--intervals:" in capsys.readouterr().err
