"""shielded: nothing a callback raises reaches librdkafka; its owner is told, once per failure."""

from __future__ import annotations

import pytest

from replicator.worker.callbacks import shielded


class Owner:
    def __init__(self, fail: BaseException | None) -> None:
        self.fail = fail
        self.calls: list[tuple[object, ...]] = []
        self.failed: list[tuple[str, Exception]] = []

    def callback_failed(self, name: str, exc: Exception) -> None:
        self.failed.append((name, exc))

    @shielded("delivery report")
    def on_delivery(self, *args: object) -> int:
        self.calls.append(args)
        if self.fail is not None:
            raise self.fail
        return 42


@pytest.mark.parametrize("exc", [ValueError("bug"), KeyError("orders"), BufferError("Local: Queue full"),
                                 AssertionError("invariant"), SystemError("C")])
def test_an_exception_of_a_callback_goes_to_its_owner_not_to_the_caller(exc: Exception) -> None:
    owner = Owner(exc)
    assert owner.on_delivery("error", "message") is None
    assert owner.calls == [("error", "message")]
    assert owner.failed == [("delivery report", exc)]


def test_a_callback_that_works_tells_its_owner_nothing_and_returns_none() -> None:
    owner = Owner(None)
    assert owner.on_delivery(1) is None  # librdkafka ignores what a callback returns
    assert owner.calls == [(1,)]
    assert owner.failed == []


@pytest.mark.parametrize("exc", [KeyboardInterrupt(), SystemExit(1)])
def test_an_interrupt_is_not_swallowed(exc: BaseException) -> None:
    owner = Owner(exc)
    with pytest.raises(type(exc)):
        owner.on_delivery()
    assert owner.failed == []


def test_the_shielded_callback_keeps_its_name() -> None:
    assert Owner.on_delivery.__name__ == "on_delivery"
