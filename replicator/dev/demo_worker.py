"""The demo's replication worker: ``mirrorflow run`` detached, its pid and log under the home folder."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path


def _pid_file(home: Path) -> Path:
    return home / "worker.pid"


def worker_log(home: Path) -> Path:
    """Where the demo worker logs."""
    return home / "worker.log"


def _cmdline(pid: int) -> bytes:
    return Path(f"/proc/{pid}/cmdline").read_bytes()


def worker_pid(home: Path) -> int | None:
    """The running demo worker's pid, or None."""
    try:
        pid = int(_pid_file(home).read_text())
        cmdline = _cmdline(pid)
    except (OSError, ValueError):
        return None
    return pid if b"run" in cmdline and str(home.resolve()).encode() in cmdline else None


def start_worker(home: Path, config: Path, settle: float = 5.0) -> int:
    """Start ``mirrorflow run`` on ``config`` in the background (once); returns its pid once it is seen as
    the worker (or has exited, or ``settle`` s passed)."""
    running = worker_pid(home)
    if running is not None:
        return running
    exe = Path(sys.executable).parent / "mirrorflow"
    with open(worker_log(home), "ab") as out:
        process = subprocess.Popen(
            [str(exe), "--log-level", "info", "run", "--config", str(config.resolve())],
            stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
            cwd=home.resolve(),
        )
    _pid_file(home).write_text(str(process.pid))
    # Popen returns while the kernel may still be setting the new program's arguments up (its
    # /proc/PID/cmdline reads empty, a few starts in a hundred): until then it looks like no worker,
    # and a second start-worker right after would start another one.
    deadline = time.monotonic() + settle
    while worker_pid(home) is None and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    return process.pid


def stop_worker(home: Path, timeout: float = 15.0) -> bool:
    """SIGTERM the demo worker (it flushes and commits); True if one was running."""
    pid = worker_pid(home)
    if pid is None:
        _pid_file(home).unlink(missing_ok=True)
        return False
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while worker_pid(home) is not None and time.monotonic() < deadline:
        time.sleep(0.1)
    if worker_pid(home) is not None:
        os.kill(pid, signal.SIGKILL)
    _pid_file(home).unlink(missing_ok=True)
    return True
