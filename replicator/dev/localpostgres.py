"""A throwaway PostgreSQL server on loopback, from the machine's own binaries (tests and the fault harness).

Its files live in a folder of their own under the system temp dir: as root, the server runs
as the ``postgres`` user (initdb refuses root), who cannot reach into 0700 folders such as
pytest's. Login is ``mirrorflow`` with trust, on a free port; it can be stopped and started
again (the state database's outage in fault tests).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path


def pg_bin() -> Path | None:
    """The folder of PostgreSQL's server binaries (Debian: /usr/lib/postgresql/*/bin), None without them."""
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
    if found:
        return found[-1].parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


class LocalPostgres:
    """A new cluster on ``port``, trust login as user ``mirrorflow``; removed by :meth:`remove`."""

    def __init__(self, bindir: Path, port: int) -> None:
        self.bindir, self.port = bindir, port
        self.home = Path(tempfile.mkdtemp(prefix="mirrorflow-pg-"))
        if os.geteuid() == 0:
            shutil.chown(self.home, "postgres", "postgres")
        self.data, self.log = self.home / "data", self.home / "postgres.log"
        self._pg("initdb", "-D", str(self.data), "-U", "mirrorflow", "--auth=trust", "-E", "UTF8")

    @property
    def url(self) -> str:
        """The URL of its ``postgres`` database."""
        return f"postgresql+psycopg://mirrorflow@127.0.0.1:{self.port}/postgres"

    def start(self) -> None:
        """Start it and wait until it accepts connections."""
        self._pg("pg_ctl", "-D", str(self.data), "-w", "-l", str(self.log), "-o",
                 f"-p {self.port} -k {self.home} -c listen_addresses=127.0.0.1 -c fsync=off", "start")

    def stop(self) -> None:
        """Stop it (fast: open sessions are cut, as a crash or a failover would cut them)."""
        self._pg("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")

    def running(self) -> bool:
        """``pg_ctl status``: a server runs on its data folder."""
        return self._pg("pg_ctl", "-D", str(self.data), "status", check=False).returncode == 0

    def remove(self, keep_files: bool = False) -> None:
        """Stop it if it runs, and delete its files (unless ``keep_files``)."""
        if self.running():
            self.stop()
        if not keep_files:
            shutil.rmtree(self.home, ignore_errors=True)

    def _pg(self, tool: str, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        command = [str(self.bindir / tool), *args]
        if os.geteuid() == 0:
            command = ["runuser", "-u", "postgres", "--", *command]
        done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
        if check and done.returncode != 0:
            raise RuntimeError(f"PostgreSQL {tool} failed: {done.stderr.strip()[-300:]}")
        return done
