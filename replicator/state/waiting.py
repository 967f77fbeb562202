"""Asking the state database again until it answers, for a process that cannot start without it.

A worker started while its state database restarts, fails over or is locked by a
long writer waits for it instead of dying: it logs one line when it starts waiting
and one when the database answers. Only a retriable :class:`StateStoreError` is
waited out; a bad URL, a refused login or a missing database is raised at once.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import TypeVar

from replicator.domain.secrets import redact_url
from replicator.errors import StateStoreError

FIRST_DELAY, MAX_DELAY = 0.5, 5.0  # seconds between attempts: doubled each time, up to MAX_DELAY

T = TypeVar("T")
log = logging.getLogger(__name__)


def until_answers(attempt: Callable[[], T], stop: threading.Event, *, url: str, routes: Sequence[str],
                  max_delay: float = MAX_DELAY) -> T | None:
    """``attempt()``'s result once it succeeds; None when ``stop`` is set before it does."""
    delay, since = FIRST_DELAY, None
    while not stop.is_set():
        try:
            result = attempt()
        except StateStoreError as exc:
            if not exc.retriable:
                raise
            if since is None:
                since = time.monotonic()
                log.warning("state database not answering, routes wait for it before starting routes=%s url=%s "
                            "cause=%r", ",".join(routes), redact_url(url), str(exc))
            stop.wait(delay)
            delay = min(delay * 2, max_delay)
            continue
        if since is not None:
            log.warning("state database answers, routes start routes=%s url=%s waited_s=%.1f",
                        ",".join(routes), redact_url(url), time.monotonic() - since)
        return result
    return None
