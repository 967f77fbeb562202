"""Where a runbook keeps its runs: the small protocol the engine needs, and the state DB's implementation.

Each runbook keeps its runs in tables of its own (``mf_failover_run`` and its steps
and offsets; ``mf_failback_run`` with the run as JSON), so the SQL implementation
takes the runbook's repository functions; what differs between runbooks is there,
what is the same (a session per call, a dry run never stored, a new run and the
one it replaces in one transaction) is here. SQLAlchemy is imported late: the CLI's
``--help`` and bad input never touch it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from replicator.domain.runbook import RunSteps

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

R = TypeVar("R", bound=RunSteps[Any])
T = TypeVar("T")


class RunStore(Protocol[R]):
    """The runs of one runbook."""

    def unfinished(self, route: str) -> R | None:
        """The route's latest run that is running or failed (the one a re-run resumes), if any."""

    def load(self, run_id: int) -> R:
        """The stored run ``run_id``; UsageError when there is none."""

    def save(self, run: R) -> R:
        """Store ``run`` (a dry run: returned as it is); it comes back with its ``run_id``."""

    def begin(self, run: R, abandoned: R | None) -> R:
        """Store a new ``run`` and the run it replaces (``--restart``), together."""


@dataclass(frozen=True)
class SqlRunStore(Generic[R]):
    """A runbook's runs in the state DB at ``url``, through its repository functions."""

    url: str
    save_run: Callable[[Session, R], R]
    unfinished_run: Callable[[Session, str], R | None]
    load_run: Callable[[Session, int], R]
    on_begin: Callable[[Session], object] | None = None  # more to store with a new run (the route)

    def unfinished(self, route: str) -> R | None:
        """The route's latest run that is running or failed, if any."""
        return self._do(lambda session: self.unfinished_run(session, route))

    def load(self, run_id: int) -> R:
        """The stored run ``run_id``."""
        return self._do(lambda session: self.load_run(session, run_id))

    def save(self, run: R) -> R:
        """Store ``run`` unless it is a dry run."""
        return run if run.request.dry_run else self._do(lambda session: self.save_run(session, run))

    def begin(self, run: R, abandoned: R | None) -> R:
        """Store the new ``run`` and the one it replaces in one transaction."""
        def work(session: Session) -> R:
            if abandoned is not None:
                self.save_run(session, abandoned)
            if self.on_begin is not None:
                self.on_begin(session)
            return self.save_run(session, run)

        return self._do(work)

    def _do(self, work: Callable[[Session], T]) -> T:
        from replicator.state.store import StateStore

        with StateStore(self.url) as store:
            return store.run(work)
