"""`mirrorflow run` starting while its state database is away waits for it; bad configuration fails at once."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import signal
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from replicator.config import load_config
from replicator.domain.failover import FailoverRequest
from replicator.domain.failover_run import FailoverRun
from replicator.domain.secrets import redact_url
from replicator.state import repository
from replicator.state.failover_hold import RouteFailedOver
from replicator.state.failovers import save_run
from replicator.state.store import StateStore
from replicator.waiting import until_answers
from replicator.worker.startup import open_state
from tests.kafka_io import wait_until
from tests.support import Worker, free_port, sqlite_locked

WAITING, ANSWERS = "state database not answering", "state database answers"


def _config(tmp_path: Path, state_url: str) -> Path:
    path = tmp_path / "m.yaml"  # clusters nobody listens on: a start that got past the database would say so
    path.write_text(json.dumps({
        "clusters": {"a": {"bootstrap.servers": "127.0.0.1:1"}, "b": {"bootstrap.servers": "127.0.0.1:2"}},
        "routes": [{"name": "r", "source": "a", "target": "b", "topics": ["t"]}], "state": {"url": state_url}}))
    return path


def _lines(caplog: pytest.LogCaptureFixture, start: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.getMessage().startswith(start)]


def test_waiting_is_logged_once_however_many_attempts(caplog: pytest.LogCaptureFixture) -> None:
    url, attempts, stop = f"postgresql+psycopg://app:secretpw@127.0.0.1:{free_port()}/mf", [], threading.Event()

    def attempt() -> StateStore:
        attempts.append(1)
        return StateStore(url)

    with ThreadPoolExecutor(1) as pool:
        waited = pool.submit(until_answers, attempt, stop, what="state database", where=f"url={redact_url(url)}",
                             routes=["r"], max_delay=0.1)
        wait_until(lambda: len(attempts) >= 4, 30, "four attempts")
        stop.set()
        assert waited.result(timeout=10) is None
    [line] = _lines(caplog, WAITING)
    assert "routes=r url=postgresql+psycopg://app:********@127.0.0.1:" in line and "Connection refused" in line
    assert "secretpw" not in caplog.text


def _open_while_locked(path: Path, caplog: pytest.LogCaptureFixture) -> StateStore | None:
    config = load_config(_config(path.parent, f"sqlite:///{path}?timeout=0.1"), {})
    with ThreadPoolExecutor(1) as pool:
        with sqlite_locked(path):
            started = pool.submit(open_state, config, list(config.routes), threading.Event())
            wait_until(lambda: bool(_lines(caplog, WAITING)), 30, "the worker to say it waits")
        return started.result(timeout=30)


def test_a_locked_database_is_waited_for_then_the_routes_are_registered(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    store = _open_while_locked(tmp_path / "state.db", caplog)
    assert store is not None
    with store, store.session() as session:
        assert repository.route_topics(session, "r") == []  # registered: an unknown route raises
    assert len(_lines(caplog, WAITING)) == 1 and len(_lines(caplog, ANSWERS)) == 1


def test_a_failed_over_route_is_refused_once_the_database_answers(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path, at = tmp_path / "state.db", dt.datetime(2026, 11, 1, tzinfo=dt.UTC)
    run = FailoverRun.new(FailoverRequest("r"), "a", "b", "mirrorflow-r", at)
    with StateStore(f"sqlite:///{path}") as store:
        store.run(lambda session: save_run(session, dataclasses.replace(run, route_stopped_at=at)))
    with pytest.raises(RouteFailedOver, match="route r was failed over to 'b'"):
        _open_while_locked(path, caplog)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_run_waiting_for_the_database_stops_at_once_on_a_signal(tmp_path: Path, sig: signal.Signals) -> None:
    worker = Worker(_config(tmp_path, f"postgresql+psycopg://app:secretpw@127.0.0.1:{free_port()}/mf"),
                    log_dir=tmp_path)
    wait_until(lambda: WAITING in worker.output(), 60, "the worker to say it waits")
    worker.process.send_signal(sig)
    assert worker.process.wait(10) == 0
    worker.terminate()
    out = worker.output()
    assert "stopped before starting" in out and "secretpw" not in out
    assert "mirrorflow run: route" not in out and "route starting" not in out and "Traceback" not in out


def _run_fails(tmp_path: Path, state_url: str) -> tuple[int, str]:
    exe = Path(sys.executable).parent / "mirrorflow"
    done = subprocess.run([str(exe), "run", "--config", str(_config(tmp_path, state_url))],
                          check=False, capture_output=True, text=True, timeout=60)
    assert len(done.stderr.strip().splitlines()) == 1 and WAITING not in done.stderr, done.stderr
    return done.returncode, done.stderr.strip()


@pytest.mark.parametrize(("url", "says"), [
    ("postgresql+nodriver://app:hunter22@db/mf", "state.url: cannot use postgresql+nodriver://app:********@db/mf"),
    ("postgresql://app:hunter22@db:port/mf", "state.url: not a database URL"),
])
def test_run_with_a_bad_state_url_fails_at_once(tmp_path: Path, url: str, says: str) -> None:
    code, line = _run_fails(tmp_path, url)
    assert code == 2 and line.startswith(f"mirrorflow: error: {says}") and "hunter22" not in line


@pytest.mark.postgres
def test_run_with_a_missing_database_or_a_refused_login_fails_at_once(tmp_path: Path, postgres_url: str) -> None:
    server = postgres_url.rsplit("@", 1)[1].rsplit("/", 1)[0]
    for url, says in ((f"postgresql+psycopg://mirrorflow@{server}/no_such_db", "state database does not exist"),
                      (f"postgresql+psycopg://nobody:hunter22@{server}/postgres", "state database refused the login")):
        code, line = _run_fails(tmp_path, url)
        assert code == 2 and line.startswith(f"mirrorflow: error: {says}") and "hunter22" not in line
