"""SLA notifiers: the webhook POSTs the event as JSON, never shows its URL's token; the log notifier logs."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from replicator.domain.sla import Check, EventKind, SlaEvent
from replicator.runbooks.sla.notifiers import (
    LogNotifier,
    NotifyError,
    WebhookNotifier,
    alert_payload,
    masked_url,
)

EVENT = SlaEvent("p2b", Check.HEARTBEAT, EventKind.BREACH, 1_790_000_000_000, "heartbeat age 41.0 s (limit 30 s)")
TOKEN = "tok-XYZ-123"


class _Hook(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.received.append((self.path, self.headers["Content-Type"], body))  # type: ignore[attr-defined]
        self.send_response(self.server.status)  # type: ignore[attr-defined]
        self.end_headers()

    def log_message(self, *_args: object) -> None:
        pass


@pytest.fixture
def hook() -> Iterator[ThreadingHTTPServer]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Hook)
    server.received, server.status = [], 200  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


def _url(server: ThreadingHTTPServer) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}/hooks/{TOKEN}?key={TOKEN}"


def test_the_webhook_posts_the_event_as_json(hook: ThreadingHTTPServer) -> None:
    WebhookNotifier(_url(hook))({"sla_event": EVENT})
    [(path, content_type, body)] = hook.received  # type: ignore[attr-defined]
    assert path == f"/hooks/{TOKEN}?key={TOKEN}" and content_type == "application/json"
    assert body == alert_payload(EVENT) == {
        "source": "mirrorflow", "route": "p2b", "check": "heartbeat", "kind": "breach",
        "at": "2026-09-21T14:13:20Z", "at_ms": 1_790_000_000_000, "detail": "heartbeat age 41.0 s (limit 30 s)",
        "text": "MirrorFlow SLA breach: route p2b, check heartbeat: heartbeat age 41.0 s (limit 30 s)"}


def test_a_refused_or_unreachable_webhook_fails_without_its_token(hook: ThreadingHTTPServer,
                                                                  caplog: pytest.LogCaptureFixture) -> None:
    hook.status = 500  # type: ignore[attr-defined]
    notifier = WebhookNotifier(_url(hook))
    with caplog.at_level(logging.DEBUG), pytest.raises(NotifyError) as refused:
        notifier({"sla_event": EVENT})
    port = hook.server_address[1]
    assert str(refused.value) == f"webhook http://127.0.0.1:{port}/…: HTTP 500 Internal Server Error"
    with pytest.raises(NotifyError) as unreachable:
        WebhookNotifier(f"http://127.0.0.1:1/{TOKEN}", timeout=2)({"sla_event": EVENT})
    assert "webhook http://127.0.0.1:1/…: " in str(unreachable.value)
    for shown in (str(refused.value), str(unreachable.value), repr(notifier), notifier.name, caplog.text):
        assert TOKEN not in shown
    assert refused.value.__cause__ is None and refused.value.__suppress_context__


def test_a_notifier_needs_an_event_in_its_context() -> None:
    with pytest.raises(NotifyError, match="notifier context has no 'sla_event'"):
        LogNotifier()({"dag": None})


def test_the_log_notifier_writes_one_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="replicator.sla.alerts"):
        LogNotifier()({"sla_event": EVENT})
    assert [(r.levelname, r.getMessage()) for r in caplog.records if r.name == "replicator.sla.alerts"] == [
        ("WARNING", "MirrorFlow SLA breach: route p2b, check heartbeat: heartbeat age 41.0 s (limit 30 s)")]


@pytest.mark.parametrize(("url", "shown"), [
    ("https://hooks.slack.com/services/T0/B1/secret", "https://hooks.slack.com/…"),
    ("http://user:pw@10.0.0.1:8080/x?token=t", "http://10.0.0.1:8080/…"),
])
def test_masked_url_keeps_scheme_and_host_only(url: str, shown: str) -> None:
    assert masked_url(url) == shown


def test_the_notifiers_are_airflow_notifiers_and_work_without_airflow() -> None:
    from airflow.sdk import BaseNotifier

    assert issubclass(WebhookNotifier, BaseNotifier) and issubclass(LogNotifier, BaseNotifier)
    script = (
        "import sys; sys.modules['airflow'] = None; sys.modules['airflow.sdk'] = None\n"
        "from replicator.domain.sla import Check, EventKind, SlaEvent\n"
        "from replicator.runbooks.sla.notifiers import LogNotifier, alert_payload\n"
        "e = SlaEvent('r', Check.LAG, EventKind.RECOVERY, 0, 'lag 0 records')\n"
        "LogNotifier()({'sla_event': e}); print(alert_payload(e)['kind'])\n"
    )
    done = subprocess.run([sys.executable, "-c", script], check=False, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "recovery"
    assert "MirrorFlow SLA recovery: route r, check lag: lag 0 records" in done.stderr
