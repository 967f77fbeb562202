"""``make test``'s two parts: the markers each runs with, and the one exit code they give together."""

from __future__ import annotations

import pytest

from tests.run_suite import combined, part_markers


@pytest.mark.parametrize(("markers", "chaos", "expected"), [
    ("", False, "not chaos"),
    ("", True, "chaos"),
    ("  ", True, "chaos"),
    ("not kafka and not spark", False, "(not kafka and not spark) and not chaos"),
    ("kafka or spark", True, "(kafka or spark) and chaos"),  # an "or" stays inside its brackets
])
def test_part_markers(markers: str, chaos: bool, expected: str) -> None:
    assert part_markers(markers, chaos) == expected


@pytest.mark.parametrize(("codes", "expected"), [
    ([0, 0], 0),
    ([0, 5], 0),  # the pure part has no fault run: nothing wrong
    ([5, 0], 0),
    ([5, 5], 5),
    ([1, 0], 1),
    ([0, 1], 1),
    ([2, 1], 2),  # the first failure
    ([5, 3], 3),
])
def test_combined(codes: list[int], expected: int) -> None:
    assert combined(codes) == expected
