"""bench/procs.py: a process's CPU counts the children it waited for (a worker asks its group what it gave it in a
child process every minute: the idle figure must include it)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))  # the bench's scripts import by file name

from procs import Child, Children, cpu_seconds, cpu_total

BUSY = "import time\nend = time.process_time() + 0.5\nwhile time.process_time() < end: pass\n"


def test_the_cpu_of_a_child_waited_for_is_the_parents_too() -> None:
    before = cpu_seconds(os.getpid())
    subprocess.run([sys.executable, "-c", BUSY], check=True)
    after = cpu_seconds(os.getpid())
    assert before is not None and after is not None
    assert after - before >= 0.4  # the child's 0.5 s (the parent only waited)


def test_a_peer_of_several_processes_counts_the_cpu_of_each_and_stops_every_one(tmp_path: Path) -> None:
    # each burns 0.5 s of CPU, then stays alive until the test stops it (the sleep is the child's, never waited)
    busy = [Child(f"busy {i}", [sys.executable, "-c", BUSY + "time.sleep(60)\n"], tmp_path / f"busy{i}.log")
            for i in range(2)]
    peer = Children("busy pair", busy)
    try:
        deadline = time.monotonic() + 20
        while (cpu_total(peer.pids) or 0.0) < 0.9 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert (cpu_total(peer.pids) or 0.0) >= 0.9  # 0.5 s each: more than either alone
        peer.check_alive("busy")
    finally:
        codes = peer.stop(5)
    assert not any(child.alive() for child in busy)
    assert codes == -15  # SIGTERM: the first non-zero code
    assert cpu_total([peer.pids[0], 2**22 + 17]) is None  # a process that cannot be read: no total


def test_a_peer_of_no_process_is_refused() -> None:
    with pytest.raises(ValueError, match="no process"):
        Children("nobody", [])
