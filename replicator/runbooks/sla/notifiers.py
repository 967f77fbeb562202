"""SLA alerts through Airflow's notifier mechanism: a webhook notifier and a log notifier.

Both are ``airflow.sdk.BaseNotifier`` subclasses when Airflow is installed (usable
anywhere Airflow takes a notifier, e.g. ``on_failure_callback``), and plain objects
with the same ``notifier(context)`` call when it is not: the payload, the HTTP POST
and the message text are pure and need no Airflow. The event to announce is
``context["sla_event"]`` (a :class:`~replicator.domain.sla.SlaEvent`).

A webhook URL may carry a token (``https://hooks.example/T0/B1/secret``): it is never
logged nor put in an error; only its scheme and host are shown.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import urllib.error
import urllib.request
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from replicator.domain.sla import SlaEvent
from replicator.errors import MirrorFlowError

try:  # Airflow is optional: without it the notifiers are plain callables
    from airflow.sdk import BaseNotifier as _NotifierBase
except ImportError:  # pragma: no cover - exercised in a subprocess without Airflow

    class _NotifierBase(ABC):  # type: ignore[no-redef]
        """Airflow's BaseNotifier, as far as ours use it: called with the context, it notifies."""

        template_fields: tuple[str, ...] = ()

        def __init__(self, context: Mapping[str, Any] | None = None) -> None:
            self.context = dict(context or {})

        def __call__(self, context: Mapping[str, Any]) -> None:
            self.notify(context)

        @abstractmethod
        def notify(self, context: Mapping[str, Any]) -> None:
            """Deliver the alert (each notifier its own way)."""


log = logging.getLogger(__name__)
ALERT_LOG = logging.getLogger("replicator.sla.alerts")
EVENT_KEY = "sla_event"


class NotifyError(MirrorFlowError):
    """An alert could not be delivered (the message names the notifier, never a secret)."""

    retriable = True


def masked_url(url: str) -> str:
    """``scheme://host[:port]/…``: enough to tell which endpoint, nothing of its path or query."""
    parts = urlsplit(url)
    host = parts.hostname or "?"
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}/…"


def alert_text(event: SlaEvent) -> str:
    """One line for humans: ``MirrorFlow SLA breach: route r, check heartbeat: <detail>``."""
    return f"MirrorFlow SLA {event.kind.value}: route {event.route}, check {event.check.value}: {event.detail}"


def alert_payload(event: SlaEvent) -> dict[str, object]:
    """The JSON body a webhook receives (``text`` for chat tools that show just that)."""
    at = dt.datetime.fromtimestamp(event.at_ms / 1000, tz=dt.UTC).isoformat().replace("+00:00", "Z")
    return {"source": "mirrorflow", "route": event.route, "check": event.check.value, "kind": event.kind.value,
            "at": at, "at_ms": event.at_ms, "detail": event.detail, "text": alert_text(event)}


def post_json(url: str, body: Mapping[str, object], timeout: float = 10.0) -> int:
    """POST ``body`` as JSON; the HTTP status (2xx) or NotifyError naming the masked URL."""
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json", "User-Agent": "mirrorflow"})
    where = masked_url(url)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as exc:  # `from None`: the chained request would carry the URL
        raise NotifyError(f"webhook {where}: HTTP {exc.code} {exc.reason}") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise NotifyError(f"webhook {where}: {type(reason).__name__}: {reason}") from None


def event_of(context: Mapping[str, Any]) -> SlaEvent:
    """The event a notifier announces, from its context."""
    event = context.get(EVENT_KEY)
    if not isinstance(event, SlaEvent):
        raise NotifyError(f"notifier context has no {EVENT_KEY!r} (an SlaEvent), got {type(event).__name__}")
    return event


class WebhookNotifier(_NotifierBase):
    """POSTs each SLA event as JSON (:func:`alert_payload`) to a URL."""

    template_fields = ()  # the URL is never rendered nor logged

    def __init__(self, url: str, timeout: float = 10.0) -> None:
        super().__init__()
        self._url, self.timeout = url, timeout

    def __repr__(self) -> str:
        return f"WebhookNotifier({masked_url(self._url)})"

    @property
    def name(self) -> str:
        """How logs and errors name this notifier."""
        return f"webhook {masked_url(self._url)}"

    def notify(self, context: Mapping[str, Any]) -> None:
        """Send the context's event."""
        event = event_of(context)
        status = post_json(self._url, alert_payload(event), self.timeout)
        log.info("alert sent notifier=webhook url=%s route=%s check=%s kind=%s status=%s",
                 masked_url(self._url), event.route, event.check.value, event.kind.value, status)


class LogNotifier(_NotifierBase):
    """Writes each SLA event as one WARNING line to the log (the task log under Airflow)."""

    template_fields = ()
    name = "log"

    def notify(self, context: Mapping[str, Any]) -> None:
        """Log the context's event."""
        ALERT_LOG.warning("%s", alert_text(event_of(context)))
