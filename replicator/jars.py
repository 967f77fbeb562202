"""Where the JVM jars fetched by Maven (``make jars``, see pom.xml) live."""

from __future__ import annotations

import os
from pathlib import Path

from replicator.errors import ClusterError
from replicator.paths import REPO_ROOT

JARS_ENV = "MIRRORFLOW_JARS"



def jars_dir() -> Path:
    """``$MIRRORFLOW_JARS`` or the repository's ``.cache/jars``."""
    return Path(os.environ.get(JARS_ENV) or REPO_ROOT / ".cache" / "jars")


def _jar_folder(profile: str) -> Path:
    folder = jars_dir() / profile
    if not any(folder.glob("*.jar")):
        raise ClusterError(
            f"no {profile} jars in {folder}: run `make jars` (Maven fetches them once)"
        )
    return folder


def kafka_classpath() -> str:
    """The JVM classpath of the Kafka broker and its tools."""
    return str(_jar_folder("kafka") / "*")


def spark_kafka_jars() -> list[Path]:
    """The jars Spark needs for its Kafka source, to pass as ``spark.jars``."""
    return sorted(_jar_folder("spark").glob("*.jar"))
