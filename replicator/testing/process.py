"""The process a fake client lives in: it can be frozen (SIGSTOP) and thawed, or killed (SIGKILL)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


class FakeProcess:
    """Every fake client checks in here before it does anything."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.frozen = False
        self.thaws = 0  # times thawed (SIGCONT): a consumer's first fetch after one comes before the group's word
        self.killed = False
        self.cut: set[str] = set()  # clusters this process's network cannot reach

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
