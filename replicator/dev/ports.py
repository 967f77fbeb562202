"""Free loopback ports for the servers that tests and benches start, never handed to two processes at once.

A port found free is only free until someone binds it: a broker binds its port seconds after it
was picked, and a second test process picking meanwhile could get the same one ("Unable to start
acceptor"). Each port handed out is reserved by a lock on a file of its own under the system temp
dir (``mirrorflow-ports/<port>.lock``), held until the process ends (the OS drops it even on a
crash); a process skips the ports another holds.
"""

from __future__ import annotations

import fcntl
import socket
import tempfile
from pathlib import Path
from typing import IO

_HELD: list[IO[str]] = []  # the open lock files of the ports this process reserved


def _is_free(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket() as probe:
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True


def _reserve(port: int) -> bool:
    """Take ``port`` for this process; False when another process holds it."""
    folder = Path(tempfile.gettempdir()) / "mirrorflow-ports"
    folder.mkdir(exist_ok=True)
    handle = open(folder / f"{port}.lock", "a")  # noqa: SIM115 - held open until the process ends
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.close()
        return False
    _HELD.append(handle)
    return True


def free_port(pair: bool = False) -> int:
    """A free loopback port reserved for this process; with ``pair``, the next port is free and reserved too
    (a local cluster's controller listens on its port + 1)."""
    for _ in range(100):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = int(probe.getsockname()[1])
        if pair and (port >= 65535 or not _is_free(port + 1)):
            continue
        if _reserve(port) and (not pair or _reserve(port + 1)):
            return port
    raise OSError("no free loopback port found" + (" with a free next one" if pair else ""))
