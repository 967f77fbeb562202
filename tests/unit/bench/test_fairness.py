"""The fairness bench's pure parts: latency per window of CreateTime, --variant parsing, the warm-up run's place."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))  # the bench's scripts import by file name

from fairness import parse_args, parse_variant, table
from fairness_probe import window

# (CreateTime ms, latency ms)
SAMPLES = [(1000, 50.0), (1500, 900.0), (1999, 100.0), (2000, 10.0), (2600, 20.0), (4000, 5.0)]


@pytest.mark.parametrize(
    ("start", "end", "records", "p50", "max_ms", "per_second"),
    [
        (1000, 2000, 3, 100.0, 900.0, [900]),  # end excluded: the record created at 2000 is "after"
        (2000, 4000, 2, 10.0, 20.0, [20]),
        (1000, 5000, 6, 20.0, 900.0, [900, 20, 5]),
        (5000, 6000, 0, None, None, []),
    ],
)
def test_window(start: int, end: int, records: int, p50: float | None, max_ms: float | None,
                per_second: list[int]) -> None:
    result = window(SAMPLES, start, end)
    assert (result["records"], result["p50_ms"], result["max_ms"]) == (records, p50, max_ms)
    assert result["max_ms_per_second"] == per_second


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("fast=consumer.fetch.queue.backoff.ms=20", ("fast", {"consumer": {"fetch.queue.backoff.ms": "20"}})),
        ("both=consumer.queued.min.messages=1000,producer.linger.ms=0",
         ("both", {"consumer": {"queued.min.messages": "1000"}, "producer": {"linger.ms": "0"}})),
        ("plain=", ("plain", {})),
    ],
)
def test_parse_variant(text: str, expected: tuple[str, dict[str, dict[str, str]]]) -> None:
    assert parse_variant(text) == expected


@pytest.mark.parametrize("text", ["x=admin.retries=1", "x=consumer.fetch.queue.backoff.ms", "x=consumer"])
def test_parse_variant_refuses(text: str) -> None:
    with pytest.raises(SystemExit):
        parse_variant(text)


def _run(label: str, records_per_s: int, p99: float) -> dict[str, object]:
    return {"label": label, "drain": {"startup_s": 3.0, "drain_s": 10.0, "records_per_s": records_per_s},
            "during": {"records": 100, "p50_ms": 1.0, "p99_ms": p99, "max_ms": p99}, "after": {}}


def test_the_warm_up_run_is_left_out_of_the_rows_and_said_under_them() -> None:
    report = {"settings": {"backlog": 1000, "small": 10, "small_rate": 50}, "machine": {"cpus": 2}, "wall_s": 60.0,
              "warmup": _run("MirrorFlow warm-up", 48_000, 2600.0),
              "runs": [_run("MirrorFlow default", 85_000, 1100.0)]}
    lines = table(report).splitlines()
    assert [line.split()[1] for line in lines if line.startswith("MirrorFlow")] == ["default"]
    said = "(left out: a warm-up run of MirrorFlow's defaults first, drain 48,000 rec/s, p99 during it 2,600 ms)"
    assert said in lines


def test_the_warm_up_run_is_on_unless_refused() -> None:
    assert parse_args([]).warmup and not parse_args(["--no-warmup"]).warmup
