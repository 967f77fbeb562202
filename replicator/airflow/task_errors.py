"""A task that meets a MirrorFlow error (a cluster refusing us, a bad config, a failed step) fails with that
error in one line of its log, not a traceback, as the CLI says it; a bug still shows its traceback.

Airflow logs "Task failed with exception" and the traceback for whatever a task raises, except ``SystemExit``
("Task exited", the exit code): the task fails (or is retried) the same. Light on purpose: DAG files import it at
their top level.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")

log = logging.getLogger("mirrorflow.task")


def said_in_one_line(function: Callable[P, R]) -> Callable[P, R]:
    """``function`` (a task's body): a MirrorFlowError it raises is logged at ERROR in one line, then the task
    exits with the error's exit code."""
    @functools.wraps(function)
    def task_body(*args: P.args, **kwargs: P.kwargs) -> R:
        from replicator.errors import MirrorFlowError

        try:
            return function(*args, **kwargs)
        except MirrorFlowError as exc:
            log.error("%s", exc)
            raise SystemExit(exc.exit_code) from None

    return task_body
