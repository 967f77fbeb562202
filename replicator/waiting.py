"""Asking again until it answers, for a process that cannot start without it (the state DB, a cluster).

A worker started while its state database or one of its clusters restarts, fails
over or is locked by a long writer waits for it instead of dying: it logs one line
when it starts waiting and one when it answers. Only a retriable error is waited
out; a bad URL, a refused login or a missing database is raised at once.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import TypeVar

from replicator.errors import MirrorFlowError

FIRST_DELAY, MAX_DELAY = 0.5, 5.0  # seconds between attempts: doubled each time, up to MAX_DELAY

T = TypeVar("T")
log = logging.getLogger(__name__)


def until_answers(attempt: Callable[[], T], stop: threading.Event, *, what: str, where: str,
                  routes: Sequence[str], max_delay: float = MAX_DELAY) -> T | None:
    """``attempt()``'s result once it succeeds; None when ``stop`` is set before it does.

    ``what`` names the thing waited for ("state database"), ``where`` says which one
    (``url=...``, secrets masked) in the two log lines.
    """
    delay, since = FIRST_DELAY, None
    while not stop.is_set():
        try:
            result = attempt()
        except MirrorFlowError as exc:
            if not exc.retriable:
                raise
            if since is None:
                since = time.monotonic()
                log.warning("%s not answering, routes wait for it before starting routes=%s %s cause=%r",
                            what, ",".join(routes), where, str(exc))
            stop.wait(delay)
            delay = min(delay * 2, max_delay)
            continue
        if since is not None:
            log.warning("%s answers, routes start routes=%s %s waited_s=%.1f",
                        what, ",".join(routes), where, time.monotonic() - since)
        return result
    return None
