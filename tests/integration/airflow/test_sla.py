"""The replication-SLA DAG with dag.test(): a stopped route alerts once, its restart recovers once."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from replicator.config import Config, load_config
from replicator.kafka.admin import create_topics
from replicator.runbooks.sla.observe import newest_heartbeat_ms
from tests.kafka_io import wait_until
from tests.support import Worker

pytestmark = pytest.mark.airflow

DAGS = Path(__file__).resolve().parents[3] / "dags"
TOKEN = "s3cr3t-hook-token"


class _Hook(BaseHTTPRequestHandler):
    received: list[tuple[str, dict[str, object]]]

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.server.received.append((self.path, json.loads(body)))  # type: ignore[attr-defined]
        self.send_response(204)
        self.end_headers()

    def log_message(self, *_args: object) -> None:
        pass


@pytest.fixture
def webhook() -> Iterator[ThreadingHTTPServer]:
    """A local HTTP server that keeps every POSTed JSON body in ``.received``."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Hook)
    server.received = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def _run(breached: bool = False) -> dict[tuple[str, int], str]:
    """One run of the SLA DAG: green, or (``breached``) red with its check task failed."""
    from airflow.dag_processing.dagbag import DagBag

    run = DagBag(dag_folder=str(DAGS)).get_dag("mirrorflow_replication_sla").test()
    states = {(ti.task_id, ti.map_index): ti.state for ti in run.get_task_instances()}
    assert run.state == ("failed" if breached else "success"), states
    assert states[("check", 0)] == ("failed" if breached else "success"), states
    return states


def _heartbeat_age(config: Config, route: str) -> float:
    newest = newest_heartbeat_ms(config, config.route(route), timeout=10)
    return float("inf") if newest is None else time.time() - newest / 1000


def test_a_stopped_route_alerts_once_and_its_restart_recovers_once(  # type: ignore[no-untyped-def]
        airflow_db, primary, backup, unique_name, tmp_path, monkeypatch, workers, webhook) -> None:
    topic, route = unique_name, f"sla-{unique_name[-8:]}"
    create_topics(primary.bootstrap_servers, {topic: 1})
    url = f"http://127.0.0.1:{webhook.server_address[1]}/hooks/{TOKEN}"
    path = tmp_path / "mirrorflow.yaml"
    path.write_text(json.dumps({
        "clusters": {"primary": {"bootstrap.servers": primary.bootstrap_servers},
                     "backup": {"bootstrap.servers": backup.bootstrap_servers}},
        "routes": [{"name": route, "source": "primary", "target": "backup", "topics": [topic],
                    "sla": {"heartbeat_age": 3, "heartbeat_interval": 0.5, "webhook": url}}],
        "state": {"url": f"sqlite:///{tmp_path / 'state.db'}"}}))
    monkeypatch.setenv("MIRRORFLOW_CONFIG", str(path))
    config = load_config(path, {})
    received = webhook.received  # type: ignore[attr-defined]

    workers.append(Worker(path, route, log_dir=tmp_path))
    wait_until(lambda: _heartbeat_age(config, route) < 2, 90, "the route's heartbeats on the target")
    states = _run()
    assert states[("check", 0)] == "success"
    assert received == [], "a healthy route sends no alert"

    code, _ = workers[0].terminate()
    assert code == 0
    wait_until(lambda: _heartbeat_age(config, route) > 4, 30, "the heartbeat to grow older than its limit")
    for _ in range(3):  # the breach lasts over several runs: one alert, every run red (Airflow's own alerting)
        _run(breached=True)
    assert [(body["check"], body["kind"]) for _, body in received] == [("heartbeat", "breach")]
    assert received[0][0] == f"/hooks/{TOKEN}" and received[0][1]["route"] == route

    workers.append(Worker(path, route, log_dir=tmp_path))
    wait_until(lambda: _heartbeat_age(config, route) < 2, 90, "fresh heartbeats after the restart")
    for _ in range(2):
        _run()
    assert [(body["check"], body["kind"]) for _, body in received] == [("heartbeat", "breach"),
                                                                         ("heartbeat", "recovery")]
    with sqlite3.connect(tmp_path / "state.db") as db:
        events = db.execute("select kind, notified_at is not null from mf_sla_event where route = ? "
                            "order by id", (route,)).fetchall()
        states_now = dict(db.execute("select \"check\", state from mf_sla_state where route = ?", (route,)))
    assert events == [("breach", 1), ("recovery", 1)]
    with sqlite3.connect(tmp_path / "state.db") as db:  # the page's lag over time: one sample per run and topic
        samples = db.execute("select topic, count(*) from mf_lag_sample where route = ? group by topic",
                             (route,)).fetchall()
        copied = db.execute("select copied, latency_ms from mf_route_sample where route = ? order by id",
                            (route,)).fetchall()
    assert samples == [(topic, 6)]
    # One sample per run: records copied so far (never going back) and the latency, the newest heartbeat's age:
    # it grew while the route was stopped, and came down once it ran again.
    assert len(copied) == 6 and [c for c, _ in copied] == sorted(c for c, _ in copied), copied
    latencies = [latency for _, latency in copied]
    assert None not in latencies and max(latencies) > latencies[-1], copied
    assert states_now == {"heartbeat": "ok", "lag": "ok", "audit": "ok", "stuck": "ok"}
    worker_logs = "".join(w.output() for w in workers)
    assert TOKEN not in worker_logs
