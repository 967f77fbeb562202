"""The scale bench's restart: a partition counts once its own marker is on the target, first sighting only; the
restart is over only when every partition's marker is."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))  # the bench's scripts import by file name

from scale_restart import restart_figures, take_markers


class Record:
    def __init__(self, topic: str, partition: int, value: bytes | None, error: object = None) -> None:
        self._topic, self._partition, self._value, self._error = topic, partition, value, error

    def topic(self) -> str:
        return self._topic

    def partition(self) -> int:
        return self._partition

    def value(self) -> bytes | None:
        return self._value

    def error(self) -> object:
        return self._error


def test_only_this_runs_marker_counts_and_its_first_sighting_is_kept() -> None:
    seen: dict[tuple[str, int], float] = {}
    take_markers(seen, [Record("t", 0, b"x" * 100), Record("t", 1, b"restart-marker-old"),
                        Record("t", 2, b"restart-marker-new")], b"restart-marker-new", 1.5)
    take_markers(seen, [Record("t", 2, b"restart-marker-new"), Record("t", 0, b"restart-marker-new"),
                        Record("t", 1, None, error="partition EOF")], b"restart-marker-new", 2.5)
    assert seen == {("t", 2): 1.5, ("t", 0): 2.5}


def test_the_restart_ends_with_the_last_marker_and_has_no_end_while_one_is_missing() -> None:
    seen = {("t", 0): 4.0, ("t", 1): 1.0, ("t", 2): 2.0}
    assert restart_figures(seen, 3) == {"partitions": 3, "seen": 3, "first_s": 1.0, "half_s": 2.0, "restart_s": 4.0}
    assert restart_figures(seen, 4)["restart_s"] is None
    assert restart_figures({}, 4) == {"partitions": 4, "seen": 0}
