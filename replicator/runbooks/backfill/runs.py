"""Backfill runs in the state DB: recorded once planned (refused when they would copy again what an
earlier run copied), then marked done or failed.

The overlap check and the ``running`` row are one transaction, so a refused run
leaves nothing behind and a recorded one is visible to the next run's check.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from sqlalchemy.orm import Session

from replicator.config import Config
from replicator.domain.backfill_run import (
    BLOCKING,
    BackfillMode,
    BackfillRun,
    BackfillStatus,
    overlaps,
    refusal,
)
from replicator.errors import MirrorFlowError, UsageError
from replicator.runbooks.backfill.spec import BackfillSpec

log = logging.getLogger(__name__)
T = TypeVar("T")


def begin_run(config: Config, spec: BackfillSpec, mode: BackfillMode, overlap_ok: bool,
              now: dt.datetime | None = None) -> BackfillRun:
    """Record ``spec``'s run as running; UsageError naming the earlier run when its offsets were copied."""
    run = BackfillRun(spec.run_key, spec.route, spec.topic, spec.target_topic, mode, spec.ranges,
                      now or dt.datetime.now(dt.UTC), overlap_ok=overlap_ok)

    def work(session: Session) -> BackfillRun:
        from replicator.state.backfills import runs, save_run

        if not overlap_ok:
            found = overlaps(run.ranges, runs(session, run.route, run.topic, BLOCKING), run.run_key)
            if found:
                raise UsageError(refusal(run.topic, found))
        return save_run(session, run)

    stored = _in_store(config, work)
    log.info("backfill run recorded run_key=%s route=%s topic=%s mode=%s records=%d overlap_ok=%s", run.run_key,
             run.route, run.topic, mode.value, run.total, overlap_ok)
    return stored


def finish_run(config: Config, run_key: str, result: Mapping[str, Any] | None, error: str | None = None,
               now: dt.datetime | None = None) -> BackfillRun | None:
    """Mark the run done (no ``error``) or failed, with the records the job's ``result`` says it wrote."""
    written = None if result is None else sum(int(n) for n in result.get("written", {}).values())

    def work(session: Session) -> BackfillRun | None:
        from replicator.state.backfills import load_run, save_run

        run = load_run(session, run_key)
        if run is None:  # recorded by an older version, or the state DB was replaced meanwhile
            return None
        status = BackfillStatus.FAILED if error else BackfillStatus.DONE
        return save_run(session, dataclasses.replace(run, status=status, written=written, error=error,
                                                     finished_at=now or dt.datetime.now(dt.UTC)))

    finished = _in_store(config, work)
    log.info("backfill run finished run_key=%s status=%s written=%s error=%s", run_key,
             "failed" if error else "done", written, error)
    return finished


def finish_quietly(config: Config, run_key: str, result: Mapping[str, Any] | None, error: str) -> None:
    """Mark the run failed, logging (not raising) a state DB error: the job's own error matters more."""
    try:
        finish_run(config, run_key, result, error)
    except MirrorFlowError as exc:
        log.warning("backfill run not marked failed run_key=%s error=%s", run_key, exc)


def _in_store(config: Config, work: Callable[[Session], T]) -> T:
    from replicator.state.store import StateStore

    with StateStore(config.state.url) as store:
        return store.run(work)
