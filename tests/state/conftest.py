"""Database URLs the state tests run on: SQLite always, PostgreSQL where it is installed.

``MIRRORFLOW_TEST_POSTGRES_URL`` points at a server you run; otherwise, when the
machine has PostgreSQL's binaries (Debian: /usr/lib/postgresql/*/bin), the session
starts a throwaway server on a free loopback port and removes it at the end.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from replicator.dev.localpostgres import LocalPostgres, pg_bin
from tests.support import free_port


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A URL of an empty PostgreSQL database (skips the PostgreSQL cases where none exists)."""
    given = os.environ.get("MIRRORFLOW_TEST_POSTGRES_URL")
    if given:
        yield given
        return
    bindir = pg_bin()
    if bindir is None:
        pytest.skip("PostgreSQL is not installed here (no initdb); SQLite cases still run")
    server = LocalPostgres(bindir, free_port())
    try:
        server.start()
        yield server.url
    finally:
        server.remove()


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
