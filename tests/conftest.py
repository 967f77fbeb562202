"""Session fixtures: one pair of real Kafka clusters for the whole run, unique topic names.

Point the suite at clusters you already run with ``MIRRORFLOW_TEST_PRIMARY`` and
``MIRRORFLOW_TEST_BACKUP`` (bootstrap servers); otherwise the session starts two
local clusters from the Maven jars on free loopback ports and stops them at the end.
Tests that use these fixtures are marked ``kafka`` automatically.
"""

from __future__ import annotations

import os
import tempfile
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from replicator.testing.process import killed_threads_end_silently
from tests.support import free_port, start_pair

REPO = Path(__file__).resolve().parent.parent
PRIMARY_ENV, BACKUP_ENV = "MIRRORFLOW_TEST_PRIMARY", "MIRRORFLOW_TEST_BACKUP"
_KAFKA_FIXTURES = {"clusters", "primary", "backup", "primary_admin", "backup_admin", "test_config"}


def pytest_configure(config: pytest.Config) -> None:
    """Airflow reads its settings at import: give it a private home before any test imports it."""
    os.environ["AIRFLOW_HOME"] = tempfile.mkdtemp(prefix="mirrorflow-test-airflow-")
    os.environ.setdefault("AIRFLOW__CORE__LOAD_EXAMPLES", "False")
    os.environ["AIRFLOW__CORE__DAGS_FOLDER"] = str(REPO / "dags")
    os.environ["AIRFLOW__CORE__PLUGINS_FOLDER"] = str(REPO / "plugins")
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")


def pytest_unconfigure(config: pytest.Config) -> None:
    """Airflow's private home goes with the session (each run made one more under /tmp)."""
    import shutil

    home = os.environ.get("AIRFLOW_HOME", "")
    if Path(home).name.startswith("mirrorflow-test-airflow-"):
        shutil.rmtree(home, ignore_errors=True)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test that touches the real clusters, so `-m "not kafka"` is the pure suite."""
    for item in items:
        if _KAFKA_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.kafka)


@pytest.fixture(autouse=True)
def _fake_processes(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A fake process's helper thread that meets its SIGKILL (``ProcessKilled``) ends without a word, as a
    killed process's threads do; pytest reported it as an unhandled thread exception. A test that fails while its
    fake workers run leaves them to the next test: they are killed as it ends instead."""
    monkeypatch.setattr(threading, "excepthook", killed_threads_end_silently(threading.excepthook))
    yield
    from tests.fake_route import end_leftovers

    end_leftovers()


@dataclass(frozen=True)
class Endpoint:
    """One test cluster: its name and bootstrap servers."""

    name: str
    bootstrap_servers: str

    @property
    def properties(self) -> dict[str, str]:
        """librdkafka properties for a client of this cluster."""
        return {"bootstrap.servers": self.bootstrap_servers}


@dataclass(frozen=True)
class ClusterPair:
    """The session's two clusters."""

    primary: Endpoint
    backup: Endpoint


@pytest.fixture(scope="session")
def clusters(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterPair]:
    """Two running clusters for the whole session (started here unless given by env)."""
    given = os.environ.get(PRIMARY_ENV), os.environ.get(BACKUP_ENV)
    if all(given):
        yield ClusterPair(Endpoint("primary", given[0]), Endpoint("backup", given[1]))  # type: ignore[arg-type]
        return
    home = tmp_path_factory.mktemp("clusters")
    started = start_pair(home, {"primary": free_port(), "backup": free_port()})
    try:
        yield ClusterPair(
            *(Endpoint(c.spec.name, c.spec.bootstrap_servers) for c in started)
        )
    finally:
        for cluster in started:
            cluster.stop()


@pytest.fixture(scope="session")
def primary(clusters: ClusterPair) -> Endpoint:
    """The session's source-side cluster."""
    return clusters.primary


@pytest.fixture(scope="session")
def backup(clusters: ClusterPair) -> Endpoint:
    """The session's target-side cluster."""
    return clusters.backup


@pytest.fixture(scope="session")
def primary_admin(primary: Endpoint):  # type: ignore[no-untyped-def]
    """An AdminClient of the primary cluster."""
    from replicator.kafka.admin import admin_client

    return admin_client(primary.bootstrap_servers)


@pytest.fixture(scope="session")
def backup_admin(backup: Endpoint):  # type: ignore[no-untyped-def]
    """An AdminClient of the backup cluster."""
    from replicator.kafka.admin import admin_client

    return admin_client(backup.bootstrap_servers)


@pytest.fixture
def unique_name(request: pytest.FixtureRequest) -> str:
    """A topic/group name no other test (or earlier run on the same clusters) uses."""
    base = "".join(c if c.isalnum() else "-" for c in request.node.name)[:60].strip("-")
    return f"t-{base}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def test_config(tmp_path: Path, clusters: ClusterPair) -> Path:
    """A mirrorflow.yaml for the session's clusters, with its own SQLite state DB."""
    path = tmp_path / "mirrorflow.yaml"
    path.write_text(
        "clusters:\n"
        f"  primary: {{bootstrap.servers: \"{clusters.primary.bootstrap_servers}\"}}\n"
        f"  backup: {{bootstrap.servers: \"{clusters.backup.bootstrap_servers}\"}}\n"
        "routes:\n"
        "  - {name: primary-to-backup, source: primary, target: backup, topics: [\"orders\"]}\n"
        f"state: {{url: \"sqlite:///{tmp_path / 'state.db'}\"}}\n"
    )
    return path
