"""The route's state database during a fault run: a SQLite file, or a throwaway PostgreSQL server.

The faults on it: PostgreSQL stopped and started again, and "another writer holds the
database" (SQLite: ``BEGIN EXCLUSIVE`` on the file; PostgreSQL: ``LOCK TABLE ... IN ACCESS
EXCLUSIVE MODE`` on the route's tables). The harness reads ``mf_data_loss`` from it to
compare the losses the route reported with the truth.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from bench.chaoslib.accounting import LossRange
from bench.chaoslib.cluster import free_port

LOCKED_TABLES = "mf_route, mf_route_topic, mf_data_loss"


def postgres_bin() -> Path | None:
    """PostgreSQL's server binaries (Debian's /usr/lib/postgresql/*/bin, or initdb on PATH)."""
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
    if found:
        return found[-1].parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


class StateDb:
    """One state database: its URL for the workers, its faults, and its reported losses."""

    def __init__(self, kind: str, home: Path) -> None:
        self.kind, self.home = kind, home
        self._held: Any = None
        if kind == "sqlite":
            self.url = f"sqlite:///{home / 'state.db'}"
            return
        bindir = postgres_bin()
        if bindir is None:
            raise RuntimeError("--state postgres: PostgreSQL's binaries (initdb, pg_ctl) are not installed")
        # Its own folder under the system temp dir: as root, the server runs as the postgres user,
        # who cannot reach into the run's folder (mkdtemp and pytest make them 0700).
        self._pg_home = Path(tempfile.mkdtemp(prefix="mirrorflow-chaos-pg-"))
        self._bin, self._data, self._port = bindir, self._pg_home / "data", free_port()
        if os.geteuid() == 0:  # initdb refuses root
            shutil.chown(self._pg_home, "postgres", "postgres")
        home.mkdir(parents=True, exist_ok=True)
        (home / "postgres").symlink_to(self._pg_home)  # its log, beside the other logs of the run
        self._pg("initdb", "-D", str(self._data), "-U", "mirrorflow", "--auth=trust", "-E", "UTF8")
        self.start_server()
        self.url = f"postgresql+psycopg://mirrorflow@127.0.0.1:{self._port}/postgres"

    def _pg(self, *command: str) -> None:
        args = [str(self._bin / command[0]), *command[1:]]
        if os.geteuid() == 0:
            args = ["runuser", "-u", "postgres", "--", *args]
        done = subprocess.run(args, capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            raise RuntimeError(f"PostgreSQL {command[0]} failed: {done.stderr.strip()[-300:]}")

    def start_server(self) -> None:
        """Start the PostgreSQL server (waits until it accepts connections)."""
        self._pg("pg_ctl", "-D", str(self._data), "-w", "-l", str(self._pg_home / "postgres.log"), "-o",
                 f"-p {self._port} -k {self._pg_home} -c listen_addresses=127.0.0.1 -c fsync=off", "start")

    def stop_server(self) -> None:
        """Stop the PostgreSQL server (fast: open sessions are cut)."""
        self._pg("pg_ctl", "-D", str(self._data), "-m", "fast", "-w", "stop")

    def hold(self) -> None:
        """Another writer takes the database (or the route's tables) and keeps it until ``release``."""
        if self.kind == "sqlite":
            connection = sqlite3.connect(self.home / "state.db", timeout=60, isolation_level=None)
            connection.execute("BEGIN EXCLUSIVE")
            self._held = connection
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
            try:
                self.stop_server()
            except RuntimeError:
                pass  # already stopped (a fault was interrupted)
            if not keep:
                shutil.rmtree(self._pg_home, ignore_errors=True)
