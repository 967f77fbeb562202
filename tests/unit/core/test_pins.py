"""Versions pinned in pyproject.toml and pom.xml must agree with each other and with what is installed."""

from __future__ import annotations

import re
import tomllib
import xml.etree.ElementTree as ET
from importlib.metadata import version
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
POM_NS = {"m": "http://maven.apache.org/POM/4.0.0"}


def _pom_property(name: str) -> str:
    node = ET.parse(REPO / "pom.xml").getroot().find(f"m:properties/m:{name}", POM_NS)
    assert node is not None and node.text, f"pom.xml has no <{name}>"
    return node.text


def _pinned(package: str) -> str:
    deps = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    for dep in deps:
        match = re.fullmatch(rf"{re.escape(package)}==([\w.]+)", dep)
        if match:
            return match.group(1)
    raise AssertionError(f"{package} is not pinned with == in pyproject.toml")


def test_spark_connector_matches_pyspark_pin_and_install() -> None:
    assert _pom_property("spark.version") == _pinned("pyspark") == version("pyspark")


def test_pyspark_python_files_match_the_jvm_side() -> None:
    # pyspark-client (pulled by the Spark provider) writes the same folder: versions must agree.
    import pyspark

    assert pyspark.__version__ == version("pyspark-client") == version("pyspark")


def test_kafka_is_4x_and_airflow_is_3x() -> None:
    assert _pom_property("kafka.version").startswith("4.")
    assert version("apache-airflow").startswith("3.") and version("apache-airflow") == _pinned("apache-airflow")
