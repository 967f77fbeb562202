"""Backfill a route's topic: in one call (:func:`run_backfill`), or in the DAG's steps around spark-submit.

After the copy, the job audits it by offsets (``spark_jobs/backfill_check``): each
source record of the ranges must be on the replica between the target offsets the
copy landed at (:class:`BackfillIncomplete` otherwise). The copied records land on the
replica after what the route already wrote: a partition of the replica holds the
route's records first, then the backfilled older ones.

Each run is recorded in the state DB (``mf_backfill_run``) once planned, before
Spark copies, and refused (UsageError, nothing copied) when a done or running run
of the topic copied any of its offsets, unless ``overlap_ok``; it is marked done or
failed, with the records written, once the result is known (:mod:`replicator.runbooks.backfill.runs`).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from replicator.config import Config, load_config
from replicator.domain.backfill_run import BackfillMode, PartitionRange, nothing_to_copy
from replicator.errors import MirrorFlowError, UsageError
from replicator.runbooks.audit.window import TimeInput, parse_time
from replicator.runbooks.backfill.prepare import Requested, prepare_backfill
from replicator.runbooks.backfill.runs import begin_run, finish_quietly, finish_run
from replicator.runbooks.backfill.spec import BackfillSpec, read_result

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)
ConfigInput = Config | str | os.PathLike[str]


class BackfillJobError(MirrorFlowError):
    """The backfill's Spark job could not run or finish (what it wrote so far stays on the target)."""


class BackfillIncomplete(MirrorFlowError):
    """The check after the copy found source records missing on the replica; ``result``: the job's result."""

    def __init__(self, result: Mapping[str, Any]) -> None:
        self.result = dict(result)
        lost = {p: v for p, v in result["check"]["partitions"].items() if v["missing"]}
        first = ", ".join(f"partition {p} offsets {v['first_missing']}" for p, v in sorted(lost.items())[:3])
        super().__init__(f"route {result['route']}: backfill of {result['topic']}: {result['check']['missing']}"
                         f" records missing on {result['target_topic']} after the copy ({first})")


def _config(config: ConfigInput) -> tuple[Config, str | None]:
    if isinstance(config, Config):
        return config, None
    return load_config(Path(config), os.environ), str(Path(config).resolve())


def backfill_spec(config: ConfigInput, route: str, topic: str, start: TimeInput | None = None,
                  end: TimeInput | None = None, *, offsets: Requested | None = None, overlap_ok: bool = False,
                  run_key: str | None = None) -> BackfillSpec:
    """The plan of a backfill by time (``[start, end)``) or by ``offsets`` ({partition: (from, to or None)})."""
    cfg, path = _config(config)
    times = None
    if offsets is None:
        if start is None or end is None:
            raise UsageError("a backfill by time needs a start and an end (or give offsets)")
        times = (parse_time(start, "from"), parse_time(end, "to"))
        if times[1] <= times[0]:
            raise UsageError(f"from {start!s} is not before to {end!s}")
    elif start is not None or end is not None:
        raise UsageError("a backfill takes a time range or offset ranges, not both")
    return prepare_backfill(cfg, route, topic, times=times, offsets=offsets, overlap_ok=overlap_ok,
                            run_key=run_key, config_path=path)


def judge(result: Mapping[str, Any]) -> dict[str, Any]:
    """The job's result, or BackfillIncomplete when its check found records missing on the replica."""
    if "check" not in result:
        raise UsageError(f"backfill result of {result.get('run_key')}: no check (written by an older job?)")
    if result["check"]["missing"]:
        raise BackfillIncomplete(result)
    log.info("backfill done route=%s topic=%s written=%s duplicates=%d", result["route"], result["topic"],
             result["written"], result["check"]["duplicates"])
    why = nothing_to_copy(PartitionRange(int(r["partition"]), int(r["start"]), int(r["end"]), bool(r["clamped"]))
                          for r in result.get("ranges", ()))
    if why:
        log.warning("backfill route=%s topic=%s: %s", result["route"], result["topic"], why)
    return dict(result)


def record_result(config: Config, result: Mapping[str, Any]) -> dict[str, Any]:
    """Judge the job's result and mark its run done, or failed (then raise as :func:`judge` does)."""
    try:
        judged = judge(result)
    except MirrorFlowError as exc:
        finish_run(config, str(result.get("run_key")), result, str(exc))
        raise
    finish_run(config, judged["run_key"], judged)
    return judged


