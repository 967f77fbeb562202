"""bench/procs.py: a process's CPU counts the children it waited for (a worker asks its group what it gave it in a
child process every minute: the idle figure must include it)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))  # the bench's scripts import by file name

from procs import cpu_seconds

BUSY = "import time\nend = time.process_time() + 0.5\nwhile time.process_time() < end: pass\n"


def test_the_cpu_of_a_child_waited_for_is_the_parents_too() -> None:
    before = cpu_seconds(os.getpid())
    subprocess.run([sys.executable, "-c", BUSY], check=True)
    after = cpu_seconds(os.getpid())
    assert before is not None and after is not None
    assert after - before >= 0.4  # the child's 0.5 s (the parent only waited)
