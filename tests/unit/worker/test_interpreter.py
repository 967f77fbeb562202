"""The cycle collector held off while a topic refresh holds Kafka's answers on thousands of topics.

The collector and its switch are the whole process's: each check runs in an interpreter of its own, where no
thread another test left behind (a fake worker's refresh, say) can hold or collect meanwhile (CI found one
collection started inside the block that way).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from typing import Any

PRELUDE = """
import gc, json, threading
from replicator.worker.interpreter import collector_paused
gc.enable()
"""


def run_alone(body: str) -> Any:
    """Run ``body`` after ``PRELUDE`` in a fresh interpreter; what it printed last, as JSON."""
    done = subprocess.run([sys.executable, "-c", PRELUDE + textwrap.dedent(body)], capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_no_collection_starts_in_the_block_and_the_collector_is_back_after_it() -> None:
    seen = run_alone("""
        started = []
        gc.callbacks.append(lambda phase, info: started.append(info["generation"]) if phase == "start" else None)
        with collector_paused():
            off_inside = not gc.isenabled()
            garbage = []
            for _ in range(20_000):  # cycles: far past generation 0's threshold
                cycle = []
                cycle.append(cycle)
                garbage.append(cycle)
            del garbage
            during = list(started)
        print(json.dumps({"off inside": off_inside, "during": during, "on after": gc.isenabled()}))
    """)
    assert seen == {"off inside": True, "during": [], "on after": True}


def test_overlapping_holders_turn_it_back_on_only_when_the_last_leaves() -> None:
    seen = run_alone("""
        first_in, second_in, first_out = threading.Event(), threading.Event(), threading.Event()
        seen = {}

        def second():
            first_in.wait(5)
            with collector_paused():
                second_in.set()
                first_out.wait(5)
                seen["after the first left"] = gc.isenabled()

        thread = threading.Thread(target=second)
        thread.start()
        with collector_paused():
            first_in.set()
            seen["second came in"] = second_in.wait(5)
        first_out.set()
        thread.join(5)
        seen["after both"] = gc.isenabled()
        print(json.dumps(seen))
    """)
    assert seen == {"second came in": True, "after the first left": False, "after both": True}


def test_a_block_that_raises_turns_it_back_on() -> None:
    seen = run_alone("""
        try:
            with collector_paused():
                raise RuntimeError("a refresh failed")
        except RuntimeError:
            pass
        print(json.dumps(gc.isenabled()))
    """)
    assert seen is True


def test_a_collector_turned_off_before_stays_off() -> None:
    seen = run_alone("""
        gc.disable()
        with collector_paused():
            pass
        print(json.dumps(gc.isenabled()))
    """)
    assert seen is False
