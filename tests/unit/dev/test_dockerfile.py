"""The Dockerfile (it cannot be built here: no Docker engine): the image carries Spark's Kafka connector jars,
fetched by a Maven stage from pom.xml's spark profile, where replicator.jars looks for them."""

from __future__ import annotations

import pytest

from tests.compose_checks import APP_DIR, REPO
from tests.dockerfile_checks import DOCKERFILE, jars_stage_problems, stages

TEXT = (REPO / DOCKERFILE).read_text(encoding="utf-8")


def test_the_image_carries_the_connector_jars_where_the_code_looks() -> None:
    assert len(stages(TEXT)) >= 2, "no multi-stage build"
    problems = jars_stage_problems(TEXT, REPO)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize(("old", "new", "expected"), [
    ("-P spark", "-P kafka", "no `mvn -P spark dependency:copy-dependencies`"),
    ("dependency:copy-dependencies", "dependency:tree", "no `mvn -P spark"),
    ("maven:3.9-eclipse-temurin-17", "maven:3.9-eclipse-temurin-21", "not an official maven tag of Java 17"),
    ("maven:3.9-eclipse-temurin-17", "maven:latest", "not an official maven tag"),
    ("COPY pom.xml .", "COPY . .", "does not copy pom.xml"),
    ("WORKDIR /build", "WORKDIR /src", "the jars are at /src/.cache/jars/spark"),
    ("MIRRORFLOW_JARS=/opt/mirrorflow-jars", "MIRRORFLOW_JARS=/opt/jars", "looks in /opt/jars/spark"),
    ("COPY --from=spark-jars", "COPY --from=jars", "copies nothing from spark-jars"),
    ("FROM maven:3.9-eclipse-temurin-17 AS spark-jars", "FROM python:3.11 AS spark-jars", "no maven stage"),
], ids=["profile", "goal", "java", "tag", "pom", "workdir", "env", "from", "no-stage"])
def test_a_broken_jars_stage_is_reported(old: str, new: str, expected: str) -> None:
    assert old in TEXT
    problems = jars_stage_problems(TEXT.replace(old, new), REPO)
    assert any(expected in p for p in problems), problems


def test_the_image_compiles_its_own_modules_since_it_writes_no_bytecode() -> None:
    """The final stage sets PYTHONDONTWRITEBYTECODE and installs the package editable: without a compile step
    every worker and command in it compiled the project's modules from source at each start."""
    final = stages(TEXT)[-1]
    assert final.env().get("PYTHONDONTWRITEBYTECODE") == "1"
    compiled = {word for args in final.all("RUN") if "compileall" in args for word in args.split()}
    assert {f"{APP_DIR}/{package}" for package in ("replicator", "dags", "plugins", "spark_jobs")} <= compiled
