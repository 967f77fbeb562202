"""Log lines name a few topics or partitions and count the rest: a worker of 2,000 partitions wrote 2,000
lines on start and 40 KB lines at each assignment."""

from __future__ import annotations

import logging

import pytest

from replicator.logs import listed


def test_a_short_list_is_named_whole_and_an_empty_one_is_a_dash() -> None:
    assert listed(["a[0]", "b[1]"]) == "a[0],b[1]"
    assert listed([]) == "-"
    assert listed(iter(["x"])) == "x"


def test_a_long_list_names_the_first_and_counts_the_rest(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    names = [f"t{i:04d}" for i in range(2_000)]
    line = listed(names, most=3)
    assert line == "t0000,t0001,t0002,... (+1,997 more)"
    assert listed(names[:3], most=3) == "t0000,t0001,t0002"


def test_at_debug_every_item_is_named(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    names = [f"t{i}" for i in range(50)]
    assert listed(names, most=3) == ",".join(names)
