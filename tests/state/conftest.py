"""Database URLs the state tests run on: SQLite always, PostgreSQL where it is installed.

``MIRRORFLOW_TEST_POSTGRES_URL`` points at a server you run; otherwise, when the
machine has PostgreSQL's binaries (Debian: /usr/lib/postgresql/*/bin), the session
starts a throwaway server on a free loopback port and removes it at the end.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.support import free_port


def _pg_bin() -> Path | None:
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
    if found:
        return found[-1].parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def _as_postgres_user(command: list[str]) -> list[str]:
    # initdb refuses to run as root; CI runs as root.
    return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else command


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A URL of an empty PostgreSQL database (skips the PostgreSQL cases where none exists)."""
    given = os.environ.get("MIRRORFLOW_TEST_POSTGRES_URL")
    if given:
        yield given
        return
    bindir = _pg_bin()
    if bindir is None:
        pytest.skip("PostgreSQL is not installed here (no initdb); SQLite cases still run")
    home = Path(tempfile.mkdtemp(prefix="mirrorflow-pg-"))
    if os.geteuid() == 0:
        shutil.chown(home, "postgres", "postgres")
    data, port = home / "data", free_port()
    run = lambda *cmd: subprocess.run(_as_postgres_user([str(bindir / cmd[0]), *cmd[1:]]),  # noqa: E731
                                      check=True, capture_output=True, timeout=120)
    run("initdb", "-D", str(data), "-U", "mirrorflow", "--auth=trust", "-E", "UTF8")
    run("pg_ctl", "-D", str(data), "-w", "-l", str(home / "pg.log"), "-o",
        f"-p {port} -k {home} -c listen_addresses=127.0.0.1 -c fsync=off", "start")
    try:
        yield f"postgresql+psycopg://mirrorflow@127.0.0.1:{port}/postgres"
    finally:
        run("pg_ctl", "-D", str(data), "-m", "fast", "-w", "stop")
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def state_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """An empty database of each kind, one test at a time."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'state.db'}"
        return
    base: str = request.getfixturevalue("postgres_url")
    with fresh_database(base, f"t{os.getpid()}_{abs(hash(request.node.nodeid)) % 10**8}") as url:
        yield url


@contextmanager
def fresh_database(base_url: str, name: str) -> Iterator[str]:
    """The URL of a new, empty database ``name`` on the server of ``base_url``, dropped afterwards."""
    from sqlalchemy import create_engine, text

    admin = create_engine(base_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield base_url.rsplit("/", 1)[0] + f"/{name}"
    finally:
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()
