"""The fault harness's Toxiproxy client against the real server (`make toxiproxy` builds it)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.chaoslib.toxiproxy import ProxyError, ToxiproxyServer

REPO = Path(__file__).resolve().parents[3]
TOXIPROXY = REPO / ".cache" / "bin" / "toxiproxy-server"

pytestmark = pytest.mark.chaos


@pytest.fixture
def echo() -> Iterator[int]:
    """A loopback TCP echo server; yields its port."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            threading.Thread(target=lambda c=conn: [c.sendall(d) for d in iter(lambda: c.recv(4096), b"")],
                             daemon=True).start()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield int(server.getsockname()[1])
    stop.set()
    thread.join(2)
    server.close()


def _round_trip(address: str, timeout: float = 3.0) -> float:
    host, port = address.rsplit(":", 1)
    began = time.monotonic()
    with socket.create_connection((host, int(port)), timeout=timeout) as conn:
        conn.sendall(b"ping")
        assert conn.recv(4) == b"ping"
    return time.monotonic() - began


def test_proxy_latency_black_hole_and_heal(tmp_path: Path, echo: int) -> None:
    assert TOXIPROXY.exists(), f"{TOXIPROXY} is missing: `make toxiproxy` builds it"
    server = ToxiproxyServer(TOXIPROXY, tmp_path / "toxiproxy.log")
    try:
        client = server.client
        listen = client.create_proxy("echo", f"127.0.0.1:{echo}")
        assert _round_trip(listen) < 0.5
        slow = client.add_toxic("echo", "slow", "latency", {"latency": 300, "jitter": 0})
        assert slow == ["slow-upstream", "slow-downstream"]
        assert _round_trip(listen) >= 0.6  # 300 ms each way
        client.remove_toxics("echo", slow)
        hole = client.add_toxic("echo", "hole", "timeout", {"timeout": 0})
        with pytest.raises(TimeoutError):
            _round_trip(listen, timeout=1.0)
        client.remove_toxics("echo", hole)
        assert _round_trip(listen) < 0.5
        with pytest.raises(ProxyError, match="HTTP 404"):
            client.remove_toxics("echo", ["no-such-toxic"])
    finally:
        server.stop()
    assert server.process.poll() is not None
