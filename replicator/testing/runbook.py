"""An in-memory store of runbook runs, for tests of the runbook engine without a state DB.

It keeps what :class:`replicator.runbooks.store.SqlRunStore` keeps: every run stored
by id (a new run gets the next id), a dry run never, and ``unfinished`` is the
route's latest run that is running or failed.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Generic, TypeVar

from replicator.domain.runbook import RunStatus, RunSteps
from replicator.errors import UsageError

R = TypeVar("R", bound=RunSteps[Any])


@dataclass
class MemoryRunStore(Generic[R]):
    """Runs by id; ``saved`` lists every run stored, in order (what a test reads back)."""

    runs: dict[int, R] = field(default_factory=dict)
    saved: list[R] = field(default_factory=list)

    def unfinished(self, route: str) -> R | None:
        """The route's latest run that is running or failed, if any."""
        found = [r for _, r in sorted(self.runs.items()) if r.request.route == route
                 and r.status in (RunStatus.RUNNING, RunStatus.FAILED)]
        return found[-1] if found else None

    def load(self, run_id: int) -> R:
        """The stored run ``run_id``."""
        if run_id not in self.runs:
            raise UsageError(f"run {run_id} is not stored")
        return self.runs[run_id]

    def save(self, run: R) -> R:
        """Store ``run`` unless it is a dry run."""
        if run.request.dry_run:
            return run
        if run.run_id is None:
            run = replace(run, run_id=max(self.runs, default=0) + 1)  # type: ignore[type-var]
        self.runs[run.run_id] = run  # type: ignore[index]
        self.saved.append(run)
        return run

    def begin(self, run: R, abandoned: R | None) -> R:
        """Store the new ``run`` and the one it replaces."""
        if abandoned is not None:
            self.save(abandoned)
        return self.save(run)
