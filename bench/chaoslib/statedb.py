"""The route's state database during a fault run: a SQLite file, or a throwaway PostgreSQL server.

The faults on it: PostgreSQL stopped and started again, and "another writer holds the
database" (SQLite: ``BEGIN EXCLUSIVE`` on the file; PostgreSQL: ``LOCK TABLE ... IN ACCESS
EXCLUSIVE MODE`` on the route's tables). The harness reads ``mf_data_loss`` from it to
compare the losses the route reported with the truth.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from bench.chaoslib.accounting import LossRange
from replicator.dev.localpostgres import LocalPostgres, pg_bin
from replicator.dev.ports import free_port

LOCKED_TABLES = "mf_route, mf_route_topic, mf_data_loss, mf_transaction_count"  # every table a worker writes


class StateDb:
    """One state database: its URL for the workers, its faults, and its reported losses."""

    def __init__(self, kind: str, home: Path) -> None:
        self.kind, self.home = kind, home
        self._held: Any = None
        if kind == "sqlite":
            self.url = f"sqlite:///{home / 'state.db'}"
            return
        bindir = pg_bin()
        if bindir is None:
            raise RuntimeError("--state postgres: PostgreSQL's binaries (initdb, pg_ctl) are not installed")
        self._server = LocalPostgres(bindir, free_port())
        home.mkdir(parents=True, exist_ok=True)
        (home / "postgres").symlink_to(self._server.home)  # its log, beside the other logs of the run
        self._server.start()
        self.url = self._server.url

    def start_server(self) -> None:
        """Start the PostgreSQL server (waits until it accepts connections)."""
        self._server.start()

    def stop_server(self) -> None:
        """Stop the PostgreSQL server (fast: open sessions are cut)."""
        self._server.stop()

    def hold(self) -> None:
        """Another writer takes the database (or the route's tables) and keeps it until ``release``."""
        if self.kind == "sqlite":
            held = sqlite3.connect(self.home / "state.db", timeout=60, isolation_level=None)
            held.execute("BEGIN EXCLUSIVE")
            self._held = held
            return
        from sqlalchemy import create_engine, text

        engine = create_engine(self.url)
        connection = engine.connect()
        connection.begin()
        connection.execute(text(f"LOCK TABLE {LOCKED_TABLES} IN ACCESS EXCLUSIVE MODE"))
        self._held = (engine, connection)

    def release(self) -> None:
        """The other writer lets go (rolls back)."""
        held, self._held = self._held, None
        if isinstance(held, sqlite3.Connection):
            held.rollback()
            held.close()
        elif held is not None:
            engine, connection = held
            connection.rollback()
            connection.close()
            engine.dispose()

    def reported_losses(self, route: str) -> list[LossRange] | None:
        """The ranges the route stored in ``mf_data_loss``; None when the database did not answer
        (or has no such table yet): the caller keeps what it read before."""
        from sqlalchemy import create_engine, text
        from sqlalchemy.exc import SQLAlchemyError

        engine = create_engine(self.url)
        try:
            with engine.connect() as connection:
                rows = connection.execute(text("SELECT topic, partition, from_offset, to_offset FROM mf_data_loss "
                                               "WHERE route = :route ORDER BY id"), {"route": route}).all()
        except SQLAlchemyError:
            return None
        finally:
            engine.dispose()
        return [LossRange(str(t), int(p), int(a), int(b)) for t, p, a, b in rows]

    def close(self, keep: bool = False) -> None:
        """Let go of any lock and stop the server; its folder goes unless ``keep``."""
        self.release()
        if self.kind == "postgres":
            self._server.remove(keep_files=keep)
