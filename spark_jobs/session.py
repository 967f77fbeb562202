"""The one place a SparkSession is built: master, loopback binding, Kafka connector jars."""

from __future__ import annotations

import os

from pyspark.sql import SparkSession

from replicator.jars import spark_kafka_jars


def build_session(app_name: str, master: str | None = None) -> SparkSession:
    """A session able to read Kafka (``spark.jars`` = the Maven-fetched connector)."""
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # else Spark binds a public address
    jars = ",".join(str(p) for p in spark_kafka_jars())
    return (
        SparkSession.builder.appName(app_name)
        .master(master or os.environ.get("MIRRORFLOW_SPARK_MASTER", "local[2]"))
        .config("spark.jars", jars)
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.session.timeZone", "UTC")  # time buckets must not depend on the host
        .config("spark.driver.bindAddress", "127.0.0.1")
        .getOrCreate()
    )
