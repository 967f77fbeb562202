"""Ports handed to one test process are never handed to another running beside it (they are reserved until the
process that got them ends)."""

from __future__ import annotations

import subprocess
import sys

from replicator.dev import ports

ASK = "import sys; from replicator.dev import ports; print(ports._reserve(int(sys.argv[1])))"


def _another_process_may_take(port: int) -> bool:
    done = subprocess.run([sys.executable, "-c", ASK, str(port)], capture_output=True, text=True, check=True,
                          timeout=60)
    return done.stdout.strip() == "True"


def test_a_port_and_its_pair_are_reserved_for_the_process_that_got_them() -> None:
    port = ports.free_port(pair=True)
    assert not _another_process_may_take(port) and not _another_process_may_take(port + 1)
    assert len({ports.free_port(pair=True) for _ in range(20)} | {port}) == 21  # never the same one twice here


def test_a_reservation_ends_with_its_process() -> None:
    taken = subprocess.run([sys.executable, "-c", "from replicator.dev import ports; print(ports.free_port())"],
                           capture_output=True, text=True, check=True, timeout=60).stdout.strip()
    assert _another_process_may_take(int(taken))
