"""Engines of the state database: URL checked without echoing secrets, SQLite tuned, no endless waits."""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Mapping

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

from replicator.domain.secrets import redact_url
from replicator.errors import StateStoreError
from replicator.state.db_errors import shown_url
from replicator.state.migration_lock import sqlite_file

CONNECT_TIMEOUT = 5  # seconds; PostgreSQL's default is to wait forever

log = logging.getLogger(__name__)


def _sqlite_pragmas(dbapi_connection: sqlite3.Connection, _record: object) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA foreign_keys=ON")
    try:
        cursor.execute("PRAGMA journal_mode=WAL")  # readers (status, UI) never block the writer
    except sqlite3.OperationalError as exc:
        # The mode is stored in the file, and switching needs the file to itself for an instant:
        # of processes opening a new database together some lose ("database is locked") while
        # another switches it for all. WAL is a speed-up, so a loser carries on; a read-only
        # file stays in its mode.
        log.debug("sqlite journal_mode=WAL not set now error=%s", exc)
    finally:
        cursor.close()


def make_engine(url: str) -> Engine:
    """An engine for ``url``; SQLite files get their folder created and foreign keys on."""
    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError):  # a bad port is a ValueError; messages may quote the password
        raise StateStoreError(f"state.url: not a database URL: {redact_url(url)!r} (expected "
                              "dialect+driver://user:password@host/database)", exit_code=2) from None
    database = sqlite_file(parsed)
    try:
        if database is not None:
            database.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StateStoreError(f"state database not writable ({shown_url(parsed)}): {exc}") from None
    try:
        engine = create_engine(parsed, connect_args=_connect_args(parsed.get_backend_name(), parsed.query))
    except (ArgumentError, ImportError) as exc:
        raise StateStoreError(f"state.url: cannot use {shown_url(parsed)}: {redact_url(str(exc))}",
                              exit_code=2) from None
    if parsed.get_backend_name() == "sqlite":
        event.listen(engine, "connect", _sqlite_pragmas)
    return engine


def _connect_args(backend: str, query: Mapping[str, object]) -> dict[str, object]:
    # libpq waits for a silent host forever by default: a worker must not hang on its state DB.
    if backend == "postgresql" and "connect_timeout" not in query:
        return {"connect_timeout": CONNECT_TIMEOUT}
    return {}
