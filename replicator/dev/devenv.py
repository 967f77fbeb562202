"""The local development environment: clusters ``primary`` and ``backup`` on loopback.

``mirrorflow dev up|down|status`` and ``mirrorflow demo`` call these functions;
the pytest fixtures use :class:`~replicator.dev.localcluster.LocalCluster` the same way
with their own folder and ports.
"""

from __future__ import annotations

import os
import secrets
import shutil
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml

from replicator.dev.localcluster import ClusterStatus, LocalCluster, LocalClusterSpec, TlsListener
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


# `dev up --secure`: each cluster also listens with SASL_SSL (SCRAM-SHA-256/512) on its port + 2, with a
# certificate from a CA kept under <home>/dev/tls; the written config uses that listener as user ``mirrorflow``,
# whose password is generated once into <home>/dev/secrets/ and read from there by the config (``${file:...}``).
SECURE_OFFSET = 2
SCRAM_USER = "mirrorflow"
_SECURE_MARK = Path("dev") / "secure"  # present while the dev clusters are secured (`--secure` until `--plaintext`)
_PASSWORD_FILE = Path("dev") / "secrets" / "scram.password"


def is_secure(home: Path) -> bool:
    """Whether ``dev up`` secures the clusters (as asked last time)."""
    return (home / _SECURE_MARK).exists()


def set_secure(home: Path, secure: bool) -> None:
    """Remember ``--secure`` (or ``--plaintext``) for the next ``dev up``."""
    mark = home / _SECURE_MARK
    if secure:
        mark.parent.mkdir(parents=True, exist_ok=True)
        mark.write_text("dev up --secure: TLS (SASL_SSL, SCRAM) listeners; `dev up --plaintext` turns them off\n")
    else:
        mark.unlink(missing_ok=True)


def _scram_password(home: Path) -> str:
    """The dev user's SCRAM password: made once (random), kept in a file only its owner reads."""
    path = home / _PASSWORD_FILE
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(secrets.token_urlsafe(24) + "\n")
    return path.read_text().strip()


def dev_clusters(home: Path, ports: Mapping[str, int] = DEV_PORTS, prepare: bool = False) -> list[LocalCluster]:
    """The two development clusters kept under ``home/dev`` (with their TLS listener when secured). ``prepare``
    (to start them): make the CA, the broker's certificate and the SCRAM password when missing; else (to stop
    them, to ask how they are) nothing is made."""
    if not is_secure(home):
        return [LocalCluster(LocalClusterSpec(name=name, home=home / "dev" / name, port=port,
                                              controller_port=port + 1)) for name, port in ports.items()]
    # Imported here: every command imports this module (its folder and ports), only a secured dev environment
    # needs cryptography (60 ms of each command's start).
    from replicator.dev.tls import LocalCA, issued_files

    folder = home / "dev" / "tls"
    if prepare:
        ca = LocalCA(folder)
        keystore, users = ca.ensure("broker").keystore, {SCRAM_USER: _scram_password(home)}
    else:
        password = home / _PASSWORD_FILE
        keystore = issued_files(folder, "broker").keystore
        users = {SCRAM_USER: password.read_text().strip()} if password.exists() else {}
    pem = folder / "ca.pem"
    return [
        LocalCluster(LocalClusterSpec(
            name=name, home=home / "dev" / name, port=port, controller_port=port + 1, scram_users=users,
            tls_listeners=(TlsListener("SECURE", port + SECURE_OFFSET, "SASL_SSL", keystore, pem),)))
        for name, port in ports.items()
    ]


def secure_listener(cluster: LocalCluster) -> str | None:
    """``host:port`` of a dev cluster's SASL_SSL listener, when it has one."""
    listeners = cluster.spec.tls_listeners
    return listeners[0].bootstrap_servers(cluster.spec.host) if listeners else None


def _quiet(_: str) -> None:
    return None


def dev_up(
    home: Path, ports: Mapping[str, int] = DEV_PORTS, clean: bool = False, progress: Progress = _quiet,
    secure: bool | None = None,
) -> list[ClusterStatus]:
    """Start both clusters (in parallel); harmless when they already run. ``secure``: add (True) or drop (False)
    their TLS listener, restarting a running cluster whose listeners change; None: as last time."""
    if clean:
        dev_down(home, ports, clean=True, progress=progress)
    if secure is not None and secure != is_secure(home):
        stopped = dev_down(home, ports, progress=progress)  # its listeners change: a restart
        if stopped:
            progress(f"restarting {', '.join(stopped)} {'with' if secure else 'without'} a TLS listener")
        set_secure(home, secure)
    clusters = dev_clusters(home, ports, prepare=True)

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
    clusters: dict[str, dict[str, str]] = {}
    for cluster in dev_clusters(home, ports):
        secured = secure_listener(cluster)
        clusters[cluster.spec.name] = {"bootstrap.servers": cluster.spec.bootstrap_servers} if secured is None else {
            "bootstrap.servers": secured, "security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.username": SCRAM_USER, "sasl.password": f"${{file:{_PASSWORD_FILE}}}",  # relative to the config
            "ssl.ca.location": str((home / "dev" / "tls" / "ca.pem").resolve())}
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
