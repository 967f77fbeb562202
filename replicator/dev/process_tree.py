"""Detached processes and everything they fork, found and stopped by session id (Linux).

A process started with ``start_new_session=True`` leads a new session; its children,
their children and any process group they create (Airflow's task processes call
``setpgid``) keep that session id, which ``setproctitle`` cannot hide the way it
rewrites command lines. So the session id finds the whole tree, and stopping it is:
SIGINT to each of its process groups, then SIGTERM and SIGKILL to whatever is left.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

log = logging.getLogger(__name__)


class ProcState(NamedTuple):
    """What /proc/<pid>/stat says of a process that this module needs."""

    state: str  # R, S, D, Z (zombie), ...
    group: int
    session: int


def proc_state(pid: int) -> ProcState | None:
    """The state, process group and session of a process, or None when it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()  # the command name may hold spaces and ')'
    return ProcState(fields[0], int(fields[2]), int(fields[3]))


def is_session_leader(pid: int) -> bool:
    """True when ``pid`` lives (not a zombie) and leads its own session."""
    state = proc_state(pid)
    return state is not None and state.state != "Z" and state.session == pid


def session_members(sessions: set[int]) -> dict[int, int]:
    """pid -> process group of each live process (zombies aside) in one of ``sessions``."""
    members = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            state = proc_state(int(entry))
            if state is not None and state.state != "Z" and state.session in sessions:
                members[int(entry)] = state.group
    return members


def interrupt_sessions(sessions: set[int], grace: float) -> set[int]:
    """SIGINT every process group of ``sessions`` until none of their processes lives.

    A group that appears meanwhile gets its SIGINT too (Airflow's executor starts the
    tasks still queued while it shuts down, each in a new group). Returns the
    processes left after ``grace`` seconds.
    """
    signalled: dict[int, float] = {}  # group -> when it got its SIGINT
    repeated: set[int] = set()
    deadline = time.monotonic() + grace
    while True:
        members, now = session_members(sessions), time.monotonic()
        for group in set(members.values()):
            # Once at first sight, and once more a second later: a process just started
            # may not have its handler yet (an inherited SIG_IGN drops the first one).
            if group not in signalled or (group not in repeated and now - signalled[group] >= 1.0):
                _signal(group, signal.SIGINT, group=True)
                if group in signalled:
                    repeated.add(group)
                signalled.setdefault(group, now)
        if not members or now > deadline:
            return set(members)
        _reap(members)
        time.sleep(0.2)


def wait_gone(pids: Iterable[int], timeout: float) -> set[int]:
    """Wait until none of ``pids`` lives; returns those left (a reused pid is not counted)."""
    sessions = {pid: state.session for pid in pids if (state := proc_state(pid)) is not None}
    deadline = time.monotonic() + timeout
    while True:
        _reap(sessions)
        left = {
            pid
            for pid, sid in sessions.items()
            if (state := proc_state(pid)) is not None
            and state.state != "Z"
            and state.session == sid
        }
        if not left or time.monotonic() > deadline:
            _reap(sessions)  # one that died after the first reap above is a zombie now: collect it too
            return left
        time.sleep(0.2)


def stop_sessions(
    waves: list[set[int]], strays: set[int], interrupt_grace: float, terminate_grace: float
) -> set[int]:
    """Stop whole sessions, wave after wave, then ``strays``; returns the survivors.

    Each wave's sessions get SIGINT (:func:`interrupt_sessions`); whatever is left of
    them, and ``strays``, then gets SIGTERM and at last SIGKILL.
    """
    left = set(strays)
    for sessions in waves:
        left |= interrupt_sessions(sessions, interrupt_grace)
    for sig, grace in ((signal.SIGTERM, terminate_grace), (signal.SIGKILL, 5.0)):
        if left:
            log.warning("processes still running, sending %s pids=%s", sig.name, sorted(left))
            for pid in left:
                _signal(pid, sig)
            left = wait_gone(left, grace)
    return left


def children_interruptible() -> None:
    """Let the processes started from here on stop on SIGINT, the first signal :func:`stop_sessions` sends.

    A shell without job control (``cmd &`` in a script, a CI runner) starts its background commands with
    SIGINT ignored, and an ignored signal stays ignored through fork and exec: Airflow and Spark's JVMs would
    sit out the whole SIGINT grace of every stop, then be terminated. A signal this process handles is reset to
    its default in an exec'd child, so this process handles SIGINT as Python does by default
    (KeyboardInterrupt). Only the main thread may set a handler; elsewhere nothing changes.
    """
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.default_int_handler)


def _signal(pid: int, sig: signal.Signals, group: bool = False) -> None:
    with contextlib.suppress(ProcessLookupError):
        (os.killpg if group else os.kill)(pid, sig)


def _reap(pids: Iterable[int]) -> None:
    """Collect the exit status of our own children (started in this process): no zombie lingers."""
    for pid in pids:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
