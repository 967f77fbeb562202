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


def worker_pid(home: Path) -> int | None:
    """The running demo worker's pid, or None."""
    try:
        pid = int(_pid_file(home).read_text())
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (OSError, ValueError):
        return None
    return pid if b"run" in cmdline and str(home.resolve()).encode() in cmdline else None


def start_worker(home: Path, config: Path) -> int:
    """Start ``mirrorflow run`` on ``config`` in the background (once); returns its pid."""
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
