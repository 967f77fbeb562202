"""The chaos harness's target reader: when it takes itself for stuck (its consumer is then made anew), and which
records it still waits for."""

from __future__ import annotations

from types import SimpleNamespace

from confluent_kafka import KafkaError, KafkaException, TopicPartition

from bench.chaoslib.reader import TargetReader, gaps, standing, stuck

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


class _Answer:
    def __init__(self, offset: int | None) -> None:
        self._offset = offset

    def result(self) -> object:
        if self._offset is None:
            raise KafkaException(KafkaError(KafkaError.NOT_LEADER_FOR_PARTITION))
        return SimpleNamespace(offset=self._offset)


class _Admin:
    """Answers ListOffsets like confluent-kafka's AdminClient: one future per partition, of one request."""

    def __init__(self, ends: dict[tuple[str, int], int | None]) -> None:
        self.ends, self.requests, self.renewals = ends, 0, 0

    def list_topics(self, timeout: float) -> None:
        self.renewals += 1

    def list_offsets(self, asked: dict[TopicPartition, object], request_timeout: float
                     ) -> dict[TopicPartition, _Answer]:
        self.requests += 1
        return {tp: _Answer(self.ends[(tp.topic, tp.partition)]) for tp in asked}


def test_the_ends_of_a_thousand_partitions_are_one_request_and_one_that_fails_is_left_out() -> None:
    """And the failure renews the client's metadata: librdkafka's admin client refuses every later ListOffsets of a
    partition whose leader was elected anew (a target restart) until it is renewed (FENCED_LEADER_EPOCH)."""
    wanted: dict[tuple[str, int], int | None] = {(f"t{n // 4}", n % 4): n for n in range(1000)}
    wanted[("t3", 1)] = None  # its leader moved: no end, so it stood for nothing
    reader = TargetReader("127.0.0.1:1")
    reader._admin = admin = _Admin(wanted)  # type: ignore[assignment]
    ends = reader._ends(sorted(wanted))
    assert admin.requests == 1 and admin.renewals == 1
    assert ends == {tp: end for tp, end in wanted.items() if end is not None}
    assert reader._ends([]) == {} and admin.requests == 1
    del wanted[("t3", 1)]
    assert reader._ends(sorted(wanted)) == wanted and admin.renewals == 1
