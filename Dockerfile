# The MirrorFlow image of docker-compose.yml: the `mirrorflow` CLI and Airflow
# (both come with the package), plus a JRE because PySpark starts a JVM.
FROM python:3.11-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

RUN apt-get update \
 && apt-get install -y --no-install-recommends openjdk-17-jre-headless \
 && rm -rf /var/lib/apt/lists/*

COPY . /opt/mirrorflow
# Editable: replicator.paths finds sql/, dags/ and spark_jobs/ next to the
# package, so it must run from this checkout, not from site-packages. The
# `postgres` extra: the compose stack keeps its state in PostgreSQL.
RUN pip install --no-cache-dir -e "/opt/mirrorflow[postgres]"

WORKDIR /opt/mirrorflow
