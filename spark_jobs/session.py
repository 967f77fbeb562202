"""The one place a SparkSession is built: master, loopback binding, Kafka connector jars.

The master: the one asked for (the job's ``--master``); else, under ``spark-submit``
(which starts Python with ``PYSPARK_GATEWAY_PORT`` set), the one spark-submit was
given (its ``--master``, the ``spark_default`` connection's host); else, in process
(``python -m``, tests, the CLI), ``$MIRRORFLOW_SPARK_MASTER`` or ``local[2]``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

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


def build_session(app_name: str, master: str | None = None) -> SparkSession:
    """A session able to read Kafka (``spark.jars`` = the Maven-fetched connector)."""
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
    return (
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
