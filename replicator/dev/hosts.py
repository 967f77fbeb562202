"""Several hosts on one machine: network namespaces on a bridge, each with an address of its own (Linux, root).

For the tests and benchmarks of what crosses a network -- a worker fleet spread over
hosts, one host cut off (its link down) and brought back -- without a second machine.
A network ``10.213.N.0/24`` (N free on this machine) looks like::

    root namespace   bridge mfbr<tag>, 10.213.N.1: the brokers listen here, every host reaches it
    host k (1..)     namespace mf-<tag>-<name>, eth0 10.213.N.(10+k), default route via the bridge;
                     the other end of its veth (mfv<tag><k>) sits on the bridge: down = the host is cut off

A program runs on a host through ``ip netns exec`` (:meth:`Host.command`); the filesystem
and the process table are shared, only the network is the host's own.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import re
import shutil
import signal
import subprocess
import uuid
from dataclasses import dataclass
from types import TracebackType

from replicator.errors import MirrorFlowError

log = logging.getLogger(__name__)

PREFIX = "10.213"
FIRST_HOST = 10  # host k gets .(FIRST_HOST + k)


class HostNetworkError(MirrorFlowError):
    """The namespaces, links or bridge could not be made (not root, no iproute2, a name taken)."""


def unsupported() -> str | None:
    """Why hosts cannot be made here (None when they can): they need root and iproute2's ``ip``."""
    if shutil.which("ip") is None:
        return "iproute2's `ip` is not installed"
    if os.geteuid() != 0:
        return "network namespaces need root"
    return None


@dataclass(frozen=True, slots=True)
class Host:
    """One host: its namespace, its address, and the link that joins it to the bridge."""

    name: str
    namespace: str
    address: str
    link: str  # the veth end on the bridge (in the root namespace)

    def command(self, argv: list[str]) -> list[str]:
        """``argv`` run on this host."""
        return ["ip", "netns", "exec", self.namespace, *argv]


def free_subnet(addresses: str) -> int:
    """A third octet N whose ``10.213.N.0/24`` overlaps none of ``addresses`` (``ip -o -4 addr`` output; pure)."""
    taken = {ipaddress.ip_interface(m).network for m in re.findall(r"inet (\S+)", addresses)}
    for third in range(1, 255):
        network = ipaddress.ip_network(f"{PREFIX}.{third}.0/24")
        if not any(network.overlaps(other) for other in taken):
            return third
    raise HostNetworkError(f"no free {PREFIX}.N.0/24 network on this machine")


class HostNetwork:
    """A bridge and its hosts; :meth:`remove` (or leaving the ``with``) deletes them and stops what runs on them."""

    def __init__(self) -> None:
        why = unsupported()
        if why:
            raise HostNetworkError(f"cannot make hosts here: {why}")
        self.tag = uuid.uuid4().hex[:4]
        self.bridge = f"mfbr{self.tag}"
        self.third = free_subnet(_ip("-o", "-4", "addr", "show"))
        self.gateway = f"{PREFIX}.{self.third}.1"
        self.hosts: dict[str, Host] = {}
        _ip("link", "add", self.bridge, "type", "bridge")
        try:
            _ip("addr", "add", f"{self.gateway}/24", "dev", self.bridge)
            _ip("link", "set", self.bridge, "up")
        except HostNetworkError:
            self.remove()
            raise
        log.info("host network made bridge=%s gateway=%s", self.bridge, self.gateway)

    def add(self, name: str) -> Host:
        """A new host named ``name``, on the bridge and reachable."""
        number = len(self.hosts) + 1
        host = Host(name, f"mf-{self.tag}-{name}", f"{PREFIX}.{self.third}.{FIRST_HOST + number}",
                    f"mfv{self.tag}{number}")
        self.hosts[name] = host
        _ip("netns", "add", host.namespace)
        _ip("link", "add", host.link, "type", "veth", "peer", "name", "eth0", "netns", host.namespace)
        _ip("link", "set", host.link, "master", self.bridge, "up")
        _ip("-n", host.namespace, "addr", "add", f"{host.address}/24", "dev", "eth0")
        for device in ("lo", "eth0"):
            _ip("-n", host.namespace, "link", "set", device, "up")
        _ip("-n", host.namespace, "route", "add", "default", "via", self.gateway)
        return host

    def cut(self, host: Host) -> None:
        """Take the host's link down: nothing reaches it, it reaches nothing (its processes run on)."""
        _ip("link", "set", host.link, "down")
        log.info("host cut off host=%s", host.name)

    def restore(self, host: Host) -> None:
        """Bring the host's link back up."""
        _ip("link", "set", host.link, "up")
        log.info("host restored host=%s", host.name)

    def remove(self) -> None:
        """Stop what still runs on the hosts (SIGKILL), delete their namespaces (their links go with them) and
        the bridge. Harmless to call twice."""
        for host in self.hosts.values():
            pids = subprocess.run(["ip", "netns", "pids", host.namespace], capture_output=True, text=True,
                                  check=False).stdout.split()
            for pid in pids:
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except ProcessLookupError:
                    continue
            subprocess.run(["ip", "netns", "del", host.namespace], capture_output=True, check=False)
        self.hosts.clear()
        subprocess.run(["ip", "link", "del", self.bridge], capture_output=True, check=False)

    def __enter__(self) -> HostNetwork:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.remove()


def _ip(*args: str) -> str:
    done = subprocess.run(["ip", *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise HostNetworkError(f"ip {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout
