"""The two local clusters of a fault run, each with a listener the workers reach through Toxiproxy.

Each broker has its usual PLAINTEXT listener (the verifier's: producer, reader, admin)
and a PROXIED listener whose advertised address is the Toxiproxy proxy in front of it, so
the workers, which bootstrap through the proxy, stay behind it for every connection.
"""

from __future__ import annotations

import os
import signal
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from bench.chaoslib.toxiproxy import ToxiproxyClient
from replicator.dev.localcluster import LocalCluster, LocalClusterSpec
from replicator.dev.ports import free_port

SIDES = ("source", "target")
CLUSTER_NAMES = {"source": "src", "target": "dst"}  # the replica of `t` is `src.t`


@dataclass
class ProxiedCluster:
    """One side: the broker, and the name of the proxy the workers go through."""

    side: str
    cluster: LocalCluster
    proxy: str
    frozen: bool = False

    @property
    def direct(self) -> str:
        """Bootstrap servers of the verifier (no proxy)."""
        return self.cluster.spec.bootstrap_servers

    @property
    def proxied(self) -> str:
        """Bootstrap servers of the workers (through the proxy)."""
        address = self.cluster.spec.proxied_bootstrap_servers
        assert address is not None
        return address

    def freeze(self) -> None:
        """SIGSTOP the broker's JVM (its KRaft controller freezes with it)."""
        pid = self.cluster.pid()
        if pid is not None:
            os.kill(pid, signal.SIGSTOP)
            self.frozen = True

    def thaw(self) -> None:
        """SIGCONT: the broker resumes where it stopped."""
        pid = self.cluster.pid()
        if pid is not None:
            os.kill(pid, signal.SIGCONT)
        self.frozen = False

    def stop(self) -> None:
        """A clean stop (thawed first: a stopped JVM cannot act on SIGTERM)."""
        if self.frozen:
            self.thaw()
        self.cluster.stop()


def start_clusters(home: Path, proxies: ToxiproxyClient) -> dict[str, ProxiedCluster]:
    """Both clusters running, each behind its own proxy; stopped again if either fails to start."""
    sides = {}
    for side in SIDES:
        name, proxied_port = CLUSTER_NAMES[side], free_port()
        listen = proxies.create_proxy(side, f"127.0.0.1:{proxied_port}")
        spec = LocalClusterSpec(name=name, home=home / name, port=free_port(), controller_port=free_port(),
                                proxied_port=proxied_port, proxy_advertised=listen)
        sides[side] = ProxiedCluster(side, LocalCluster(spec), side)
    try:
        with ThreadPoolExecutor(max_workers=2) as pool:
            list(pool.map(lambda c: c.cluster.start(), sides.values()))
    except BaseException:
        for side in sides.values():
            side.stop()
        raise
    return sides
