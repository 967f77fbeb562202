"""A state database that fails says why in one line, never with its password, and whether to ask again."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import psycopg
import pytest
from sqlalchemy.exc import OperationalError

from replicator.errors import StateStoreError
from replicator.state.db_errors import cause_of
from replicator.state.store import StateStore, current_revision, head_revision
from tests.support import free_port


def _open_fails(url: str) -> StateStoreError:
    with pytest.raises(StateStoreError) as caught:
        StateStore(url)
    assert "\n" not in str(caught.value)
    return caught.value


def test_nothing_listening_is_unreachable_and_worth_asking_again() -> None:
    error = _open_fails(f"postgresql+psycopg://app:secretpw@127.0.0.1:{free_port()}/mf")
    assert str(error).startswith("state database unreachable (postgresql+psycopg://app:********@127.0.0.1:")
    assert "Connection refused" in str(error) and "secretpw" not in str(error)
    assert (error.retriable, error.exit_code) == (True, 1)


def test_a_file_another_connection_holds_exclusively_is_locked_then_opens(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        error = _open_fails(f"sqlite:///{path}?timeout=0.2")
        assert str(error).startswith("state database locked by another writer (sqlite:///")
        assert error.retriable
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    with StateStore(f"sqlite:///{path}?timeout=0.2") as store:
        assert current_revision(store.engine) == head_revision()


@pytest.mark.parametrize(("url", "says"), [
    ("not a url", "state.url: not a database URL: 'not a url'"),
    ("postgresql://app:hunter22@db:port/mf", "state.url: not a database URL: 'postgresql://app:********@db:port/mf'"),
    ("postgresql+nodriver://app:hunter22@db/mf", "state.url: cannot use postgresql+nodriver://app:********@db/mf"),
])
def test_a_bad_url_is_bad_input_and_never_retried(url: str, says: str) -> None:
    error = _open_fails(url)
    assert str(error).startswith(says) and "hunter22" not in str(error)
    assert (error.retriable, error.exit_code) == (False, 2)


@pytest.mark.postgres
def test_a_refused_login_and_a_missing_database_are_not_retried(postgres_url: str) -> None:
    server = postgres_url.rsplit("@", 1)[1].rsplit("/", 1)[0]
    login = _open_fails(f"postgresql+psycopg://nobody:secretpw@{server}/postgres")
    assert str(login).startswith("state database refused the login (")
    assert 'role "nobody" does not exist' in str(login) and "secretpw" not in str(login)
    missing = _open_fails(postgres_url.rsplit("/", 1)[0] + "/no_such_db")
    assert str(missing).startswith("state database does not exist (") and "no_such_db" in str(missing)
    for error in (login, missing):
        assert (error.retriable, error.exit_code) == (False, 2)


def _sqlite(message: str) -> OperationalError:
    return OperationalError("SELECT 1", {}, sqlite3.OperationalError(message))


def _psycopg(message: str) -> OperationalError:
    return OperationalError("SELECT 1", {}, psycopg.OperationalError(message))


@pytest.mark.parametrize(("error", "cause"), [
    (_sqlite("database is locked"), "locked"),
    (_sqlite("attempt to write a readonly database"), "read-only"),
    (_sqlite("unable to open database file"), "read-only"),
    (_sqlite("no such table: mf_route"), "other"),
    (_psycopg("terminating connection due to administrator command"), "unreachable"),
    (_psycopg("connection failed: FATAL:  the database system is shutting down"), "unreachable"),
    (_psycopg("failed to resolve host 'db.example': [Errno -2] Name or service not known"), "unreachable"),
    (_psycopg("connection failed: FATAL:  password authentication failed for user \"app\""), "login"),
    (_psycopg("connection failed: FATAL:  database \"mf\" does not exist"), "missing"),
    (_psycopg("cannot execute INSERT in a read-only transaction"), "read-only"),
])
def test_cause_of_driver_messages(error: OperationalError, cause: str) -> None:
    assert cause_of(error) == cause
