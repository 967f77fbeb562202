"""The interpreter settings of a worker process: how its threads share the GIL, and what its cycle collector
scans. The copy loops share the interpreter with their topic refresh threads (the metadata of thousands of
topics, in Python), and whatever holds the GIL holds the loop (``bench/refresh_stall.py`` measures it, apart
from the machine's own load)."""

from __future__ import annotations

import gc
import sys

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
