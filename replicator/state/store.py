"""Open the state database, migrate it, hand out sessions."""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import TracebackType
from typing import TYPE_CHECKING, Self, TypeVar

from sqlalchemy import Connection, Engine, inspect, text
from sqlalchemy.exc import DBAPIError, SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from replicator.domain.secrets import redact_url
from replicator.errors import StateStoreError
from replicator.paths import SQL_DIR
from replicator.state.db_errors import shown_url, state_error
from replicator.state.engine import make_engine
from replicator.state.migration_lock import advisory_lock, file_lock, sqlite_file

if TYPE_CHECKING:
    from alembic.config import Config as AlembicConfig

__all__ = ["StateStore", "current_revision", "head_revision", "make_engine", "upgrade"]

MIGRATIONS_DIR = SQL_DIR / "migrations"
VERSION_TABLE = "mf_alembic_version"  # not Alembic's default: the DB may be shared with Airflow's
# The newest migration in sql/migrations (tests/state/test_store.py checks it is Alembic's head). A database
# whose version row names it is opened without importing Alembic, which took a quarter of a second of every
# command (a third of `mirrorflow status`'s imports); any other is checked and migrated by Alembic.
SCHEMA_HEAD = "0017"

T = TypeVar("T")

log = logging.getLogger(__name__)


def alembic_config(connection: Connection | None = None) -> AlembicConfig:
    """An Alembic config without any .ini file; its migrations run on ``connection``."""
    from alembic.config import Config as AlembicConfig

    cfg = AlembicConfig()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.attributes["connection"] = connection
    return cfg


def _revision(connection: Connection) -> str | None:
    from alembic.runtime.migration import MigrationContext

    context = MigrationContext.configure(connection, opts={"version_table": VERSION_TABLE})
    return context.get_current_revision()


def current_revision(engine: Engine) -> str | None:
    """The migration the database is at, or None when it was never migrated."""
    with engine.connect() as connection:
        return _revision(connection)


def head_revision() -> str | None:
    """The newest migration shipped in ``sql/migrations``."""
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(alembic_config()).get_current_head()


def upgrade(engine: Engine) -> tuple[str | None, str | None]:
    """Migrate to the newest schema; returns (revision before, revision after).

    Safe from many processes at once: see :mod:`replicator.state.migration_lock`. A
    database already at head is only read, so read-only users never take the lock.
    """
    try:
        if _at_schema_head(engine):
            return SCHEMA_HEAD, SCHEMA_HEAD
        from alembic import command

        head = head_revision()
        before = current_revision(engine)
        if before != head:
            with file_lock(engine.url), engine.begin() as connection:
                advisory_lock(connection)
                before = _revision(connection)  # another process may have migrated while this one waited
                if before != head:
                    log.info("migrating state database url=%s from=%s to=%s", shown_url(engine.url), before, head)
                    command.upgrade(alembic_config(connection), "head")
        return before, head
    except DBAPIError as exc:
        raise state_error(exc, engine.url, "migration") from None
    except OSError as exc:  # the lock file beside a SQLite database
        raise StateStoreError(f"state database not writable ({shown_url(engine.url)}): {exc}") from None
    except SQLAlchemyError as exc:
        raise StateStoreError(f"state database migration failed ({shown_url(engine.url)}): "
                              f"{redact_url(str(exc).splitlines()[0])}") from None


def _at_schema_head(engine: Engine) -> bool:
    """The database's version row names SCHEMA_HEAD (read with SQLAlchemy alone)."""
    with engine.connect() as connection:
        if not inspect(connection).has_table(VERSION_TABLE):
            return False
        versions = connection.execute(text(f"SELECT version_num FROM {VERSION_TABLE}")).scalars().all()
    return versions == [SCHEMA_HEAD]


_at_head: set[str] = set()  # the URLs this process found (or brought) at the newest migration
_url_locks: dict[str, threading.Lock] = {}
_url_locks_guard = threading.Lock()


def _reset_after_fork() -> None:
    global _url_locks_guard  # a lock another thread held at the fork would stay held in the child
    _url_locks_guard = threading.Lock()
    _url_locks.clear()


os.register_at_fork(after_in_child=_reset_after_fork)


def _migrate_once(url: str, engine: Engine) -> None:
    """:func:`upgrade` the first time this process opens ``url``; later stores of it skip the check.

    A store is opened per task, per runbook step, per CLI command: checking the schema each time
    cost a connection and a read of the version table. Threads opening one URL together wait for
    the first; a failed check is not remembered, so the next store asks again. Other processes
    are kept apart by :mod:`replicator.state.migration_lock`.
    """
    if engine.url.get_backend_name() == "sqlite" and sqlite_file(engine.url) is None:
        upgrade(engine)  # in memory: each engine is a new, empty database
        return
    if url in _at_head:
        return
    with _url_locks_guard:
        lock = _url_locks.setdefault(url, threading.Lock())
    with lock:
        if url not in _at_head:
            upgrade(engine)
            _at_head.add(url)


class StateStore:
    """The state database of one config: migrated on first use, then sessions.

    A context manager: ``with StateStore(url) as store:`` closes it however the block ends.
    """

    def __init__(self, url: str) -> None:
        self.url = url
        self.engine = make_engine(url)
        try:
            _migrate_once(url, self.engine)
        except BaseException:
            self.engine.dispose()  # a caller that waits for the database opens a new store each time
            raise
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
        retry finds the row the winner wrote. A connection the server closed (it
        restarted) is replaced by the retry too. The last failure is raised as a
        :class:`StateStoreError` naming its cause (``retriable`` when worth asking again).
        """
        for attempt in range(1, attempts + 1):
            try:
                with self.session() as session:
                    return work(session)
            except DBAPIError as exc:
                if attempt == attempts:
                    raise state_error(exc, self.engine.url, "query") from None
                time.sleep(0.1 * attempt)
        raise AssertionError("unreachable")

    def close(self) -> None:
        """Release the connections."""
        self.engine.dispose()

    def __enter__(self) -> Self:
        """The store itself; it is closed when the block ends."""
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        """Close the store; an error raised in the block goes on."""
        self.close()
