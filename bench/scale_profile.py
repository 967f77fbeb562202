"""``--py-spy``: where MirrorFlow's copy loop spends its time, sampled from launch to the end of the loaded
window (py-spy's raw output: one line per stack, ``thread (tid): name;frame;frame... count``)."""

from __future__ import annotations

import shutil
import signal
import subprocess
from collections import Counter
from pathlib import Path

LOOP_THREAD = "route-"  # the worker names its loop thread route-<route>
OURS = "replicator/"
DEPTH = 3  # frames of ours shown per hotspot, below the loop itself


def loop_hotspots(raw: str, top: int = 8) -> tuple[int, list[tuple[int, str]]]:
    """The loop thread's samples, and its busiest call paths (``_loop`` > ... of our frames), busiest first."""
    paths: Counter[str] = Counter()
    total = 0
    for line in raw.splitlines():
        stack, _, count = line.rpartition(" ")
        frames = stack.split(";")
        if not count.isdigit() or LOOP_THREAD not in frames[0]:
            continue
        total += int(count)
        ours = [_short(f) for f in frames[1:] if OURS in f]
        start = next((i for i, f in enumerate(ours) if f.startswith("RouteWorker._loop")), 0)
        paths[" > ".join(ours[start:start + DEPTH + 1]) or "(outside our code)"] += int(count)
    return total, [(count, path) for path, count in paths.most_common(top)]


def _short(frame: str) -> str:
    """``Class.method (path/file.py:123)`` -> ``Class.method:123``."""
    name, _, where = frame.partition(" (")
    return f"{name}:{where.rstrip(')').rpartition(':')[2]}"


class Sampler:
    """``py-spy record`` of one process into ``out`` until :meth:`stop` (None when py-spy is not installed)."""

    def __init__(self, pid: int, out: Path) -> None:
        self.out = out
        binary = shutil.which("py-spy")
        self.process = None if binary is None else subprocess.Popen(
            [binary, "record", "--pid", str(pid), "--threads", "--rate", "50", "--format", "raw", "--output",
             str(out)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def stop(self) -> str | None:
        """Stop sampling (py-spy writes its file on SIGINT); the raw text, or None."""
        if self.process is None:
            return None
        self.process.send_signal(signal.SIGINT)
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)
        return self.out.read_text() if self.out.exists() else None
