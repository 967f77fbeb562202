"""A throwaway PostgreSQL server from the machine's binaries, which a test may stop and start again."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from tests.support import free_port


def pg_bin() -> Path | None:
    """The folder of PostgreSQL's server binaries (Debian: /usr/lib/postgresql/*/bin), None without them."""
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
    if found:
        return found[-1].parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


class PostgresServer:
    """A new cluster on a free loopback port, trust login as user ``mirrorflow``; removed by :meth:`remove`."""

    def __init__(self, bindir: Path) -> None:
        self.bindir = bindir
        self.home = Path(tempfile.mkdtemp(prefix="mirrorflow-pg-"))
        if os.geteuid() == 0:  # initdb refuses to run as root; CI runs as root
            shutil.chown(self.home, "postgres", "postgres")
        self.data, self.port = self.home / "data", free_port()
        self._pg("initdb", "-D", str(self.data), "-U", "mirrorflow", "--auth=trust", "-E", "UTF8")

    @property
    def url(self) -> str:
        """The URL of its ``postgres`` database."""
        return f"postgresql+psycopg://mirrorflow@127.0.0.1:{self.port}/postgres"

    def start(self) -> None:
        """Start it and wait until it accepts connections."""
        self._pg("pg_ctl", "-D", str(self.data), "-w", "-l", str(self.home / "pg.log"), "-o",
                 f"-p {self.port} -k {self.home} -c listen_addresses=127.0.0.1 -c fsync=off", "start")

    def stop(self) -> None:
        """Stop it (fast: open sessions are cut, as a crash or a failover would cut them)."""
        self._pg("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")

    def running(self) -> bool:
        """``pg_ctl status``: a server runs on its data folder."""
        return self._pg("pg_ctl", "-D", str(self.data), "status", check=False).returncode == 0

    def remove(self) -> None:
        """Stop it if it runs, and delete its files."""
        if self.running():
            self.stop()
        shutil.rmtree(self.home, ignore_errors=True)

    def _pg(self, tool: str, *args: str, check: bool = True) -> subprocess.CompletedProcess[bytes]:
        command = [str(self.bindir / tool), *args]
        if os.geteuid() == 0:
            command = ["runuser", "-u", "postgres", "--", *command]
        return subprocess.run(command, check=check, capture_output=True, timeout=120)
