"""A blocking call run against a deadline (librdkafka's transactional calls may never return)."""

from __future__ import annotations

import threading

import pytest

from replicator.worker import bounded as module
from replicator.worker.bounded import Hung, bounded


def test_a_call_that_returns_in_time_returns_and_raises_as_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(module, "GRACE_S", 0.05)
    seen: list[int] = []
    bounded("append", lambda: seen.append(1), 1.0)
    assert seen == [1]
    with pytest.raises(ValueError, match="refused"):
        bounded("refuse", lambda: (_ for _ in ()).throw(ValueError("refused")), 1.0)


def test_a_call_that_never_returns_is_given_up_at_its_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(module, "GRACE_S", 0.05)
    release = threading.Event()
    try:
        with pytest.raises(Hung, match="stuck did not return"):
            bounded("stuck", lambda: release.wait(30) and None, 0.05)
    finally:
        release.set()  # the abandoned call ends with the test
