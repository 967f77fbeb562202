"""The chaos harness's Toxiproxy client: a toxic whose removal outlasts the server's answer is waited for."""

from __future__ import annotations

from typing import Any

import pytest

from bench.chaoslib import toxiproxy
from bench.chaoslib.toxiproxy import ProxyError, ToxiproxyClient


class _Draining(ToxiproxyClient):
    """A server whose DELETE answers 503 after 10 s while the toxic drains, gone after ``listed`` more lists."""

    def __init__(self, listed: int) -> None:
        super().__init__("http://toxiproxy.invalid")
        self.listed, self.calls = listed, list[str]()

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        self.calls.append(method)
        if method == "DELETE":
            raise ProxyError(f"toxiproxy: DELETE {path}: HTTP 503: b''", 503)
        self.listed -= 1
        return [{"name": "latency-downstream"}] if self.listed >= 0 else []


def test_a_removal_the_server_gave_up_answering_is_waited_for(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(toxiproxy.time, "sleep", lambda _: None)
    client = _Draining(listed=3)
    client.remove_toxics("source", ["latency-downstream"])
    assert client.calls == ["DELETE", "GET", "GET", "GET", "GET"]


def test_a_toxic_that_never_goes_is_an_error_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(toxiproxy.time, "sleep", lambda _: None)
    monkeypatch.setattr(toxiproxy, "REMOVE_TIMEOUT_S", 0.0)
    with pytest.raises(ProxyError, match="toxic latency-downstream of source still there 0 s after its removal"):
        _Draining(listed=10**6).remove_toxics("source", ["latency-downstream"])


def test_a_removal_the_server_refuses_is_an_error_at_once() -> None:
    class Refusing(_Draining):
        def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
            self.calls.append(method)
            raise ProxyError(f"toxiproxy: {method} {path}: HTTP 404: b'toxic not found'", 404)

    client = Refusing(listed=0)
    with pytest.raises(ProxyError, match="HTTP 404"):
        client.remove_toxics("source", ["no-such-toxic"])
    assert client.calls == ["DELETE"]
