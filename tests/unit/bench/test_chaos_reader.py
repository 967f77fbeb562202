"""The chaos harness's target reader: when it takes itself for stuck (its consumer is then made anew), and which
records it still waits for."""

from __future__ import annotations

from bench.chaoslib.reader import gaps, standing, stuck

A, B = ("src.t", 0), ("src.t", 1)


def test_a_position_that_stood_a_whole_look_below_the_targets_end_is_stuck() -> None:
    assert stuck({A: 10, B: 5}, {A: 10, B: 5}, {A: 12, B: 5}) == [A]


def test_a_position_that_moved_since_the_last_look_is_not_stuck() -> None:
    assert stuck({A: 8}, {A: 10}, {A: 12}) == []


def test_the_first_look_takes_nothing_for_stuck() -> None:
    assert stuck({}, {A: 10}, {A: 12}) == []


def test_a_partition_never_fetched_is_stuck_once_the_target_has_records_for_it() -> None:
    never = -1001  # librdkafka's OFFSET_INVALID: no position yet
    assert stuck({A: never, B: never}, {A: never, B: never}, {A: 3, B: 0}) == [A]


def test_a_partition_whose_end_is_unknown_is_not_stuck() -> None:
    assert stuck({A: 10}, {A: 10}, {}) == []


def test_a_consumer_that_returned_nothing_yet_stands_where_the_reader_last_read_never_at_the_start() -> None:
    never = -1001
    assert standing({A: never, B: 40}, {A: 57, B: 38}) == {A: 57, B: 40}
    assert standing({A: never}, {}) == {A: -1}  # nothing read from it at all: its start is right


def test_the_records_not_seen_nor_excused_are_named_and_the_settled_prefix_moves_past_what_arrived() -> None:
    seen = bytearray([1, 1, 0, 1, 0, 0])
    assert gaps(seen, 8, 0, {4}) == (2, [2, 5, 6, 7])


def test_numbers_beyond_the_wanted_count_are_not_waited_for() -> None:
    assert gaps(bytearray([1, 0, 0]), 1, 0, set()) == (1, [])


def test_a_look_starts_at_the_settled_prefix_and_never_goes_back() -> None:
    assert gaps(bytearray([0, 0, 1]), 3, 2, set()) == (3, [])
