"""``mirrorflow dev start-worker|stop-worker``: the demo's worker restarted after a drill stopped it (#15)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from replicator.cli.main import main
from replicator.dev.demo_worker import worker_log, worker_pid
from tests.support import free_port


def test_the_demo_worker_starts_once_and_stops(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    home = tmp_path / "dev"
    home.mkdir()
    (home / "mirrorflow.yaml").write_text(  # clusters that do not answer: the worker waits for them
        f"clusters:\n  primary: {{bootstrap.servers: '127.0.0.1:{free_port()}'}}\n"
        f"  backup: {{bootstrap.servers: '127.0.0.1:{free_port()}'}}\n"
        "routes: [{name: r, source: primary, target: backup, topics: [t]}]\n"
        f"state: {{url: 'sqlite:///{home / 'state.db'}'}}\n")
    try:
        assert main(["dev", "start-worker", "--home", str(home)]) == 0
        pid = worker_pid(home)
        assert pid is not None, worker_log(home).read_text()  # it runs: its log says why when not
        assert "started (pid" in capsys.readouterr().out
        assert main(["dev", "start-worker", "--home", str(home)]) == 0  # once: the running one is kept
        assert worker_pid(home) == pid and "was already running" in capsys.readouterr().out
        deadline = time.monotonic() + 60
        while "not answering" not in worker_log(home).read_text():  # it runs (and says why it waits)
            assert worker_pid(home) == pid and time.monotonic() < deadline, worker_log(home).read_text()
            time.sleep(0.1)
    finally:
        assert main(["dev", "stop-worker", "--home", str(home)]) == 0
    assert worker_pid(home) is None and "stopped the demo's replication worker" in capsys.readouterr().out
    assert main(["dev", "stop-worker", "--home", str(home)]) == 0
    assert "no demo worker was running" in capsys.readouterr().out


def test_without_a_local_environment_it_says_what_to_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["dev", "start-worker", "--home", str(tmp_path)]) == 2
    assert "run `mirrorflow dev up` or `mirrorflow demo` first" in capsys.readouterr().err
