"""The worker's watchdogs: a producer that reports nothing, a loop that does not turn."""

from __future__ import annotations

import logging
import threading
import time

import pytest

from replicator.testing.process import FakeProcess
from replicator.worker.stall import LoopWatch, ProducerWatch
from tests.fake_route import wait_until


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize(("events", "due"), [
    ([("wait", 59.0)], [False]),  # not silent long enough
    ([("wait", 61.0)], [True]),
    ([("wait", 61.0), ("wait", 1.0)], [True, False]),  # probed just now: not again before probe_every
    ([("wait", 61.0), ("wait", 10.0)], [True, True]),  # still silent: look again
    ([("wait", 50.0), ("report", 0), ("wait", 50.0)], [False, False, False]),  # reports reset the silence
    ([("wait", 50.0), ("idle", 0), ("wait", 50.0)], [False, False, False]),  # nothing in flight: nothing late
])
def test_producer_watch_is_due_after_a_silence_with_records_in_flight(events: list[tuple[str, float]],
                                                                       due: list[bool]) -> None:
    clock = Clock()
    watch = ProducerWatch(after=60.0, probe_every=10.0, clock=clock)
    seen = []
    for what, seconds in events:
        clock.now += seconds
        if what == "report":
            watch.reported()
        elif what == "idle":
            watch.idle()
        seen.append(watch.due())
    assert seen == due


def blocked_in_a_call(release: threading.Event) -> None:
    release.wait(30)


def test_a_loop_that_does_not_turn_is_named_once_and_its_return_too(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="replicator.worker.stall")
    release, done = threading.Event(), threading.Event()
    watches: list[LoopWatch] = []

    def loop() -> None:
        watch = LoopWatch("r", after=0.2, check_every=0.02, ours="/tests/unit/")
        watches.append(watch)
        watch.start()
        watch.beat()
        blocked_in_a_call(release)
        watch.beat()
        watch.stop()
        done.set()

    threading.Thread(target=loop, daemon=True).start()
    wait_until(lambda: "has not turned" in caplog.text, timeout=10, what="the hang reported")
    release.set()
    wait_until(done.is_set, timeout=10, what="the loop")
    lines = [r.getMessage() for r in caplog.records]
    hung = [line for line in lines if "has not turned" in line]
    assert len(hung) == 1, hung
    assert "tests/unit/worker/test_stall.py:" in hung[0] and "blocked_in_a_call in wait" in hung[0], hung
    assert sum("turns again" in line for line in lines) == 1


def test_turns_that_overlap_a_topic_refresh_are_counted_apart() -> None:
    from prometheus_client import REGISTRY

    def counted(name: str) -> float:
        return REGISTRY.get_sample_value(f"{name}_count", {"route": "refreshing-r"}) or 0.0

    watch = LoopWatch("refreshing-r", after=60)
    watch.beat()  # no refresh
    watch.beat(refreshing=True)  # a turn that ended while one ran
    watch.beat()  # a turn that began while one ran
    watch.beat()  # none again
    assert counted("mirrorflow_loop_turn_seconds") == 4
    assert counted("mirrorflow_loop_turn_while_refreshing_seconds") == 2


def test_a_process_that_stood_still_is_told_from_a_loop_that_only_took_long() -> None:
    """The watch's own ticks stop only when the whole process does (a fake process's frozen threads block in
    ``tick``, and it uses no CPU meanwhile); a loop that merely has not turned for a while leaves them going."""
    process = FakeProcess("still")
    watch = LoopWatch("still-r", after=60, check_every=0.02, tick=process.checkpoint, cpu=process.cpu_seconds)
    watch.start()
    try:
        started = watch.ticked_at
        wait_until(lambda: watch.ticked_at - started >= 0.3, timeout=10, what="ticks while the loop does not turn")
        assert watch.stood_still() < 0.2
        process.frozen = True  # SIGSTOP
        wait_until(lambda: watch.stood_still() >= 0.4, timeout=10, what="the stand-still told while it lasts")
        frozen_at = watch.ticked_at
        process.frozen = False  # SIGCONT: what the process runs before the watch's tick comes off the gap
        wait_until(lambda: watch.ticked_at > frozen_at, timeout=10, what="ticks again")
        assert watch.stood_still() >= 0.3  # kept until the loop's next turn
        watch.beat()
        assert watch.stood_still() < 0.2
    finally:
        process.frozen = False
        watch.stop()


def _holding_the_gil(at_least: float) -> float:
    """Run a call that holds the GIL (the builtin ``sum`` over a range never lets another thread in) for at least
    ``at_least`` s, as librdkafka's pause of 10,000 partitions does; its seconds."""
    n = 1_000_000
    while True:
        started = time.monotonic()
        sum(range(n))
        took = time.monotonic() - started
        if took >= at_least:
            return took
        n *= 2


def test_a_long_call_that_holds_the_gil_is_not_the_process_standing_still() -> None:
    """Found at 10,000 partitions: each pause of them held the GIL 5-7 s, the watch could not tick, and the worker
    took itself for frozen, joined the group anew, was given the partitions, paused them... and never copied. The
    process ran all along (its CPU time says so): it did not stand still."""
    watch = LoopWatch("gil-r", after=60, check_every=0.02)
    watch.start()  # this thread is the loop
    try:
        took = _holding_the_gil(0.4)
        # Without the CPU reading the whole call (less one tick) is standing still; with it, none of it, unless
        # this test process got under an eighth of a core through it.
        assert watch.stood_still() < 0.75 * took
        wait_until(lambda: watch.ticked_at > time.monotonic() - 0.1, timeout=10, what="the watch ticks again")
        assert watch.stood_still() < 0.75 * took  # the gap it saw on its tick after the call too
    finally:
        watch.stop()


def test_a_process_using_no_cpu_while_its_watch_cannot_tick_stood_still() -> None:
    """The other side: no CPU used through a gap (SIGSTOP stops every thread) is the whole gap standing still."""
    cpu, running = [5.0], threading.Event()
    running.set()
    watch = LoopWatch("nocpu-r", after=60, check_every=0.02, tick=lambda: running.wait(30), cpu=lambda: cpu[0])
    watch.start()
    try:
        running.clear()
        frozen_at = time.monotonic()
        wait_until(lambda: time.monotonic() - frozen_at >= 0.4, timeout=10, what="0.4 s")
        assert watch.stood_still() >= 0.3
        cpu[0] += 10.0  # had it run through the gap instead, the gap is no standing still
        assert watch.stood_still() == 0.0
    finally:
        running.set()
        watch.stop()
