"""The interpreter settings of a worker process: how its threads share the GIL, and what its cycle collector
scans. The copy loops share the interpreter with their topic refresh threads (the metadata of thousands of
topics, in Python), and whatever holds the GIL holds the loop (``bench/refresh_stall.py`` measures it, apart
from the machine's own load)."""

from __future__ import annotations

import contextlib
import gc
import sys
import threading
from collections.abc import Iterator

# At the default 5 ms switch interval each of the loop's many GIL re-acquisitions per turn could wait a whole
# interval, holding a turn 50-250 ms while a refresh ran (bench/scale.py).
LOOP_SWITCH_INTERVAL_S = 0.0005


def share_the_gil_finely() -> None:
    """A thread waiting for the GIL gets it after 0.5 ms, not 5."""
    sys.setswitchinterval(LOOP_SWITCH_INTERVAL_S)


def freeze_startup_heap() -> None:
    """Take what start-up made (modules, the config, the clients: kept for the process's life) out of the cycle
    collector's reach, so that its full collections scan only what the copy made since.

    A full collection holds every thread of the process, the copy loops too, for as long as it scans. The
    records and metadata a refresh of thousands of topics allocates start one every few seconds; scanning the
    whole start-up heap each time held the loop 60-165 ms (2,000 topics; after the freeze 0.4-55 ms). What
    is frozen is never collected: only objects made before the copy starts are, which live as long anyway.
    """
    gc.collect()  # what start-up left as garbage is freed, not frozen
    gc.freeze()


class _CollectorPause:
    """The cycle collector held off while at least one holder runs (the topic refreshes of several routes in one
    process overlap); it is turned back on when the last leaves, unless it was off before the first came."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._holders = 0
        self._was_enabled = False

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        with self._lock:
            if self._holders == 0:
                self._was_enabled = gc.isenabled()
                gc.disable()
            self._holders += 1
        try:
            yield
        finally:
            with self._lock:
                self._holders -= 1
                if self._holders == 0 and self._was_enabled:
                    gc.enable()


_PAUSE = _CollectorPause()


def collector_paused() -> contextlib.AbstractContextManager[None]:
    """No cycle collection starts while the block runs (explicit ``gc.collect()`` calls still do).

    A refresh of thousands of topics holds tens of thousands of metadata objects for a moment; a full
    collection that starts then scans them all, and holds every thread, the copy loop too, while it does
    (2,000 topics: up to ~100 ms). Held off, those objects are freed by their reference counts when the
    block ends, before any collection sees them. Only code bounded by a timeout (the admin clients' calls)
    may run in the block: cyclic garbage the copy loop makes meanwhile waits for it to end.
    """
    return _PAUSE.held()
