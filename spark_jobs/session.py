"""The one place a SparkSession is built: master, loopback binding, Kafka connector jars.

The master: the one asked for (the job's ``--master``); else, under ``spark-submit``
(which starts Python with ``PYSPARK_GATEWAY_PORT`` set), the one spark-submit was
given (its ``--master``, the ``spark_default`` connection's host); else, in process
(``python -m``, tests, the CLI), ``$MIRRORFLOW_SPARK_MASTER`` or ``local[2]``.
"""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
import zipfile
from collections.abc import Mapping
from pathlib import Path

from pyspark.sql import SparkSession

from replicator.jars import spark_kafka_jars

REDACTED_OPTIONS = r"(?i)url|jaas|password|secret|token|keystore|truststore\.certificates"


def session_master(master: str | None, environ: Mapping[str, str]) -> str | None:
    """The master to set, or None to keep spark-submit's (see the module's doc)."""
    if master:
        return master
    if environ.get("PYSPARK_GATEWAY_PORT"):
        return None
    return environ.get("MIRRORFLOW_SPARK_MASTER") or "local[2]"


def jobs_archive(folder: Path | None = None) -> Path:
    """``spark_jobs/`` as a zip for the executors' Python path. Where executors have MirrorFlow installed,
    the jobs' own modules are still missing (they sit beside the package in a checkout), and a task that
    needs one would fail only there. Named by its content's digest: made once per version of the jobs."""
    sources = sorted(Path(__file__).resolve().parent.glob("*.py"))
    digest = hashlib.sha256(b"".join(p.name.encode() + p.read_bytes() for p in sources)).hexdigest()[:16]
    target = (folder or Path(tempfile.gettempdir())) / f"mirrorflow-spark-jobs-{digest}.zip"
    if not target.exists():
        partial = target.with_name(f"{target.name}.{os.getpid()}.part")
        with zipfile.ZipFile(partial, "w") as archive:
            for path in sources:
                archive.write(path, f"spark_jobs/{path.name}")
        partial.replace(target)  # whole or not at all, whoever else makes it at the same time
    return target


def build_session(app_name: str, master: str | None = None) -> SparkSession:
    """A session able to read Kafka (``spark.jars`` = the Maven-fetched connector) whose executors can import
    the jobs' modules (:func:`jobs_archive`), whatever the master."""
    # The driver's address: loopback unless the environment says otherwise (a driver in a container whose
    # executors run elsewhere sets SPARK_LOCAL_IP=0.0.0.0 and SPARK_LOCAL_HOSTNAME to the name they reach it by).
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # else Spark binds a public address
    if not os.environ.get("PYSPARK_GATEWAY_PORT"):  # in process: Python workers with this interpreter's packages
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    jars = ",".join(str(p) for p in spark_kafka_jars())
    builder = SparkSession.builder.appName(app_name)
    chosen = session_master(master, os.environ)
    if chosen is not None:
        builder = builder.master(chosen)
    session = (
        builder
        .config("spark.jars", jars)
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.session.timeZone", "UTC")  # time buckets must not depend on the host
        .config("spark.driver.bindAddress", os.environ["SPARK_LOCAL_IP"])
        # Reader options a plan or the UI may show: the Kafka source's JAAS config (it holds the SASL password)
        # and PEM key material are masked, as Spark masks *password*/*secret* by default.
        .config("spark.sql.redaction.options.regex", REDACTED_OPTIONS)
        .getOrCreate()
    )
    session.sparkContext.addPyFile(str(jobs_archive()))
    return session
