"""The source ranges an audit leaves out: before the route's first copy, less what backfills copied."""

from __future__ import annotations

import pytest

from replicator.domain.audit_scope import left_out, never_copied


@pytest.mark.parametrize(("first", "backfilled", "expected"), [
    (None, [], ()),  # the route copied nothing yet: nothing to leave out (the committed offsets say pending)
    (0, [], ()),  # it copied from the first offset
    (100, [], ((0, 100),)),
    (100, [(0, 100)], ()),  # a backfill brought all of it
    (100, [(20, 50)], ((0, 20), (50, 100))),
    (100, [(50, 80), (10, 30), (25, 60)], ((0, 10), (80, 100))),  # overlapping, out of order
    (100, [(90, 400)], ((0, 90),)),  # past the route's first copy: counted from there on anyway
    (100, [(120, 130), (-5, 3)], ((3, 100),)),
])
def test_never_copied(first: int | None, backfilled: list[tuple[int, int]],
                      expected: tuple[tuple[int, int], ...]) -> None:
    assert never_copied(first, backfilled) == expected


def test_left_out_per_partition() -> None:
    assert left_out({0: 10, 2: 5}, {2: [(0, 5)]}, 3) == ((0, 0, 10),)
    assert left_out({1: 4}, {}, 3) == ((1, 0, 4),)
