"""Start a runbook's run: resume the route's unfinished one, abandon it (``--restart``), or store a new one."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from replicator.domain.runbook import Request, RunSteps
from replicator.domain.times import utc_text
from replicator.errors import UsageError
from replicator.runbooks.engine import Clock, Runbook, Say, utc_now
from replicator.runbooks.store import RunStore

R = TypeVar("R", bound=RunSteps[Any])


def start(book: Runbook[R, Any], store: RunStore[R], request: Request, restart: bool,
          fresh: Callable[[R | None], R], say: Say, now: Clock = utc_now) -> R:
    """The route's unfinished run when ``request`` asks for the same work (resumed), or a new one.

    ``fresh(unfinished)`` checks what the request names and builds the new run (a
    dry one notes the unfinished one: :func:`dry_run_note`). An unfinished run asked
    with other options is an error unless ``restart``: then it is stored as abandoned
    with the new run. A dry run is never stored and never abandons anything.
    """
    unfinished = store.unfinished(request.route)
    if unfinished is not None and not request.dry_run and not restart:
        if not unfinished.request.same_work(request):
            raise UsageError(book.other_run(unfinished))
        say(f"resuming {book.kind} run {unfinished.run_id} of route {request.route} "
            f"(stopped at {unfinished.stopped_at})")
        return book.resumed(unfinished, request)
    run = fresh(unfinished)
    if request.dry_run:
        return run
    abandoned = None if unfinished is None else unfinished.abandon(now())
    run = store.begin(run, abandoned)
    if abandoned is not None:
        say(f"{book.kind} run {abandoned.run_id} abandoned (--restart)")
    say(book.started(run))
    return run


def dry_run_note(book: Runbook[R, Any], unfinished: R) -> str:
    """What a dry run notes of the route's unfinished run: which, since when, where it stopped, what a real run does."""
    return (f"{book.kind} run {unfinished.run_id} is unfinished since {utc_text(unfinished.triggered_at)} (stopped at "
            f"step {unfinished.stopped_at}): a real run with its options resumes it there, unless --restart")
