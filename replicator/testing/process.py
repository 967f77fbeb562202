"""The process a fake client lives in: it can be frozen (SIGSTOP) and thawed, or killed (SIGKILL)."""

from __future__ import annotations

import time


class FakeProcess:
    """Every fake client checks in here before it does anything."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.frozen = False
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