def _mode(offsets: Requested | None) -> BackfillMode:
    return BackfillMode.TIME if offsets is None else BackfillMode.OFFSETS


def run_backfill(config: ConfigInput, route: str, topic: str, start: TimeInput | None = None,
                 end: TimeInput | None = None, *, offsets: Requested | None = None, overlap_ok: bool = False,
                 run_key: str | None = None, spark: SparkSession | None = None,
                 master: str | None = None, progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Record the run, copy the range with an in-process Spark job and check it; the result
    (UsageError before any copy when an earlier run copied the range; BackfillIncomplete on loss)."""
    cfg, _ = _config(config)
    spec = backfill_spec(config, route, topic, start, end, offsets=offsets, overlap_ok=overlap_ok, run_key=run_key)
    begin_run(cfg, spec, _mode(offsets), overlap_ok)
    say = progress or (lambda line: log.info("%s", line))
    log.info("backfill route=%s topic=%s target=%s records=%d run_key=%s", route, topic, spec.target_topic,
             spec.total, spec.run_key)
    try:
        session, owned = _session(spark, master)
        try:
            result = _copy(session, spec, cfg, say)
        finally:
            if owned:
                session.stop()
    except BaseException as exc:  # interrupted too: the run did not finish, and what it wrote is unknown
        finish_quietly(cfg, spec.run_key, None, str(exc) or type(exc).__name__)
        raise
    return record_result(cfg, {**result, "ranges": [{"partition": r.partition, "start": r.start, "end": r.end,
                                                     "clamped": r.clamped} for r in spec.ranges]})


def _session(spark: SparkSession | None, master: str | None) -> tuple[SparkSession, bool]:
    from replicator.runbooks.audit.local_spark import _spark_jobs_importable

    _spark_jobs_importable()
    from pyspark.sql import SparkSession

    from spark_jobs.session import build_session

    found = spark or SparkSession.getActiveSession()
    if found is not None:
        return found, False
    session = build_session("mirrorflow-backfill", master)
    session.sparkContext.setLogLevel("ERROR")  # the job reports what matters itself
    return session, True


def _copy(session: SparkSession, spec: BackfillSpec, cfg: Config, say: Callable[[str], None]) -> dict[str, Any]:
    from py4j.protocol import Py4JError  # type: ignore[import-untyped]
    from pyspark.errors import PySparkException

    from spark_jobs.backfill import backfill
    from spark_jobs.runner import failure_line

    properties = (cfg.cluster(spec.source_cluster).client_properties(),
                  cfg.cluster(spec.target_cluster).client_properties())
    try:
        return backfill(session, spec, properties, say)
    except (Py4JError, PySparkException) as exc:
        first = failure_line(exc)
        raise BackfillJobError(
            f"route {spec.route}: the backfill's Spark job failed on {spec.topic}: {first}") from None


def prepare_backfill_spec(config: str | os.PathLike[str], route: str, topic: str, spec_path: str | os.PathLike[str],
                          start: TimeInput | None = None, end: TimeInput | None = None, *,
                          offsets: Requested | None = None, overlap_ok: bool = False,
                          run_key: str | None = None) -> BackfillSpec:
    """Plan, record the run (refused as in :func:`run_backfill`) and write the spec file for
    ``spark_jobs/backfill.py --spec`` (the DAG's first step)."""
    spec = backfill_spec(config, route, topic, start, end, offsets=offsets, overlap_ok=overlap_ok, run_key=run_key)
    begin_run(_config(config)[0], spec, _mode(offsets), overlap_ok)
    spec.write(spec_path)
    return spec


def backfill_result(config: ConfigInput, result_path: str | os.PathLike[str], run_key: str) -> dict[str, Any]:
    """The result file the job wrote, judged; the run ``run_key`` marked done or failed (BackfillJobError
    when the job wrote no result, BackfillIncomplete on loss, UsageError naming a bad file)."""
    cfg, _ = _config(config)
    if not Path(result_path).exists():
        error = f"the backfill's Spark job wrote no result ({result_path}): it failed or never ran"
        finish_quietly(cfg, run_key, None, error)
        raise BackfillJobError(f"backfill run {run_key}: {error}")
    try:
        result = read_result(result_path)
    except UsageError as exc:
        finish_quietly(cfg, run_key, None, str(exc))
        raise
    return record_result(cfg, result)
