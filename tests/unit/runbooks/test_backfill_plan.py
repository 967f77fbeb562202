"""Which offsets a backfill copies: cut at the route's start by time, refused by offsets unless allowed;
refused where a done or running backfill copied them, unless allowed."""

from __future__ import annotations

import datetime as dt

import pytest

from replicator.domain.backfill_run import (
    BackfillMode,
    BackfillRun,
    BackfillStatus,
    overlaps,
    refusal,
)
from replicator.errors import UsageError
from replicator.runbooks.backfill.plan import Bounds, PartitionRange, parse_offset_ranges, plan_ranges

BOUNDS = {0: Bounds(0, 100, 40), 1: Bounds(10, 50, None), 2: Bounds(0, 30, 0)}


@pytest.mark.parametrize(("requested", "by_offsets", "overlap_ok", "expected"), [
    ({0: (0, None), 1: (0, None), 2: (0, None)}, False, False,  # by time: cut at the route start
     [PartitionRange(0, 0, 40, True), PartitionRange(1, 10, 50), PartitionRange(2, 0, 0, True)]),
    ({0: (5, 30)}, False, False, [PartitionRange(0, 5, 30)]),
    ({0: (0, 60)}, False, True, [PartitionRange(0, 0, 60)]),
    ({0: (0, 40), 1: (10, 20)}, True, False, [PartitionRange(0, 0, 40), PartitionRange(1, 10, 20)]),
    ({0: (0, None)}, True, False, [PartitionRange(0, 0, 40, True)]),  # no end given: up to the route start
    ({0: (30, 70)}, True, True, [PartitionRange(0, 30, 70)]),
])
def test_plan(requested, by_offsets: bool, overlap_ok: bool, expected: list[PartitionRange]) -> None:  # type: ignore[no-untyped-def]
    assert plan_ranges("t", requested, BOUNDS, by_offsets, overlap_ok) == expected


@pytest.mark.parametrize(("requested", "message"), [
    ({0: (0, 41)}, "backfill of t refused: partition 0: offsets 0-41 overlap what the route copied from offset 40"),
    ({1: (0, 20)}, "partition 1: offsets 0-20 are not within 10-50"),
    ({1: (10, 51)}, "partition 1: offsets 10-51 are not within 10-50"),
    ({7: (0, 1)}, "partition 7 does not exist (topic t has 3)"),
])
def test_refused(requested, message: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(UsageError) as refused:
        plan_ranges("t", requested, BOUNDS, by_offsets=True)
    assert message in str(refused.value)


def test_every_refusal_is_named_at_once() -> None:
    with pytest.raises(UsageError) as refused:
        plan_ranges("t", {0: (0, 50), 2: (0, 5)}, BOUNDS, by_offsets=True)
    assert "partition 0" in str(refused.value) and "partition 2" in str(refused.value)


@pytest.mark.parametrize(("start", "end", "expected"), [
    ("0=5,1=7", None, {0: (5, None), 1: (7, None)}),
    ("0=5, 1=7", "1=9", {0: (5, None), 1: (7, 9)}),
])
def test_offset_ranges(start: str, end: str | None, expected: dict[int, tuple[int, int | None]]) -> None:
    assert parse_offset_ranges(start, end) == expected


@pytest.mark.parametrize(("start", "end", "message"), [
    ("0:5", None, r"--from-offset: expected PARTITION=OFFSET\[,PARTITION=OFFSET...\], got '0:5'"),
    ("0=5", "1=9", "--to-offset: partition 1 has no --from-offset"),
    ("0=5", "0=4", "partition 0: --to-offset 4 is before --from-offset 5"),
    ("0=-1", None, "got '0=-1'"),
])
def test_bad_offset_ranges(start: str, end: str | None, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        parse_offset_ranges(start, end)


T0 = dt.datetime(2026, 11, 26, 3, 0, 5, tzinfo=dt.UTC)


def _run(key: str, ranges: list[PartitionRange], status: BackfillStatus = BackfillStatus.DONE) -> BackfillRun:
    return BackfillRun(key, "r", "t", "primary.t", BackfillMode.TIME, tuple(ranges), T0, status)


EARLIER = [_run("a", [PartitionRange(0, 0, 40), PartitionRange(1, 10, 20)]),
           _run("b", [PartitionRange(0, 50, 60)], BackfillStatus.RUNNING),
           _run("c", [PartitionRange(1, 0, 50)], BackfillStatus.FAILED)]


@pytest.mark.parametrize(("planned", "expected"), [
    ([PartitionRange(0, 40, 50)], []),  # right after a: offsets are [start, end)
    ([PartitionRange(0, 39, 50)], [(0, 39, 40, "a")]),
    ([PartitionRange(0, 0, 100)], [(0, 0, 40, "a"), (0, 50, 60, "b")]),  # running runs block too
    ([PartitionRange(1, 0, 10), PartitionRange(1, 20, 50)], []),  # around a; c failed: does not block
    ([PartitionRange(1, 15, 16), PartitionRange(0, 55, 56)], [(0, 55, 56, "b"), (1, 15, 16, "a")]),
    ([PartitionRange(0, 5, 5), PartitionRange(2, 0, 40)], []),  # empty range; a partition never backfilled
])
def test_overlaps_with_done_and_running_runs(planned: list[PartitionRange],
                                             expected: list[tuple[int, int, int, str]]) -> None:
    found = overlaps(planned, EARLIER, "new")
    assert [(o.partition, o.start, o.end, o.earlier.run_key) for o in found] == expected


def test_a_run_never_overlaps_itself() -> None:  # a retried task plans its own run again
    assert overlaps([PartitionRange(0, 0, 40)], EARLIER, "a") == []


def test_the_refusal_names_the_earlier_run_when_and_its_range() -> None:
    message = refusal("t", overlaps([PartitionRange(0, 30, 55)], EARLIER, "new"))
    assert message == (
        "backfill of t refused: partition 0: offsets 30-40 were copied by backfill run a (done, started"
        " 2026-11-26 03:00:05Z, its offsets 0-40); partition 0: offsets 50-55 are being copied by backfill run b"
        " (running, started 2026-11-26 03:00:05Z, its offsets 50-60); pass overlap_ok (--overlap-ok) to copy"
        " them again anyway (they will be on the replica twice)")


def test_a_backfill_that_copies_nothing_says_why() -> None:
    """#15: a range the route's own start cut to nothing ended 'done, 0 records' with no word why."""
    from replicator.cli.backfill_cmd import render
    from replicator.domain.backfill_run import nothing_to_copy

    cut = [PartitionRange(0, 40, 40, clamped=True), PartitionRange(1, 7, 7)]
    assert "the range was cut at the route's first copied offset" in str(nothing_to_copy(cut))
    assert "no record of this topic in the range" in str(nothing_to_copy([PartitionRange(0, 5, 5)]))
    assert nothing_to_copy([PartitionRange(0, 5, 6), PartitionRange(1, 3, 3, clamped=True)]) is None
    result = {"topic": "t", "target_topic": "p.t", "written": {}, "landed": {}, "run_key": "k", "ui_url": "-",
              "check": {"missing": 0, "duplicates": 0, "partitions": {}},
              "ranges": [{"partition": 0, "start": 40, "end": 40, "clamped": True}]}
    assert "nothing to copy: the route itself copied this topic" in render(result)
