"""The workers' supervisor: starts ``mirrorflow run`` processes and restarts one that exits, as
systemd would (``Restart=always``, ``RestartSec``), recording each exit and its reason."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from signal import Signals  # the class's method `signal` hides the module in its own annotations
from typing import IO

from bench.chaoslib.report import WorkerExit

MARK = "=== chaos:"  # the supervisor's own lines in a worker's log


@dataclass
class _Worker:
    worker_id: str
    log: Path
    process: subprocess.Popen[bytes] | None = None
    out: IO[bytes] | None = None
    wanted: bool = False  # restart it when it exits
    restart_at: float | None = None
    frozen: bool = False
    scanned: int = 0  # bytes of the log already searched for tracebacks


class Supervisor:
    """Worker processes by id; a monitor thread restarts those that exit while wanted."""

    def __init__(self, command: Callable[[str], list[str]], env: dict[str, str], log_dir: Path,
                 began: float, restart_delay: float = 2.0) -> None:
        self._command, self._env, self._log_dir = command, env, log_dir
        self._began, self._delay = began, restart_delay
        self._workers: dict[str, _Worker] = {}
        self._lock = threading.RLock()
        self.exits: list[WorkerExit] = []
        self._stop = threading.Event()
        self._monitor = threading.Thread(target=self._watch, name="supervisor", daemon=True)
        self._monitor.start()

    def _now(self) -> float:
        return time.monotonic() - self._began

    def start(self, *worker_ids: str) -> None:
        """Start these workers now, together (their processes are launched back to back)."""
        with self._lock:
            for worker_id in worker_ids:
                log = self._log_dir / f"worker-{worker_id}.log"
                worker = self._workers.setdefault(worker_id, _Worker(worker_id, log))
                self._launch(worker)

    def _launch(self, worker: _Worker) -> None:
        if worker.out is not None:
            worker.out.close()
        worker.out = open(worker.log, "ab")  # noqa: SIM115 - closed on exit or shutdown
        worker.out.write(f"{MARK} start at {self._now():.1f}s\n".encode())
        worker.out.flush()
        worker.process = subprocess.Popen(self._command(worker.worker_id), stdout=worker.out,
                                          stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=self._env)
        worker.wanted, worker.restart_at, worker.frozen = True, None, False

    def running(self) -> list[str]:
        """Ids of the workers whose process is alive."""
        with self._lock:
            return [w.worker_id for w in self._workers.values() if w.process and w.process.poll() is None]

    def signal(self, worker_id: str, sig: Signals) -> None:
        """Send a signal (SIGSTOP/SIGCONT for a freeze)."""
        with self._lock:
            worker = self._workers[worker_id]
            if worker.process is not None and worker.process.poll() is None:
                os.kill(worker.process.pid, sig)
                worker.frozen = sig == signal.SIGSTOP

    def kill(self, worker_id: str) -> None:
        """SIGKILL, not restarted until ``start`` (the fault restarts it itself)."""
        self._end(worker_id, signal.SIGKILL, 10)

    def stop(self, worker_id: str, timeout: float = 40) -> int | None:
        """SIGTERM and wait: a clean leave; a non-zero exit is recorded as unexpected."""
        return self._end(worker_id, signal.SIGTERM, timeout)

    def _end(self, worker_id: str, sig: Signals, timeout: float) -> int | None:
        with self._lock:
            worker = self._workers[worker_id]
            worker.wanted = False
            process = worker.process
        if process is None or process.poll() is not None:
            return None if process is None else process.returncode
        if worker.frozen:
            os.kill(process.pid, signal.SIGCONT)
        os.kill(process.pid, sig)
        try:
            code = process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            code = process.wait(10)
            self._record(worker, code, f"did not stop within {timeout:.0f} s of {sig.name}: killed", False)
            return code
        self._record(worker, code, "(SIGKILL by the harness)" if sig == signal.SIGKILL else self._reason(worker),
                     sig == signal.SIGKILL or code == 0)
        return code

    def _record(self, worker: _Worker, code: int | None, reason: str, expected: bool) -> None:
        with self._lock:
            self.exits.append(WorkerExit(worker.worker_id, code, reason, self._now(), expected))
            worker.process = None

    def _reason(self, worker: _Worker) -> str:
        """Why the worker's last run ended: its one-line ``mirrorflow: error: ...`` when it printed one
        (an error may go on over several lines), else the last line it wrote (stderr and stdout share
        the log)."""
        try:
            text = worker.log.read_text(errors="replace")
        except OSError:
            return "(no log)"
        lines = [line.strip() for line in text.rsplit(MARK, 1)[-1].splitlines()[1:] if line.strip()]
        said = [line for line in lines if line.startswith("mirrorflow: ")]
        return (said or lines or ["(no output)"])[-1][:300]

    def _watch(self) -> None:
        while not self._stop.wait(0.2):
            with self._lock:
                for worker in self._workers.values():
                    self._check(worker)

    def _check(self, worker: _Worker) -> None:
        process = worker.process
        if process is not None and process.poll() is not None and worker.wanted:
            self._record(worker, process.returncode, self._reason(worker), False)
            worker.restart_at = time.monotonic() + self._delay
        if worker.wanted and worker.process is None and worker.restart_at and time.monotonic() >= worker.restart_at:
            self._launch(worker)

    def logs(self) -> list[Path]:
        """The log of every worker started so far."""
        with self._lock:
            return [worker.log for worker in self._workers.values()]

    def new_tracebacks(self) -> list[str]:
        """Logs that printed "Traceback" since the last call, one entry per traceback."""
        found = []
        with self._lock:
            for worker in self._workers.values():
                with open(worker.log, "rb") as log:
                    log.seek(worker.scanned)
                    chunk = log.read()
                worker.scanned += chunk.rfind(b"\n") + 1  # a line being written is searched next time
                found += [worker.log.name] * chunk[: chunk.rfind(b"\n") + 1].count(b"Traceback")
        return found

    def shutdown(self) -> None:
        """Stop every worker (SIGTERM, SIGKILL after 20 s) and the monitor."""
        self._stop.set()
        self._monitor.join(5)
        for worker_id in list(self._workers):
            self._end(worker_id, signal.SIGTERM, 20)
        for worker in self._workers.values():
            if worker.out is not None:
                worker.out.close()
