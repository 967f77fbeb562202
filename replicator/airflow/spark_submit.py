"""The SparkSubmitOperator of MirrorFlow's DAGs: runs out of the box on a fresh Airflow.

Airflow 3 no longer creates a ``spark_default`` connection with ``airflow db
migrate``, and the provider's fallback master is ``yarn``. When ``spark_default`` is
missing, this operator runs the job on ``local[2]`` (``$MIRRORFLOW_SPARK_MASTER`` to
change it) and says so in the task log; a connection that exists always wins, and a
missing connection of any other id is an error, as with the plain operator. It also
passes the Kafka connector jars (``.cache/jars/spark``, fetched by Maven: no
``--packages``, no Ivy), runs the driver with this Python, and finds ``spark-submit``
next to it (pyspark installs it in the venv's ``bin/``).

Imported inside DAG functions only (the provider is a heavy import).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

from replicator.jars import spark_kafka_jars

DEFAULT_CONN_ID = "spark_default"
LOCAL_MASTER = "local[2]"


def local_connection_uri_env(conn_id: str, master: str) -> tuple[str, str]:
    """The environment variable (name, value) that defines ``conn_id`` as a Spark connection to ``master``."""
    return f"AIRFLOW_CONN_{conn_id.upper()}", json.dumps({"conn_type": "spark", "host": master})


def _connection_exists(conn_id: str) -> bool:
    from airflow.sdk import BaseHook
    from airflow.sdk.exceptions import AirflowNotFoundException

    try:
        BaseHook.get_connection(conn_id)
    except AirflowNotFoundException:
        return False
    return True


class MirrorFlowSparkSubmitOperator(SparkSubmitOperator):
    """``SparkSubmitOperator`` with a local default for a missing ``spark_default`` and the Kafka jars."""

    def execute(self, context: Any) -> None:
        """Prepare this task process's environment, then submit as the provider does."""
        if self._conn_id == DEFAULT_CONN_ID and not _connection_exists(DEFAULT_CONN_ID):
            master = os.environ.get("MIRRORFLOW_SPARK_MASTER") or LOCAL_MASTER
            name, value = local_connection_uri_env(DEFAULT_CONN_ID, master)
            os.environ[name] = value  # this task process only; the secrets chain reads env vars first
            self.log.warning("connection %s does not exist: running on master %s (create the connection to"
                             " submit elsewhere)", DEFAULT_CONN_ID, master)
        if not self.jars:
            self.jars = ",".join(str(p) for p in spark_kafka_jars())
        bin_dir = str(Path(sys.executable).parent)
        if shutil.which("spark-submit") is None and (Path(bin_dir) / "spark-submit").exists():
            os.environ["PATH"] = bin_dir + os.pathsep + os.environ.get("PATH", "")
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        super().execute(context)
