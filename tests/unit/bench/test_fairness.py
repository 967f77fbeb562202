"""The fairness bench's pure parts: latency per window of CreateTime, and --variant parsing."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))  # the bench's scripts import by file name

from fairness import parse_variant
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
