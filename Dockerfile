# syntax=docker/dockerfile:1
# The MirrorFlow image of docker-compose.yml and docker/kubernetes/: the `mirrorflow` CLI, Airflow
# and PySpark (all come with the package), a JRE because PySpark starts a JVM, and Spark's Kafka
# connector jars. The same image runs the workers, Airflow (the Spark driver) and the Spark master
# and worker, so the cluster's Spark is the driver's and the executors have the Python packages
# (replicator, confluent-kafka) the jobs import.

# The connector jars, fetched from Maven Central as `make jars` fetches them: the `spark` profile of
# pom.xml (where their version is pinned) writes them to <pom's folder>/.cache/jars/spark.
FROM maven:3.9-eclipse-temurin-17 AS spark-jars
WORKDIR /build
COPY pom.xml .
RUN --mount=type=cache,target=/root/.m2 mvn -q -B -P spark dependency:copy-dependencies

FROM python:3.11-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    MIRRORFLOW_JARS=/opt/mirrorflow-jars

RUN apt-get update \
 && apt-get install -y --no-install-recommends openjdk-17-jre-headless \
 && rm -rf /var/lib/apt/lists/*

# replicator.jars looks in $MIRRORFLOW_JARS/spark (.cache/ stays out of the build context).
COPY --from=spark-jars /build/.cache/jars/spark /opt/mirrorflow-jars/spark

COPY . /opt/mirrorflow
# Editable: replicator.paths finds sql/, dags/ and spark_jobs/ next to the
# package, so it must run from this checkout, not from site-packages. The
# `postgres` extra: the compose stack keeps its state in PostgreSQL.
RUN pip install --no-cache-dir -e "/opt/mirrorflow[postgres]"
# PYTHONDONTWRITEBYTECODE keeps the running containers from writing caches, so the project's own modules are
# compiled here, once: else every worker and command compiles them from source at each start.
RUN python -m compileall -q /opt/mirrorflow/replicator /opt/mirrorflow/dags /opt/mirrorflow/plugins \
    /opt/mirrorflow/spark_jobs

WORKDIR /opt/mirrorflow
