"""The source positions an exactly-once route commits on the target, and where a partition resumes."""

from __future__ import annotations

import pytest

from replicator.domain.positions import (
    SourcePosition,
    decode_positions,
    encode_positions,
    resume_position,
    stored_at,
)


def test_positions_round_trip_through_the_offset_metadata() -> None:
    positions = {("orders", 3): SourcePosition(1200, "id-a"), ("refunds", 3): SourcePosition(7, None)}
    metadata = encode_positions(1_700_000_000_000, positions)
    assert decode_positions(metadata) == positions and stored_at(metadata) == 1_700_000_000_000
    assert len(metadata) < 120  # two source partitions: far below the brokers' 4 KiB


@pytest.mark.parametrize("metadata", [
    None, "", "1700000000000 id-a",  # an at-least-once note, not positions
    '{"v": 2, "s": []}', '{"v": 1, "s": [["t", 0, -1, null]]}', '{"v": 1, "s": [["t", "0", 5, null]]}',
    '{"v": 1, "s": [["t", 0, 5]]}', '{"v": 1, "s": [[1, 0, 5, null]]}', "[1, 2]", '{"v": 1, "s": {}}',
])
def test_metadata_it_did_not_write_reads_as_no_positions(metadata: str | None) -> None:
    assert decode_positions(metadata) == {}


def test_a_partition_resumes_at_the_furthest_known_position() -> None:
    assert resume_position([SourcePosition(10, "id"), SourcePosition(12, "id")], "id") == SourcePosition(12, "id")
    assert resume_position([None, SourcePosition(3, None)], "id") == SourcePosition(3, None)
    assert resume_position([None, None], "id") is None


def test_a_position_of_a_deleted_topic_of_the_same_name_is_set_aside() -> None:
    assert resume_position([SourcePosition(900, "old"), SourcePosition(4, "new")], "new") == SourcePosition(4, "new")
    # Only old ones: the furthest comes back, and the caller sees its id differs (the recreation is reported).
    assert resume_position([SourcePosition(900, "old"), None], "new") == SourcePosition(900, "old")
