"""Two watchdogs of a worker's progress: a producer that no longer reports, a loop that no longer turns.

A route whose target answers must see its records acknowledged. If the producer holds
records and reports nothing for ``after`` seconds while the target answers a metadata
request, librdkafka's producer is wedged (a state it does not leave by itself: seen once
after a clean target restart, records in flight and no report for minutes). The worker
then replaces the producer and copies again from the last acknowledged record
(duplicates, no loss). A target that does not answer is an outage: waited for, as ever.

The loop itself is watched from a thread: a loop that has not turned for ``after``
seconds is logged once with the place it is in (the innermost frame of our code), and
once when it turns again. That makes a hang a line in the log instead of silence.

The same thread ticks every ``TICK_S``: a long gap between its ticks, in which the process
used no CPU, is time the whole process stood still (SIGSTOP, a suspended VM, a process not
scheduled). A busy loop leaves the ticks going; a call into librdkafka that holds the GIL
stops them too, but the process runs meanwhile, and its CPU time says so. The loop asks
after each turn and each read of the source: a worker that stood still past a few
seconds may have lost its partitions to others meanwhile.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Callable
from types import FrameType

from confluent_kafka import KafkaException, Producer

from replicator.worker import metrics

log = logging.getLogger(__name__)


class ProducerWatch:
    """When the producer last made progress, and whether it is time to look at the target."""

    def __init__(self, after: float, probe_every: float = 10.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.after, self.probe_every, self.clock = after, probe_every, clock
        self.progress_at = clock()
        self._probed_at = float("-inf")

    def idle(self) -> None:
        """Nothing is in flight: nothing can be late."""
        self.progress_at = self.clock()

    def reported(self) -> None:
        """A delivery report arrived (acknowledged or not): the producer works."""
        self.progress_at = self.clock()

    def silent_for(self) -> float:
        """Seconds since the producer last made progress."""
        return self.clock() - self.progress_at

    def due(self, after: float | None = None) -> bool:
        """Records in flight with no report for ``after`` s (the watch's own by default), and no look at the
        target lately."""
        now, after = self.clock(), self.after if after is None else after
        if now - self.progress_at < after or now - self._probed_at < self.probe_every:
            return False
        self._probed_at = now
        return True


def discard(producer: Producer) -> None:
    """Drop a wedged producer without waiting for it: purged and destroyed in a thread of its own (destroying
    it may take a while). Its delivery reports are never served, so it settles or commits nothing."""
    def purge() -> None:
        try:
            producer.purge(in_queue=True, in_flight=True, blocking=False)
        except (KafkaException, RuntimeError) as exc:
            log.debug("purging a replaced producer error=%s", exc)

    threading.Thread(target=purge, name="discard-producer", daemon=True).start()


TICK_S = 0.5  # the watch thread's tick
# A CPU second the process used in a gap between the watch's ticks takes this many seconds off the gap's standing
# still: a process held up by a call that holds the GIL, on half a core or more, did not stand still at all; one
# SIGSTOPped ran at most the part of a tick before the stop (a whole tick on both cores at worst, 2 s here).
CPU_WEIGHT = 2.0


class LoopWatch:
    """A daemon thread that names where the loop hangs (``beat`` is called by the loop each turn) and tells
    how long the process stood still (``stood_still``). ``tick`` is called at each of its ticks: nothing for a
    real process; a fake process's frozen threads block there, as a real one's stop wherever they are.

    A gap between the watch's ticks is not enough to tell: the watch is a Python thread, and a call into
    librdkafka that holds the GIL keeps it from ticking as surely as SIGSTOP does (pausing 10,000 partitions
    took 5-7 s so, on one core). So the process's CPU time (``cpu``, every thread's) is read at each tick: a
    process that stood still used none, one held up by a long call used the CPU that call ran on. A gap counts
    as standing still for what is left of it after ``CPU_WEIGHT`` times the CPU seconds the process used in it.
    """

    def __init__(self, route: str, after: float, check_every: float = TICK_S, ours: str = "/replicator/",
                 tick: Callable[[], object] = lambda: None, cpu: Callable[[], float] = time.process_time) -> None:
        self.route, self.after, self.check_every, self.ours = route, after, check_every, ours
        self.beat_at = self.ticked_at = time.monotonic()
        self.hung_since: float | None = None
        self._refreshing = False
        self._loop_thread: int | None = None
        self._tick = tick
        self._cpu = cpu
        self._cpu_at = cpu()  # the process's CPU seconds at the last tick
        self._longest_gap = 0.0  # between two ticks, since the last beat, less the CPU the process used in it
        self._gaps = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name=f"loop-watch-{route}", daemon=True)

    def start(self) -> None:
        """Watch the calling thread's loop from now on."""
        self._loop_thread = threading.get_ident()
        self.beat_at = self.ticked_at = time.monotonic()
        self._cpu_at = self._cpu()
        self._thread.start()

    def stood_still(self) -> float:
        """Seconds the process stood still since the last beat: how much longer than ``check_every`` the longest
        gap between the watch's ticks was, or is since its last one, less what the process ran meanwhile (0.0
        while the watch is not started)."""
        if self._loop_thread is None:
            return 0.0
        with self._gaps:
            return max(0.0, max(self._longest_gap, self._still_since_tick()) - self.check_every)

    def _still_since_tick(self) -> float:
        """The gap since the watch's last tick, less ``CPU_WEIGHT`` times the process's CPU seconds in it."""
        return time.monotonic() - self.ticked_at - CPU_WEIGHT * (self._cpu() - self._cpu_at)

    def stop(self) -> None:
        """Stop watching (the loop ended)."""
        self._stop.set()

    def beat(self, refreshing: bool = False) -> None:
        """The loop turned; ``refreshing``: a topic refresh runs beside it now (a turn that began or ended
        while one ran also counts as a turn while refreshing)."""
        now = time.monotonic()
        metrics.LOOP_TURN.labels(self.route).observe(now - self.beat_at)
        if refreshing or self._refreshing:
            metrics.LOOP_TURN_REFRESHING.labels(self.route).observe(now - self.beat_at)
        self.beat_at, self._refreshing = now, refreshing
        with self._gaps:
            self._longest_gap = 0.0
        if self.hung_since is not None:
            log.warning("worker loop turns again route=%s hung_s=%.1f", self.route, self.beat_at - self.hung_since)
            self.hung_since = None

    def _watch(self) -> None:
        while not self._stop.wait(self.check_every):
            self._tick()
            with self._gaps:
                self._longest_gap = max(self._longest_gap, self._still_since_tick())
                self.ticked_at, self._cpu_at = time.monotonic(), self._cpu()
            since = self.beat_at
            if self.hung_since is None and time.monotonic() - since >= self.after:
                self.hung_since = since
                log.warning("worker loop has not turned for %.1f s route=%s at=%s", time.monotonic() - since,
                            self.route, where(sys._current_frames().get(self._loop_thread or 0), self.ours))


def where(frame: FrameType | None, ours: str = "/replicator/") -> str:
    """Where a thread is: the innermost frame of our code (files whose path holds ``ours``) in its stack,
    else the innermost frame, and the call it waits in, as ``file:line function in call``."""
    if frame is None:
        return "unknown"
    mine: FrameType | None = frame
    while mine is not None and ours not in mine.f_code.co_filename:
        mine = mine.f_back
    shown = mine or frame
    path = shown.f_code.co_filename
    name = path[path.index(ours) + 1:] if ours in path else path.rsplit("/", 1)[-1]
    inner = "" if shown is frame else f" in {frame.f_code.co_name}"
    return f"{name}:{shown.f_lineno} {shown.f_code.co_name}{inner}"
