"""The scale bench's MirrorMaker 2 checkpoints: when every expected checkpoint had appeared (pure)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))  # the bench's scripts import by file name

from scale_control import first_complete_s


def test_the_set_is_complete_when_its_last_distinct_key_first_appeared() -> None:
    seen = {b"g1/t/0": 1_000, b"g2/t/0": 4_500, b"g1/t/1": 2_000}  # first timestamps; repeats are not counted
    assert first_complete_s(seen, 3, launched_ms=500) == 4.0
    assert first_complete_s(seen, 2, launched_ms=500) == 1.5  # the second distinct key to appear


def test_fewer_than_expected_is_no_time() -> None:
    assert first_complete_s({b"g1/t/0": 1_000}, 2, launched_ms=0) is None
    assert first_complete_s({}, 0, launched_ms=0) is None
