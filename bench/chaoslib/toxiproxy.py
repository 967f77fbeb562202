"""Toxiproxy: its server process, and a small client of its documented HTTP API.

The API (github.com/Shopify/toxiproxy, README "HTTP API"): ``POST /proxies`` creates a
proxy (``listen`` with port 0 picks a free port, returned in the answer), ``POST
/proxies/{name}`` changes ``enabled``, ``POST /proxies/{name}/toxics`` adds a toxic
(latency, bandwidth, timeout, reset_peer ...) to one direction, ``DELETE
/proxies/{name}/toxics/{toxic}`` removes it.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from replicator.dev.ports import free_port

DIRECTIONS = ("upstream", "downstream")  # client -> server, server -> client
REMOVE_TIMEOUT_S = 90.0  # a toxic's removal ends once what it holds has drained


class ProxyError(Exception):
    """The proxy binary is missing or misbehaves; the message names it (``status``: the HTTP status it answered)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


def check_binary(path: Path) -> None:
    """Fail naming ``path`` unless it is an executable Toxiproxy server."""
    if not path.is_file():
        raise ProxyError(f"toxiproxy: {path} does not exist (build it with `make toxiproxy`)")
    if not os.access(path, os.X_OK):
        raise ProxyError(f"toxiproxy: {path} is not executable")
    try:
        done = subprocess.run([str(path), "-version"], capture_output=True, text=True, timeout=10)
    except OSError as exc:
        raise ProxyError(f"toxiproxy: {path} cannot run: {exc}") from None
    except subprocess.TimeoutExpired:
        raise ProxyError(f"toxiproxy: {path} -version did not answer in 10 s") from None
    if done.returncode != 0 or "version" not in done.stdout + done.stderr:
        raise ProxyError(f"toxiproxy: {path} is not a Toxiproxy server (`-version` printed "
                         f"{(done.stdout + done.stderr).strip()[:80]!r})")


class ToxiproxyServer:
    """``toxiproxy-server`` on a free loopback port, its log in ``log``."""

    def __init__(self, binary: Path, log: Path) -> None:
        check_binary(binary)
        self.port = free_port()
        self._log = open(log, "ab")  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen([str(binary), "-host", "127.0.0.1", "-port", str(self.port)],
                                        stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self.client = ToxiproxyClient(f"http://127.0.0.1:{self.port}")
        deadline = time.monotonic() + 15
        while not self.client.alive():
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise ProxyError(f"toxiproxy: {binary} did not answer on port {self.port}; see {log}")
            time.sleep(0.1)

    def stop(self) -> None:
        """Stop the server (its proxies close with it)."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        self._log.close()


class ToxiproxyClient:
    """Proxies and toxics through the HTTP API."""

    def __init__(self, url: str) -> None:
        self.url = url

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method,
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=10) as answer:
                text = answer.read()
        except urllib.error.HTTPError as exc:
            raise ProxyError(f"toxiproxy: {method} {path}: HTTP {exc.code}: {exc.read()[:200]!r}", exc.code) from None
        except OSError as exc:
            raise ProxyError(f"toxiproxy: {method} {path}: {exc}") from None
        return json.loads(text) if text.strip() else None

    def alive(self) -> bool:
        """True when the API answers."""
        try:
            self._call("GET", "/version")
        except ProxyError:
            return False
        return True

    def create_proxy(self, name: str, upstream: str) -> str:
        """A proxy to ``upstream`` on a free loopback port; returns its listen ``host:port``."""
        made = self._call("POST", "/proxies", {"name": name, "listen": "127.0.0.1:0", "upstream": upstream,
                                               "enabled": True})
        return str(made["listen"])

    def add_toxic(self, proxy: str, name: str, kind: str, attributes: dict[str, int],
                  directions: tuple[str, ...] = DIRECTIONS) -> list[str]:
        """The toxic on each direction; returns the toxics' names (to remove them)."""
        names = []
        for direction in directions:
            toxic = f"{name}-{direction}"
            self._call("POST", f"/proxies/{proxy}/toxics",
                       {"name": toxic, "type": kind, "stream": direction, "attributes": attributes})
            names.append(toxic)
        return names

    def remove_toxics(self, proxy: str, names: list[str]) -> None:
        """Remove toxics added by ``add_toxic``. A removal ends once what the toxic holds has passed on, and the
        server answers 503 after 10 s while it goes on (a 1,000 ms latency held 19 s with 443 KB queued took 45 s
        to remove in the pairs run of seed 43): then it is waited for, up to REMOVE_TIMEOUT_S."""
        for toxic in names:
            try:
                self._call("DELETE", f"/proxies/{proxy}/toxics/{toxic}")
            except ProxyError as exc:
                if exc.status not in (None, 503):  # refused (no such toxic): not a removal under way
                    raise
                self._wait_removed(proxy, toxic)

    def _wait_removed(self, proxy: str, toxic: str) -> None:
        deadline = time.monotonic() + REMOVE_TIMEOUT_S
        while any(t["name"] == toxic for t in self._call("GET", f"/proxies/{proxy}/toxics") or []):
            if time.monotonic() > deadline:
                raise ProxyError(f"toxiproxy: toxic {toxic} of {proxy} still there {REMOVE_TIMEOUT_S:.0f} s after "
                                 "its removal was asked")
            time.sleep(0.5)

    def set_enabled(self, proxy: str, enabled: bool) -> None:
        """Take the proxy down (connections closed, new ones refused) or bring it back."""
        self._call("POST", f"/proxies/{proxy}", {"enabled": enabled})

    def reset(self) -> None:
        """Every proxy enabled, every toxic removed."""
        self._call("POST", "/reset")
