"""The record of a sync run: each planned change and how applying it went.

This is what the state DB stores (``mf_sync_run``, ``mf_sync_change``), what the CLI
prints and what the functions the DAGs call return (``summary``, plain JSON).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from replicator.domain.sync_plan import SyncAction


class Outcome(StrEnum):
    """What became of one planned change."""

    PLANNED = "planned"  # dry run: shown, not applied
    APPLIED = "applied"
    FAILED = "failed"


class RunStatus(StrEnum):
    """How a run as a whole went."""

    OK = "ok"
    FAILED = "failed"
    DRY_RUN = "dry-run"


@dataclass(frozen=True, slots=True)
class SyncChange:
    """One change of a run: what, on which resource, and its outcome (with the reason it failed)."""

    kind: str
    resource: str
    detail: str
    outcome: Outcome
    error: str | None = None

    @classmethod
    def of(cls, action: SyncAction, outcome: Outcome, error: str | None = None) -> SyncChange:
        """The change record of ``action``."""
        return cls(action.kind, action.resource, action.detail, outcome, error)


@dataclass(frozen=True, slots=True)
class SyncRun:
    """One run of one route's sync (``step``: discovery, metadata or full)."""

    route: str
    step: str
    started_at: dt.datetime
    finished_at: dt.datetime
    changes: tuple[SyncChange, ...] = ()
    notes: tuple[str, ...] = ()
    dry_run: bool = False

    @property
    def status(self) -> RunStatus:
        """``dry-run``, ``failed`` when any change failed, else ``ok``."""
        if self.dry_run:
            return RunStatus.DRY_RUN
        return RunStatus.FAILED if self.failures else RunStatus.OK

    @property
    def failures(self) -> tuple[SyncChange, ...]:
        """The changes that failed."""
        return tuple(c for c in self.changes if c.outcome == Outcome.FAILED)

    def failure_report(self) -> str:
        """One line per failed change, naming its resource and the reason."""
        return "\n".join(f"{c.kind} {c.resource}: {c.error}" for c in self.failures)

    def summary(self) -> dict[str, Any]:
        """The run as plain JSON-serialisable data."""
        counts = {o.value: sum(c.outcome == o for c in self.changes) for o in Outcome}
        return {
            "route": self.route,
            "step": self.step,
            "status": self.status.value,
            "started_at": self.started_at.isoformat(),
            "finished_at": self.finished_at.isoformat(),
            "counts": counts,
            "changes": [
                {"kind": c.kind, "resource": c.resource, "detail": c.detail, "outcome": c.outcome.value,
                 "error": c.error}
                for c in self.changes
            ],
            "notes": list(self.notes),
        }
