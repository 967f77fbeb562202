"""The command line shared by the spec-file jobs (``audit``, ``backfill``): ``--spec``, ``--output``, ``--master``.

    spark-submit spark_jobs/<job>.py --spec spec.json --output result.json [--master local[2]]

:func:`run_job` reads the spec, the clusters' client properties from the config file
the spec names (no credential is ever written to a spec), builds the only
SparkSession, runs the job and writes its result as JSON. Exit codes: 0 once the
result is written, a MirrorFlowError's own code (2 for bad input), 1 when Spark failed.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol, TypeVar

from py4j.protocol import Py4JError  # type: ignore[import-untyped]
from pyspark.errors import PySparkException
from pyspark.sql import SparkSession

from replicator.errors import MirrorFlowError, UsageError


class JobSpec(Protocol):
    """What the runner reads of a spec: the config file and the route's two clusters."""

    @property
    def config_path(self) -> str | None:
        """The config file that holds the clusters' properties."""

    @property
    def source_cluster(self) -> str:
        """The route's source cluster (a name of the config)."""

    @property
    def target_cluster(self) -> str:
        """The route's target cluster."""


S = TypeVar("S", bound=JobSpec)
Properties = tuple[Mapping[str, str], Mapping[str, str]]
# The job: (session, spec, (source, target) client properties) -> (JSON result, the line that ends the run)
Job = Callable[[SparkSession, S, Properties], tuple[Any, str]]


def failure_line(exc: BaseException) -> str:
    """One line for a failed Spark call: the first line of its message (Spark's run long) and, when Java
    raised it, the root cause (Py4J's own line, "An error occurred while calling o52.count.", says nothing)."""
    text = str(exc).strip()
    first = text.splitlines()[0] if text else type(exc).__name__
    cause = _root_cause(exc) or next((line.strip().removeprefix("Caused by: ") for line in reversed(text.splitlines())
                                      if line.strip().startswith("Caused by: ")), None)
    return f"{first} (cause: {cause})" if cause and cause not in first else first


def _root_cause(exc: BaseException) -> str | None:
    """The innermost cause of the Java exception behind ``exc`` (a Py4JJavaError), as Java says it."""
    java = getattr(exc, "java_exception", None)
    try:
        while java is not None and java.getCause() is not None:
            java = java.getCause()
        return None if java is None else str(java.toString()).splitlines()[0]
    except Py4JError:  # the gateway is gone: the message is all there is
        return None


def build_parser(job: str, description: str | None, spec_help: str) -> argparse.ArgumentParser:
    """Arguments of the job ``spark_jobs.<job>`` (``description``: its module's docstring)."""
    parser = argparse.ArgumentParser(prog=f"spark_jobs.{job}", description=(description or "").splitlines()[0])
    parser.add_argument("--spec", required=True, help=spec_help)
    parser.add_argument("--output", required=True, help="where to write the result (JSON)")
    parser.add_argument("--master", default=None,
                        help="Spark master (default: spark-submit's; in process $MIRRORFLOW_SPARK_MASTER or local[2])")
    return parser


def run_job(job: str, args: argparse.Namespace, read_spec: Callable[[str], S], run: Job[S]) -> int:
    """Run ``run`` on the spec file ``args.spec``; the only place that builds a SparkSession."""
    from replicator.config import load_config
    from spark_jobs.session import build_session

    try:
        spec = read_spec(args.spec)
        if spec.config_path is None:
            raise UsageError(f"{job} spec {args.spec}: no config_path to read the clusters' properties from")
        config = load_config(spec.config_path, os.environ)
        properties = (config.cluster(spec.source_cluster).client_properties(),
                      config.cluster(spec.target_cluster).client_properties())
        spark = build_session(f"mirrorflow-{job}", args.master)
        spark.sparkContext.setLogLevel("WARN")  # not the Kafka clients' INFO lines
        try:
            result, done = run(spark, spec, properties)
        finally:
            spark.stop()
        Path(args.output).write_text(json.dumps(result), encoding="utf-8")
    except MirrorFlowError as exc:
        sys.stderr.write(f"spark_jobs.{job}: error: {exc}\n")
        return exc.exit_code
    except (Py4JError, PySparkException) as exc:
        sys.stderr.write(f"spark_jobs.{job}: error: the Spark job failed: {failure_line(exc)}\n")
        return 1
    print(f"{done}: result in {args.output}")
    return 0
