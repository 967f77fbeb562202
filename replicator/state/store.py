"""Open the state database, migrate it, hand out sessions."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from alembic import command
from alembic.config import Config as AlembicConfig
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, IntegrityError, OperationalError, SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from replicator.errors import StateStoreError
from replicator.paths import SQL_DIR

MIGRATIONS_DIR = SQL_DIR / "migrations"
VERSION_TABLE = "mf_alembic_version"  # not Alembic's default: the DB may be shared with Airflow's

T = TypeVar("T")

log = logging.getLogger(__name__)


def alembic_config(engine: Engine) -> AlembicConfig:
    """An Alembic config for ``engine`` without any .ini file."""
    cfg = AlembicConfig()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.attributes["engine"] = engine
    return cfg


def _sqlite_pragmas(dbapi_connection: object, _record: object) -> None:
    cursor = dbapi_connection.cursor()  # type: ignore[attr-defined]
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA journal_mode=WAL")  # readers (status, UI) never block the writer
    cursor.close()


def make_engine(url: str) -> Engine:
    """An engine for ``url``; SQLite files get their folder created and foreign keys on."""
    try:
        parsed = make_url(url)
    except ArgumentError as exc:
        raise StateStoreError(f"state.url: not a database URL: {exc}") from None
    if parsed.get_backend_name() == "sqlite" and parsed.database not in (None, "", ":memory:"):
        Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
    try:
        engine = create_engine(parsed)
    except (ArgumentError, ImportError) as exc:
        raise StateStoreError(f"state.url: cannot use {parsed.render_as_string()}: {exc}") from None
    if parsed.get_backend_name() == "sqlite":
        event.listen(engine, "connect", _sqlite_pragmas)
    return engine


def current_revision(engine: Engine) -> str | None:
    """The migration the database is at, or None when it was never migrated."""
    with engine.connect() as connection:
        context = MigrationContext.configure(connection, opts={"version_table": VERSION_TABLE})
        return context.get_current_revision()


def head_revision(engine: Engine) -> str | None:
    """The newest migration shipped in ``sql/migrations``."""
    return ScriptDirectory.from_config(alembic_config(engine)).get_current_head()


def upgrade(engine: Engine) -> tuple[str | None, str | None]:
    """Migrate to the newest schema; returns (revision before, revision after)."""
    try:
        before = current_revision(engine)
        head = head_revision(engine)
        if before != head:
            log.info("migrating state database from=%s to=%s", before, head)
            command.upgrade(alembic_config(engine), "head")
        return before, head
    except OperationalError as exc:
        raise StateStoreError(f"state database unreachable or not writable: {exc.orig}") from None
    except SQLAlchemyError as exc:
        raise StateStoreError(f"state database migration failed: {exc}") from exc


class StateStore:
    """The state database of one config: migrated on first use, then sessions."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.engine = make_engine(url)
        upgrade(self.engine)
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)

    @contextmanager
    def session(self) -> Iterator[Session]:
        """A session committed on success and rolled back on error."""
        with self._sessions.begin() as session:
            yield session

    def run(self, work: Callable[[Session], T], attempts: int = 3) -> T:
        """``work`` in its own transaction, retried when a concurrent writer got there first.

        Two workers of a route start together and upsert the same rows: the loser of
        that race sees an IntegrityError (or SQLite's "database is locked"), and the
        retry finds the row the winner wrote.
        """
        for attempt in range(1, attempts + 1):
            try:
                with self.session() as session:
                    return work(session)
            except (IntegrityError, OperationalError) as exc:
                if attempt == attempts:
                    raise StateStoreError(f"state database write failed: {exc.orig}") from None
                time.sleep(0.1 * attempt)
        raise AssertionError("unreachable")

    def close(self) -> None:
        """Release the connections."""
        self.engine.dispose()
