"""Fixtures of the integration tests that run `mirrorflow run` workers."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import Worker


@pytest.fixture
def workers(tmp_path: Path) -> Iterator[list[Worker]]:
    """Workers started by a test; any still running at the end are stopped (SIGTERM)."""
    started: list[Worker] = []
    yield started
    for worker in started:
        if worker.process.poll() is None:
            worker.terminate()


@pytest.fixture(scope="session")
def airflow_db() -> None:
    """Airflow's own SQLite metadata DB, migrated once per session (AIRFLOW_HOME: conftest)."""
    import subprocess
    import sys

    airflow = Path(sys.executable).parent / "airflow"
    done = subprocess.run([str(airflow), "db", "migrate"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]


@pytest.fixture
def task_environ() -> Iterator[None]:
    """dag.test() runs tasks in this process: what a task sets in os.environ (Spark submit's
    connection, PATH, PYSPARK_*) is restored afterwards, as a task process's would vanish."""
    import os

    saved = dict(os.environ)
    yield
    os.environ.clear()
    os.environ.update(saved)
