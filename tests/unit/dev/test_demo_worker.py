"""The demo's worker is known as running from the moment ``start_worker`` returns."""

from __future__ import annotations

from pathlib import Path

import pytest

from replicator.dev import demo_worker
from tests.support import free_port


def test_a_worker_whose_arguments_the_kernel_has_not_set_yet_is_waited_for(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "dev"
    home.mkdir()
    config = home / "mirrorflow.yaml"
    config.write_text(  # clusters that do not answer: the worker waits for them until stopped
        f"clusters:\n  primary: {{bootstrap.servers: '127.0.0.1:{free_port()}'}}\n"
        f"  backup: {{bootstrap.servers: '127.0.0.1:{free_port()}'}}\n"
        "routes: [{name: r, source: primary, target: backup, topics: [t]}]\n"
        f"state: {{url: 'sqlite:///{home / 'state.db'}'}}\n")
    real, reads = demo_worker._cmdline, []

    def mid_exec(pid: int) -> bytes:  # what /proc/PID/cmdline reads while the exec is still under way
        reads.append(pid)
        return b"" if len(reads) <= 3 else real(pid)

    monkeypatch.setattr(demo_worker, "_cmdline", mid_exec)
    try:
        pid = demo_worker.start_worker(home, config)
        assert demo_worker.worker_pid(home) == pid  # a second start-worker now keeps it, starts no other
    finally:
        demo_worker.stop_worker(home)
    assert demo_worker.worker_pid(home) is None
