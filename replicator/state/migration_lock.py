"""One migration of a state database at a time, however many processes start together.

Workers of a route are often started at the same moment (systemd, a Deployment):
each finds the new database empty and, unserialized, all but one would fail on a
table another just created. The winner of the lock migrates; the others re-read
the revision once they hold it and find nothing left to do.

- PostgreSQL: a transaction-level advisory lock on the migrating connection, so it
  is released with that transaction's commit (or its rollback, or the connection's loss).
- SQLite: SQLite creates tables outside the transaction that Alembic's version row
  commits in, so its own locks cannot serialize a migration; an OS lock on a file
  beside the database does, held until that commit is done. An in-memory database
  belongs to one connection and needs none.
"""

from __future__ import annotations

import fcntl
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import Connection, text
from sqlalchemy.engine import URL

log = logging.getLogger(__name__)

ADVISORY_KEY = 0x4D46_5354_4154_4531  # "MFSTATE1": fixed, so every MirrorFlow process takes the same lock


def sqlite_file(url: URL) -> Path | None:
    """The file of a SQLite database (None: not SQLite, or in memory)."""
    if url.get_backend_name() != "sqlite" or not url.database or url.database == ":memory:":
        return None
    if url.query.get("uri") in ("true", "1"):  # sqlite:///file:/path?mode=ro&uri=true
        return None if url.query.get("mode") == "memory" else Path(url.database.removeprefix("file:"))
    return Path(url.database)


def lock_file(url: URL) -> Path | None:
    """The file whose OS lock serializes migrations of a SQLite database (None: no file lock needed)."""
    database = sqlite_file(url)
    return None if database is None else database.with_name(database.name + ".migrate.lock")


@contextmanager
def file_lock(url: URL) -> Iterator[None]:
    """Hold the OS lock of ``url``'s lock file (a no-op for databases that need none)."""
    path = lock_file(url)
    if path is None:
        yield
        return
    with path.open("a") as handle:  # flock: released by the kernel if this process dies
        fcntl.flock(handle, fcntl.LOCK_EX)
        log.debug("migration lock taken path=%s", path)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def advisory_lock(connection: Connection) -> None:
    """On PostgreSQL, wait for the migration lock, held until ``connection``'s transaction ends."""
    if connection.engine.url.get_backend_name() == "postgresql":
        connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": ADVISORY_KEY})
        log.debug("migration lock taken key=%d", ADVISORY_KEY)
