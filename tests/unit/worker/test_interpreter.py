"""The cycle collector held off while a topic refresh holds Kafka's answers on thousands of topics."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator

import pytest

from replicator.worker.interpreter import collector_paused


@pytest.fixture(autouse=True)
def _collector_on() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    if was:
        gc.enable()
    else:
        gc.disable()


def test_no_collection_starts_in_the_block_and_the_collector_is_back_after_it() -> None:
    started: list[int] = []

    def note(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            started.append(info["generation"])

    gc.callbacks.append(note)
    try:
        with collector_paused():
            assert not gc.isenabled()
            garbage = []
            for _ in range(20_000):  # cycles: far past generation 0's threshold
                cycle: list[object] = []
                cycle.append(cycle)
                garbage.append(cycle)
            del garbage
            during = list(started)
        assert gc.isenabled()
    finally:
        gc.callbacks.remove(note)
    assert during == []


def test_overlapping_holders_turn_it_back_on_only_when_the_last_leaves() -> None:
    first_in, second_in, first_out = threading.Event(), threading.Event(), threading.Event()
    seen: dict[str, bool] = {}

    def second() -> None:
        first_in.wait(5)
        with collector_paused():
            second_in.set()
            first_out.wait(5)
            seen["after the first left"] = gc.isenabled()

    thread = threading.Thread(target=second)
    thread.start()
    with collector_paused():
        first_in.set()
        assert second_in.wait(5)
    first_out.set()
    thread.join(5)
    assert seen == {"after the first left": False}
    assert gc.isenabled()


def test_a_block_that_raises_turns_it_back_on() -> None:
    with pytest.raises(RuntimeError), collector_paused():
        raise RuntimeError("a refresh failed")
    assert gc.isenabled()


def test_a_collector_turned_off_before_stays_off() -> None:
    gc.disable()
    with collector_paused():
        pass
    assert not gc.isenabled()
