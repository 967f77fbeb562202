"""The origin header: records never go back to the cluster they were born on."""

from __future__ import annotations

import pytest

from replicator.domain.provenance import (
    ORIGIN_HEADER,
    Header,
    Headers,
    origin_of,
    should_skip,
    with_origin,
)

USER = [("trace", b"abc"), ("k", None), ("trace", b"abc"), ("bin", b"\xff\x00")]

ORIGINS = [
    # headers, origin
    (None, None),
    ([], None),
    (USER, None),
    ([(ORIGIN_HEADER, b"primary")], "primary"),
    ([*USER, (ORIGIN_HEADER, b"primary")], "primary"),
    ([(ORIGIN_HEADER, b"primary"), (ORIGIN_HEADER, b"backup")], "primary"),  # the first wins
    ([(ORIGIN_HEADER, None), (ORIGIN_HEADER, b"backup")], "backup"),  # empty ones count as none
    ([(ORIGIN_HEADER, b"")], None),
    ([("MirrorFlow.Origin", b"primary")], None),  # header keys are case-sensitive
    ([(ORIGIN_HEADER, b"\xffprimary")], "\ufffdprimary"),  # malformed: kept, never raises
]


@pytest.mark.parametrize(("headers", "origin"), ORIGINS)
def test_origin_of(headers: Headers, origin: str | None) -> None:
    assert origin_of(headers) == origin


SKIPS = [
    # headers, target cluster, skip?
    (None, "primary", False),
    (USER, "primary", False),
    ([(ORIGIN_HEADER, b"primary")], "primary", True),
    ([(ORIGIN_HEADER, b"primary")], "backup", False),
    ([*USER, (ORIGIN_HEADER, b"backup")], "backup", True),
    ([(ORIGIN_HEADER, b"\xffprimary")], "primary", False),
]


@pytest.mark.parametrize(("headers", "target", "skip"), SKIPS)
def test_should_skip(headers: Headers, target: str, skip: bool) -> None:
    assert should_skip(headers, target) is skip


STAMPS = [
    # headers, source cluster, headers written to the target
    (None, "primary", [(ORIGIN_HEADER, b"primary")]),
    ([], "primary", [(ORIGIN_HEADER, b"primary")]),
    (USER, "primary", [*USER, (ORIGIN_HEADER, b"primary")]),  # order and duplicates kept
    ([(ORIGIN_HEADER, b"dr"), *USER], "backup", [(ORIGIN_HEADER, b"dr"), *USER]),
    (
        [(ORIGIN_HEADER, None)],
        "primary",
        [(ORIGIN_HEADER, None), (ORIGIN_HEADER, b"primary")],
    ),
]


@pytest.mark.parametrize(("headers", "source", "expected"), STAMPS)
def test_with_origin(headers: Headers, source: str, expected: Headers) -> None:
    before = None if headers is None else list(headers)
    assert with_origin(headers, source) == expected
    assert headers == before  # the consumer's list is never mutated


def test_a_record_keeps_its_first_origin_across_hops() -> None:
    first_hop = with_origin(list(USER), "primary")
    second_hop = with_origin(first_hop, "backup")
    assert second_hop is first_hop  # already stamped: no copy on the hot path
    assert origin_of(second_hop) == "primary"
    assert should_skip(second_hop, "primary")


def test_user_header_values_stay_the_same_objects() -> None:
    headers: list[Header] = [("blob", bytes(range(256)))]
    stamped = with_origin(headers, "primary")
    assert stamped[0] is headers[0]


def test_without_origin_drops_only_our_stamp_naming_the_cluster() -> None:
    from replicator.domain.provenance import without_origin

    headers = [("a", b"1"), (ORIGIN_HEADER, b"primary"), ("b", None)]
    assert without_origin(headers, "primary") == [("a", b"1"), ("b", None)]
    assert without_origin(headers, "backup") is headers  # born elsewhere: as it is
    assert without_origin(None, "primary") is None and without_origin([], "primary") == []
