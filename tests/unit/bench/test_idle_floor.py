"""bench/idle_floor.py: bad sizes and splits are refused by name before anything starts; topics are dealt over
the consumers without loss; the table reads the report."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))  # the bench's scripts import by file name

import idle_floor


@pytest.mark.parametrize(("argv", "named"), [
    (["--topics", "0"], "--topics must be at least 1"),
    (["--seconds", "0"], "--seconds must be at least 1"),
    (["--settle", "-1"], "--settle must not be negative"),
    (["--splits", "1,x"], "--splits: 'x' is not a number of consumers"),
    (["--splits", "2,0"], "--splits: 0 consumers: use at least 1"),
    (["--fetch-waits", "500,-5"], "--fetch-waits: -5 ms: use at least 1"),
])
def test_bad_input_is_refused_by_name(argv: list[str], named: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        idle_floor.main(argv)
    assert exit_.value.code == 2
    assert named in capsys.readouterr().err


def test_every_topic_goes_to_exactly_one_consumer() -> None:
    names = [f"t{i}" for i in range(7)]
    groups = idle_floor.split(names, 3)
    assert [len(g) for g in groups] == [3, 2, 2]
    assert sorted(n for g in groups for n in g) == sorted(names)
    assert idle_floor.split(["a", "b"], 4) == [["a"], ["b"]]  # no consumer holds nothing


def test_every_split_runs_at_the_first_wait_and_each_other_wait_with_one_consumer() -> None:
    assert idle_floor.plain_holders([1, 2, 4], [500, 5000]) == [(1, 500), (2, 500), (4, 500), (1, 5000)]
    assert idle_floor.plain_holders([2], [500]) == [(2, 500)]


def test_the_table_shows_each_holder_with_its_share_of_topics() -> None:
    report = {"settings": {"topics": 2000, "partitions": 1, "settle": 10, "seconds": 20},
              "holders": [{"holder": "MirrorFlow worker", "cpu_pct": 9.9, "threads": 22,
                           "threads_cpu_pct": {"rdk:broker1": 6.6, "python": 1.05}},
                          {"holder": "librdkafka alone: 2 consumers, fetch.wait.max.ms 500", "topics_each": 1000,
                           "cpu_pct": 4.1,
                           "threads": 9, "threads_cpu_pct": {"rdk:broker1": 3.9}}]}
    text = idle_floor.table(report)
    assert text is not None
    assert "2,000 topics x 1 = 2,000 partitions held" in text
    worker, plain = text.splitlines()[-2:]
    assert worker.startswith("MirrorFlow worker") and "2,000" in worker and "9.9" in worker and "python 1.1" in worker
    assert "1,000" in plain and "4.1" in plain and "rdk:broker1 3.9" in plain
    assert idle_floor.table({"settings": {}, "holders": []}) is None  # a run that failed before measuring
