"""start: a runbook's run resumed, abandoned (--restart) or new; a dry run never stored."""

from __future__ import annotations

import datetime as dt
from dataclasses import replace

import pytest

from replicator.domain.runbook import RunStatus, StepStatus
from replicator.errors import UsageError
from replicator.runbooks.start import dry_run_note, start
from replicator.testing.runbook import MemoryRunStore
from tests.runbook_drill import BOOK, T0, DrillRequest, DrillRun, with_steps

LATER = T0 + dt.timedelta(hours=1)


def store_with(*runs: DrillRun) -> MemoryRunStore[DrillRun]:
    store: MemoryRunStore[DrillRun] = MemoryRunStore()
    for run in runs:
        store.save(run)
    return store


RUNNING = with_steps(DrillRun(DrillRequest("r")), StepStatus.DONE)
FAILED = with_steps(DrillRun(DrillRequest("r")), StepStatus.DONE, StepStatus.FAILED)
DONE = with_steps(DrillRun(DrillRequest("r")), StepStatus.DONE, StepStatus.DONE)
OTHER_ROUTE = DrillRun(DrillRequest("s"))


@pytest.mark.parametrize(("stored", "request_", "restart", "outcome", "said"), [
    # nothing unfinished: a new run, stored, said
    ((), DrillRequest("r"), False, "new", ["drill run 1 started on route r"]),
    ((DONE,), DrillRequest("r"), False, "new", ["drill run 2 started on route r"]),
    ((OTHER_ROUTE,), DrillRequest("r"), False, "new", ["drill run 2 started on route r"]),
    ((), DrillRequest("r"), True, "new", ["drill run 1 started on route r"]),
    # the same work asked again: the unfinished run resumes where it stopped
    ((RUNNING,), DrillRequest("r"), False, "resumed", ["resuming drill run 1 of route r (stopped at move)"]),
    ((FAILED,), DrillRequest("r"), False, "resumed", ["resuming drill run 1 of route r (stopped at move)"]),
    # other work: refused, unless --restart abandons the unfinished run
    ((FAILED,), DrillRequest("r", target="c"), False, "refused", []),
    ((FAILED,), DrillRequest("r", target="c"), True, "abandoned",
     ["drill run 1 abandoned (--restart)", "drill run 2 started on route r"]),
    ((RUNNING,), DrillRequest("r"), True, "abandoned",
     ["drill run 1 abandoned (--restart)", "drill run 2 started on route r"]),
    # a dry run: built, never stored, abandons and resumes nothing
    ((), DrillRequest("r", dry_run=True), False, "dry", []),
    ((FAILED,), DrillRequest("r", target="c", dry_run=True), False, "dry", []),
    ((FAILED,), DrillRequest("r", dry_run=True), True, "dry", []),
], ids=["none", "after-done", "other-route", "restart-none", "resume-running", "resume-failed", "other-work",
        "restart-other-work", "restart-same-work", "dry", "dry-other-work", "dry-restart"])
def test_start_resumes_abandons_refuses_or_begins(stored: tuple[DrillRun, ...], request_: DrillRequest,
                                                  restart: bool, outcome: str, said: list[str]) -> None:
    store = store_with(*stored)
    before = dict(store.runs)
    lines: list[str] = []
    fresh_saw: list[DrillRun | None] = []

    def fresh(unfinished: DrillRun | None) -> DrillRun:
        fresh_saw.append(unfinished)
        return DrillRun(request_, LATER)

    if outcome == "refused":
        with pytest.raises(UsageError, match="drill run 1 has other options: finish it or --restart"):
            start(BOOK, store, request_, restart, fresh, lines.append, lambda: LATER)
        run = None
    else:
        run = start(BOOK, store, request_, restart, fresh, lines.append, lambda: LATER)
    assert lines == said
    unfinished = store.unfinished("r") if outcome != "dry" else None
    if outcome == "resumed":
        assert run == before[1] and store.runs == before and fresh_saw == []
    elif outcome in ("new", "abandoned"):
        assert run is not None and run.run_id == max(store.runs) and store.runs[run.run_id] == run
        assert run.triggered_at == LATER and unfinished == run
    if outcome == "abandoned":
        assert store.runs[1] == replace(before[1], abandoned_at=LATER)
        assert store.runs[1].status == RunStatus.ABANDONED
        assert fresh_saw == [before[1]]  # the new run may note the one it replaces
    if outcome in ("dry", "refused"):
        assert store.runs == before
    if outcome == "dry":
        assert run is not None and run.run_id is None and run.status == RunStatus.DRY_RUN


def test_the_new_run_and_the_abandoned_one_are_stored_together() -> None:
    store = store_with(FAILED)
    start(BOOK, store, DrillRequest("r", target="c"), True, lambda _: DrillRun(DrillRequest("r", "c")),
          lambda _: None, lambda: LATER)
    # MemoryRunStore.begin, like SqlRunStore.begin in one transaction: the abandoned run, then the new one
    assert [(run.run_id, run.request.target, run.status) for run in store.saved[1:]] == [
        (1, "b", RunStatus.ABANDONED), (2, "c", RunStatus.RUNNING)]


def test_a_runbook_may_change_the_run_it_resumes() -> None:
    book = replace(BOOK, resumed=lambda run, request: replace(run, note=f"resumed for {request.target}"))
    store = store_with(RUNNING)
    run = start(book, store, DrillRequest("r"), False, lambda _: DrillRun(DrillRequest("r")), lambda _: None)
    assert (run.run_id, run.note) == (1, "resumed for b")


@pytest.mark.parametrize(("unfinished", "note"), [
    (replace(RUNNING, run_id=3), "drill run 3 is unfinished since 2026-11-01 12:00:00Z (stopped at step move): "
                                 "a real run with its options resumes it there, unless --restart"),
    (replace(with_steps(DrillRun(DrillRequest("r"), LATER), StepStatus.FAILED), run_id=4),
     "drill run 4 is unfinished since 2026-11-01 13:00:00Z (stopped at step check): "
     "a real run with its options resumes it there, unless --restart"),
], ids=["running", "failed-first"])
def test_a_dry_run_notes_the_unfinished_run_in_one_line(unfinished: DrillRun, note: str) -> None:
    assert dry_run_note(BOOK, unfinished) == note
