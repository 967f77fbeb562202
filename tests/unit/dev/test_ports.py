"""Ports handed to one test process are never handed to another running beside it (they are reserved until the
process that got them ends)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

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


def test_ports_are_never_from_the_range_the_kernel_gives_outgoing_connections(tmp_path: Path) -> None:
    # CI failed on it: a broker's controller port (its port + 1) was taken by some client's connection before
    # the broker bound it, "Address already in use".
    first, last = ports.ephemeral_range()
    for _ in range(50):
        port = ports.free_port(pair=True)
        assert not first <= port <= last and not first <= port + 1 <= last
    assert ports.ephemeral_range(tmp_path / "missing") == (32768, 60999)


def test_the_ports_to_pick_from_lie_below_the_ephemeral_range_or_above_a_low_one() -> None:
    below = ports.candidate_ports((32768, 60999))
    assert below.start == 10000 and below[-1] + 1 == 32767  # a pair's second port is below it too
    above = ports.candidate_ports((1024, 49151))
    assert above.start == 49152 and above[-1] + 1 == 65535
