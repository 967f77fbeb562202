"""The process a fake client lives in: it can be frozen (SIGSTOP) and thawed, or killed (SIGKILL)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


class FakeProcess:
    """Every fake client checks in here before it does anything."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._frozen_at: float | None = None  # frozen since then (None: running)
        self._frozen_for = 0.0  # seconds frozen before that
        self.thaws = 0  # times thawed (SIGCONT): a consumer's first fetch after one comes before the group's word
        self.killed = False
        self.cut: set[str] = set()  # clusters this process's network cannot reach

    @property
    def frozen(self) -> bool:
        """Stopped (SIGSTOP) until thawed."""
        return self._frozen_at is not None

    @frozen.setter
    def frozen(self, frozen: bool) -> None:
        now = time.monotonic()
        if frozen and self._frozen_at is None:
            self._frozen_at = now
        elif not frozen and self._frozen_at is not None:
            self._frozen_for += now - self._frozen_at
            self._frozen_at = None

    def cpu_seconds(self) -> float:
        """The process's CPU time, as a worker's loop watch reads it: a fake process runs all the time it is not
        frozen, and uses none while it is."""
        until = self._frozen_at if self._frozen_at is not None else time.monotonic()
        return until - self._frozen_for

    def reaches(self, cluster: str) -> bool:
        """False while the link to ``cluster`` is cut."""
        return cluster not in self.cut

    def checkpoint(self) -> None:
        """Block while frozen; raise once killed (the thread of a dead process goes no further)."""
        while self.frozen and not self.killed:
            time.sleep(0.002)
        if self.killed:
            raise ProcessKilled(f"fake process {self.name} was killed")


class ProcessKilled(BaseException):
    """Raised into the thread of a killed fake process (a BaseException: nothing may catch it
    on the way, as nothing runs in a process after SIGKILL)."""


def killed_threads_end_silently(
        hook: Callable[[threading.ExceptHookArgs], object]) -> Callable[[threading.ExceptHookArgs], object]:
    """A ``threading.excepthook`` under which a thread that meets ``ProcessKilled`` ends as a SIGKILL ends it,
    without a word (a killed process's helper threads, such as a bounded close's); any other exception goes on to
    ``hook``."""

    def quiet(args: threading.ExceptHookArgs) -> object:
        if args.exc_type is not None and issubclass(args.exc_type, ProcessKilled):
            return None
        return hook(args)

    return quiet
