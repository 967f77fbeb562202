"""The local development environment: clusters ``primary`` and ``backup`` on loopback.

``mirrorflow dev up|down|status`` and ``mirrorflow demo`` call these functions;
the pytest fixtures use :class:`~replicator.dev.localcluster.LocalCluster` the same way
with their own folder and ports.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml

from replicator.dev.localcluster import ClusterStatus, LocalCluster, LocalClusterSpec
from replicator.errors import UsageError

DEFAULT_HOME = Path(".mirrorflow")
HOME_ENV = "MIRRORFLOW_HOME"
PORTS_ENV = "MIRRORFLOW_DEV_PORTS"

# name -> broker port (the controller listens on the next port); DESIGN.md's ports.
DEV_PORTS: dict[str, int] = {"primary": 19092, "backup": 29092}

Progress = Callable[[str], None]


def parse_ports(text: str | None) -> dict[str, int]:
    """``primary=19092,backup=29092`` (the value of $MIRRORFLOW_DEV_PORTS) as a mapping."""
    if not text:
        return dict(DEV_PORTS)
    ports = dict(DEV_PORTS)
    for item in text.split(","):
        name, _, port = item.partition("=")
        if name.strip() not in DEV_PORTS or not port.strip().isdigit():
            raise UsageError(f"{PORTS_ENV}: expected primary=PORT,backup=PORT, got {text!r}")
        ports[name.strip()] = int(port)
    return ports


def dev_clusters(home: Path, ports: Mapping[str, int] = DEV_PORTS) -> list[LocalCluster]:
    """The two development clusters kept under ``home/dev``."""
    return [
        LocalCluster(
            LocalClusterSpec(name=name, home=home / "dev" / name, port=port, controller_port=port + 1)
        )
        for name, port in ports.items()
    ]


def _quiet(_: str) -> None:
    return None


def dev_up(
    home: Path, ports: Mapping[str, int] = DEV_PORTS, clean: bool = False, progress: Progress = _quiet
) -> list[ClusterStatus]:
    """Start both clusters (in parallel); harmless when they already run."""
    clusters = dev_clusters(home, ports)
    if clean:
        dev_down(home, ports, clean=True, progress=progress)

    def start(cluster: LocalCluster) -> ClusterStatus:
        began = time.monotonic()
        already = cluster.is_running()
        if not already:
            progress(f"starting {cluster.spec.name} on {cluster.spec.bootstrap_servers} ...")
        cluster.start()
        verb = "already running" if already else f"ready in {time.monotonic() - began:.1f} s"
        progress(f"{cluster.spec.name} {verb}")
        return cluster.status()

    with ThreadPoolExecutor(max_workers=len(clusters)) as pool:
        statuses = list(pool.map(start, clusters))
    write_dev_config(home, ports)
    return statuses


def dev_down(
    home: Path, ports: Mapping[str, int] = DEV_PORTS, clean: bool = False, progress: Progress = _quiet
) -> list[str]:
    """Stop both clusters; with ``clean`` also delete their data. Returns the names stopped."""
    stopped = []
    for cluster in dev_clusters(home, ports):
        if cluster.stop():
            stopped.append(cluster.spec.name)
            progress(f"stopped {cluster.spec.name}")
        if clean and cluster.spec.home.exists():
            shutil.rmtree(cluster.spec.home)
            progress(f"deleted the data of {cluster.spec.name}")
    return stopped


def dev_status(home: Path, ports: Mapping[str, int] = DEV_PORTS) -> list[ClusterStatus]:
    """The status of both clusters, running or not."""
    return [cluster.status() for cluster in dev_clusters(home, ports)]


def dev_config_path(home: Path) -> Path:
    """Where ``dev up`` writes the ready-to-use config."""
    return home / "mirrorflow.yaml"


def dev_config(home: Path, ports: Mapping[str, int] = DEV_PORTS) -> dict[str, object]:
    """A mirrorflow.yaml for the two local clusters, with one example route."""
    clusters = {
        c.spec.name: {"bootstrap.servers": c.spec.bootstrap_servers} for c in dev_clusters(home, ports)
    }
    return {
        "clusters": clusters,
        "routes": [
            {
                "name": "primary-to-backup",
                "source": "primary",
                "target": "backup",
                "topics": ["orders", r"payments\..*"],
                "exclude": [r".*\.tmp"],
                "policy": "prefix",
                "guarantee": "at-least-once",
            }
        ],
        "state": {"url": f"sqlite:///{(home / 'state.db').resolve()}"},
    }


def write_dev_config(home: Path, ports: Mapping[str, int] = DEV_PORTS) -> Path:
    """Write :func:`dev_config` to :func:`dev_config_path` and return the path."""
    path = dev_config_path(home)
    path.parent.mkdir(parents=True, exist_ok=True)
    header = "# Written by `mirrorflow dev up` for the local clusters; rewritten by each `dev up`.\n"
    path.write_text(header + yaml.safe_dump(dev_config(home, ports), sort_keys=False))
    return path
