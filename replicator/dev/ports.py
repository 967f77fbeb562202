"""Free loopback ports for the servers that tests and benches start, never handed to two processes at once.

A port found free is only free until someone binds it: a broker binds its port seconds after it
was picked. Two things can take it meanwhile:

- A second test process picking ports. Each port handed out is reserved by a lock on a file of its
  own under the system temp dir (``mirrorflow-ports/<port>.lock``), held until the process ends (the
  OS drops it even on a crash); a process skips the ports another holds.
- Any client connecting anywhere: the kernel gives each outgoing connection a local port from its
  ephemeral range (``net.ipv4.ip_local_port_range``; Linux hands even ones to ``connect`` and odd ones
  to ``bind(0)``), and a listener cannot bind a port a connection holds ("Address already in use").
  So ports are picked below that range, where the kernel never picks one by itself.
"""

from __future__ import annotations

import fcntl
import random
import socket
import tempfile
from pathlib import Path
from typing import IO

_HELD: list[IO[str]] = []  # the open lock files of the ports this process reserved
_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
_LOWEST = 10000  # below: well-known services' ports
_DEFAULT_EPHEMERAL = (32768, 60999)  # Linux's default, when the range cannot be read
_PICK = random.Random()  # our own: a test that seeds the module's generator changes nothing here


def ephemeral_range(source: Path = _RANGE_FILE) -> tuple[int, int]:
    """The kernel's range of ports for outgoing connections (first, last)."""
    try:
        first, last = (int(field) for field in source.read_text().split())
    except (OSError, ValueError):
        return _DEFAULT_EPHEMERAL
    return first, last


def candidate_ports(ephemeral: tuple[int, int]) -> range:
    """The ports to pick from: between ``_LOWEST`` and the ephemeral range, or above it when that is too small."""
    first, last = ephemeral
    if first - _LOWEST >= 2000:
        return range(_LOWEST, first - 1)  # keep a pair's second port below the range too
    return range(last + 1, 65535)


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


def _release_last() -> None:
    _HELD.pop().close()


def free_port(pair: bool = False) -> int:
    """A free loopback port outside the kernel's ephemeral range, reserved for this process; with ``pair``, the
    next port is free and reserved too (a local cluster's controller listens on its port + 1)."""
    candidates = candidate_ports(ephemeral_range())
    for _ in range(200):
        port = _PICK.choice(candidates)
        if not (_is_free(port) and (not pair or _is_free(port + 1))):
            continue
        if not _reserve(port):
            continue
        if not pair or _reserve(port + 1):
            return port
        _release_last()
    raise OSError(f"no free loopback port found in {candidates.start}-{candidates.stop}"
                  + (" with a free next one" if pair else ""))
