"""`mirrorflow run` started while a cluster does not answer waits for it (a supervisor's restart during an
outage must not end in a crash loop), says so once, and stops cleanly on SIGTERM meanwhile."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.support import free_port


def test_run_waits_for_a_cluster_that_does_not_answer_and_stops_on_sigterm(tmp_path: Path) -> None:
    config = tmp_path / "mirrorflow.yaml"
    config.write_text(
        f"clusters:\n  a: {{bootstrap.servers: '127.0.0.1:{free_port()}'}}\n"
        f"  b: {{bootstrap.servers: '127.0.0.1:{free_port()}', sasl.password: hunter2}}\n"
        "routes: [{name: r, source: a, target: b, topics: [t]}]\n"
        f"state: {{url: 'sqlite:///{tmp_path / 'state.db'}'}}\n")
    log = tmp_path / "run.log"
    with log.open("wb") as out:
        run = subprocess.Popen([str(Path(sys.executable).parent / "mirrorflow"), "run", "--config", str(config)],
                               stdout=out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while "not answering" not in log.read_text():
            assert run.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        run.send_signal(signal.SIGTERM)
        assert run.wait(30) == 0
    text = log.read_text()
    assert text.count("a cluster of route r not answering, routes wait for it before starting") == 1, text
    assert "Traceback" not in text and "hunter2" not in text
