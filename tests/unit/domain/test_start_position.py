"""Where a route resumes: the lost range is exact, never a silent jump."""

from __future__ import annotations

import pytest

from replicator.domain.start_position import Reason, StartDecision, start_position

CASES = [
    # committed, low, high, start, ts offset -> decision
    (None, 0, 10, "earliest", None, StartDecision(0, Reason.NEW)),
    (None, 4, 10, "earliest", None, StartDecision(4, Reason.NEW)),
    (None, 4, 10, "latest", None, StartDecision(10, Reason.NEW)),
    (None, 4, 10, "timestamp", 7, StartDecision(7, Reason.NEW)),
    (None, 4, 10, "timestamp", None, StartDecision(10, Reason.NEW)),
    (6, 4, 10, "earliest", None, StartDecision(6, Reason.RESUME)),
    (10, 4, 10, "latest", None, StartDecision(10, Reason.RESUME)),
    (4, 4, 10, "earliest", None, StartDecision(4, Reason.RESUME)),
    (2, 4, 10, "earliest", None, StartDecision(4, Reason.RETENTION, (2, 4))),
    (2, 4, 10, "latest", None, StartDecision(4, Reason.RETENTION, (2, 4))),  # still copy what is left
    (15, 0, 3, "earliest", None, StartDecision(0, Reason.RESET)),
]


@pytest.mark.parametrize(("committed", "low", "high", "start", "ts", "expected"), CASES)
def test_start_position(committed: int | None, low: int, high: int, start: str, ts: int | None,
                        expected: StartDecision) -> None:
    assert start_position(committed, low, high, start, ts) == expected
