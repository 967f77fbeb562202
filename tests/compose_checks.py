"""Reading docker-compose.yml and checking it against the repo (used by tests/unit/dev/test_compose.py).

Each check returns the disagreements it finds, one readable line each.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path, PurePosixPath
from typing import Any
from unittest.mock import patch

import yaml

from replicator.cli.main import build_parser
from replicator.dev.devenv import DEV_PORTS

REPO = Path(__file__).resolve().parents[1]
COMPOSE_FILE = REPO / "docker-compose.yml"
DOCKER_CONFIG = REPO / "docker" / "mirrorflow.yaml"
# The stack's passwords: the committed example, and the git-ignored file a user fills in from it.
ENV_EXAMPLE = REPO / "docker" / "mirrorflow.env.example"
ENV_FILE = REPO / "docker" / "mirrorflow.env"
SECRETS_DIR = PurePosixPath("/run/secrets")  # where compose mounts a service's secrets
# Where the Dockerfile copies the repo: a container path below it is a repo path.
APP_DIR = PurePosixPath("/opt/mirrorflow")
KAFKA_IMAGE = "apache/kafka"
LOOPBACK_HOSTS = {"localhost", "127.0.0.1"}
POM_NS = {"m": "http://maven.apache.org/POM/4.0.0"}

Compose = dict[str, Any]
Service = dict[str, Any]
Check = Callable[[Compose, Path], list[str]]
Mutation = Callable[[Compose], None]

# Compose's own variable syntax: $$, ${NAME}, ${NAME:-default}, ${NAME-default}.
_COMPOSE_VAR = re.compile(r"\$(?:(\$)|\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?-)([^}]*))?\})")


# --- reading docker-compose.yml ---------------------------------------------------


def interpolate(node: Any, environ: Mapping[str, str]) -> Any:
    """Apply compose's variable substitution to every string value, as `docker compose` does."""
    if isinstance(node, dict):
        return {key: interpolate(value, environ) for key, value in node.items()}
    if isinstance(node, list):
        return [interpolate(value, environ) for value in node]
    if isinstance(node, str):
        return _COMPOSE_VAR.sub(lambda m: _substitute(m, environ), node)
    return node


def _substitute(match: re.Match[str], environ: Mapping[str, str]) -> str:
    escaped, name, operator, default = match.groups()
    if escaped:
        return "$"
    value = environ.get(name)
    if operator == ":-" and not value:
        return str(default)
    if operator == "-" and value is None:
        return str(default)
    return value or ""  # compose substitutes an unset variable by "" (with a warning)


def load_compose(path: Path = COMPOSE_FILE) -> Compose:
    """The compose file as `docker compose` sees it on a host that sets no variables.

    An empty environment on purpose: the defaults in the file are what a new
    user gets, so those are what must work.
    """
    return dict(interpolate(yaml.safe_load(path.read_text(encoding="utf-8")), {}))


def services(compose: Compose) -> dict[str, Service]:
    """The ``services`` section."""
    return dict(compose.get("services") or {})


def environment(service: Service) -> dict[str, str]:
    """A service's environment, from either compose syntax (mapping or ``KEY=VALUE`` list)."""
    raw = service.get("environment") or {}
    if isinstance(raw, list):
        raw = dict(item.split("=", 1) if "=" in item else (item, None) for item in raw)
    # A key without a value is passed through from the host: not set by compose itself.
    return {str(k): _as_text(v) for k, v in raw.items() if v is not None}


def _as_text(value: object) -> str:
    """An environment value as the container sees it (YAML booleans as compose writes them)."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def argvs(service: Service) -> Iterator[list[str]]:
    """Every command line of a service: entrypoint, command and healthcheck."""
    for key in ("entrypoint", "command"):
        value = service.get(key)
        if value:
            yield [str(v) for v in value] if isinstance(value, list) else shlex.split(value)
    test = (service.get("healthcheck") or {}).get("test")
    if isinstance(test, list) and test and test[0] == "CMD":
        yield [str(v) for v in test[1:]]
    elif isinstance(test, list) and test and test[0] == "CMD-SHELL":
        yield shlex.split(test[1])
    elif isinstance(test, str):
        yield shlex.split(test)


def is_mirrorflow(argv: list[str]) -> bool:
    """True for a ``mirrorflow ...`` command line."""
    return bool(argv) and PurePosixPath(argv[0]).name == "mirrorflow"


def mirrorflow_argvs(compose: Compose) -> list[tuple[str, list[str]]]:
    """``(service, arguments)`` of every ``mirrorflow ...`` command line in the file."""
    return [
        (name, argv[1:])
        for name, service in services(compose).items()
        for argv in argvs(service)
        if is_mirrorflow(argv)
    ]


def parse_cli(args: list[str], environ: Mapping[str, str] | None = None) -> tuple[Any, str | None]:
    """``mirrorflow ARGS`` through the real CLI parser, built under ``environ`` (its options' environment
    fallbacks are read then): (the parsed arguments, None), or (None, why argparse refused them)."""
    stderr = io.StringIO()
    with contextlib.ExitStack() as stack:
        if environ is not None:
            stack.enter_context(patch.dict(os.environ, environ))
        stack.enter_context(contextlib.redirect_stderr(stderr))
        stack.enter_context(contextlib.redirect_stdout(io.StringIO()))
        try:
            return build_parser().parse_args(args), None
        except SystemExit:
            return None, stderr.getvalue().strip() or "exits instead of running"


def _volume(volume: str | Mapping[str, Any]) -> tuple[str, str, str]:
    """``(type, source, target)`` of a volume entry in short or long syntax."""
    if isinstance(volume, Mapping):
        return str(volume.get("type", "volume")), str(volume.get("source", "")), volume["target"]
    source, _, rest = volume.partition(":")
    if not rest:
        return "volume", "", source  # anonymous volume: only a container path
    # Compose's rule: a source that looks like a path is a bind mount, else a named volume.
    kind = "bind" if source.startswith((".", "/", "~")) else "volume"
    return kind, source, rest.split(":")[0]


def bind_mounts(service: Service) -> list[tuple[str, PurePosixPath]]:
    """``(host source, container target)`` of the service's bind mounts."""
    mounts = (_volume(v) for v in service.get("volumes") or [])
    return [(source, PurePosixPath(target)) for kind, source, target in mounts if kind == "bind"]


def named_volumes(service: Service) -> list[str]:
    """The named volumes a service mounts."""
    mounts = (_volume(v) for v in service.get("volumes") or [])
    return [source for kind, source, _ in mounts if kind == "volume" and source]


def published_ports(service: Service) -> list[tuple[int | None, int]]:
    """``(host port, container port)`` pairs; the host port is None when Docker picks one."""
    pairs: list[tuple[int | None, int]] = []
    for entry in service.get("ports") or []:
        if isinstance(entry, Mapping):
            published = entry.get("published")
            pairs.append((int(published) if published else None, int(entry["target"])))
            continue
        # [ip:][host:]container[/protocol]
        parts = str(entry).split("/")[0].split(":")
        host = parts[-2] if len(parts) >= 2 else None
        pairs.append((int(host) if host else None, int(parts[-1])))
    return pairs


def listeners(service: Service, key: str) -> dict[str, tuple[str, int]]:
    """A Kafka listener list (``NAME://host:port,...``) from the service's environment."""
    found = {}
    for item in filter(None, environment(service).get(key, "").split(",")):
        name, _, address = item.strip().partition("://")
        host, _, port = address.rpartition(":")
        found[name] = (host, int(port))
    return found


def image_repo_and_tag(image: str) -> tuple[str, str]:
    """``apache/kafka:4.1.2`` -> ``("apache/kafka", "4.1.2")``; the tag is "latest" when absent."""
    repo, _, tag = image.rpartition(":")
    if not repo or "/" in tag:  # no tag: that colon belonged to a registry's port
        return image, "latest"
    return repo, tag


def kafka_services(compose: Compose) -> dict[str, Service]:
    """The services that run the Kafka image."""
    return {
        name: service
        for name, service in services(compose).items()
        if image_repo_and_tag(str(service.get("image", "")))[0] == KAFKA_IMAGE
    }


def pom_kafka_version(repo: Path) -> str:
    """``kafka.version`` of pom.xml: the one place the Kafka version is pinned."""
    root = ET.parse(repo / "pom.xml").getroot()
    version = root.findtext("m:properties/m:kafka.version", namespaces=POM_NS)
    assert version, "pom.xml has no <kafka.version> property"
    return version.strip()


# --- container paths ---------------------------------------------------------------------


def container_to_host(service: Service, path: PurePosixPath, repo: Path) -> Path | None:
    """The repo file a container path shows: via a bind mount, else via the image's copy."""
    for source, target in sorted(bind_mounts(service), key=lambda m: -len(m[1].parts)):
        if path == target or target in path.parents:
            return repo / source / path.relative_to(target)
    if service.get("build") and (path == APP_DIR or APP_DIR in path.parents):
        return repo / path.relative_to(APP_DIR)
    return None



# --- the checks -----------------------------------------------------------------------


def image_problems(compose: Compose, repo: Path) -> list[str]:
    """Each service has an image, or a build whose context and Dockerfile exist."""
    problems = []
    for name, service in services(compose).items():
        build = service.get("build")
        if not build:
            if not service.get("image"):
                problems.append(f"service {name}: neither image nor build")
            continue
        spec = {"context": build} if isinstance(build, str) else build
        context, dockerfile = spec.get("context", "."), spec.get("dockerfile", "Dockerfile")
        if not (repo / context).is_dir():
            problems.append(f"service {name}: build context {context!r} is not a repo folder")
        elif not (repo / context / dockerfile).is_file():
            problems.append(f"service {name}: build context {context!r} has no {dockerfile!r}")
    return problems


def mount_problems(compose: Compose, repo: Path) -> list[str]:
    """Each bind-mounted host path exists inside the repo; each named volume is declared."""
    problems = []
    declared = set(compose.get("volumes") or {})
    for name, service in services(compose).items():
        for source, target in bind_mounts(service):
            host = (repo / source).resolve()
            if not host.is_relative_to(repo):
                problems.append(f"service {name}: mount {source} -> {target} leaves the repo")
            elif not host.exists():
                problems.append(f"service {name}: mount {source} -> {target}: no such path")
        for volume in named_volumes(service):
            if volume not in declared:
                problems.append(f"service {name}: volume {volume!r} is not declared in volumes:")
    return problems


def command_problems(compose: Compose, repo: Path) -> list[str]:
    """Each ``mirrorflow ...`` command line parses with the real CLI parser, under the service's environment."""
    problems = []
    for name, args in mirrorflow_argvs(compose):
        _, why = parse_cli(args, environment(services(compose)[name]))
        if why:
            problems.append(f"service {name}: `mirrorflow {shlex.join(args)}`: {why}")
    return problems


def kafka_version_problems(compose: Compose, repo: Path) -> list[str]:
    """Each Kafka image tag equals pom.xml's kafka.version (the jars `dev up` runs)."""
    expected = pom_kafka_version(repo)
    return [
        f"service {name}: image {service['image']}, but pom.xml kafka.version is {expected}"
        for name, service in kafka_services(compose).items()
        if image_repo_and_tag(service["image"])[1] != expected
    ]


def dev_port_problems(compose: Compose, repo: Path) -> list[str]:
    """primary and backup publish and advertise the host ports of `mirrorflow dev up`."""
    problems = []
    kafka = kafka_services(compose)
    for name, port in DEV_PORTS.items():
        if name in kafka:
            problems += _host_listener_problems(name, kafka[name], port)
        else:
            problems.append(f"service {name}: missing or not on the {KAFKA_IMAGE} image")
    return problems


def _host_listener_problems(name: str, service: Service, port: int) -> list[str]:
    """One cluster: its published host port, loopback listener and bound port agree."""
    published = published_ports(service)
    host_ports = sorted(h for h, _ in published if h is not None)
    if host_ports != [port]:
        return [f"service {name}: publishes host ports {host_ports}, DEV_PORTS says {port}"]
    advertised = listeners(service, "KAFKA_ADVERTISED_LISTENERS")
    on_host = {ln: (h, p) for ln, (h, p) in advertised.items() if h in LOOPBACK_HOSTS}
    if [p for _, p in on_host.values()] != [port]:
        shown = ", ".join(f"{ln}://{h}:{p}" for ln, (h, p) in on_host.items()) or "none"
        return [f"service {name}: advertises host listeners {shown}, DEV_PORTS says {port}"]
    listener = next(iter(on_host))
    bound = listeners(service, "KAFKA_LISTENERS").get(listener)
    container_port = dict(published)[port]
    if bound is None or bound[1] != container_port:
        binds = f"port {bound[1]}" if bound else "nothing"
        return [
            f"service {name}: host port {port} goes to container port {container_port}, "
            f"but listener {listener} binds {binds}"
        ]
    return []


PROMETHEUS_IMAGE = "prom/prometheus"
PROMETHEUS_CONFIG = PurePosixPath("/etc/prometheus/prometheus.yml")


def metrics_endpoints(compose: Compose) -> set[str]:
    """``service:port`` of every ``mirrorflow run --metrics-port PORT`` in the file."""
    out = set()
    for name, argv in mirrorflow_argvs(compose):
        if argv[:1] == ["run"] and "--metrics-port" in argv:
            out.add(f"{name}:{argv[argv.index('--metrics-port') + 1]}")
    return out


def scrape_problems(compose: Compose, repo: Path) -> list[str]:
    """Prometheus scrapes every worker's metrics port, and nothing else."""
    found = {name: s for name, s in services(compose).items()
             if image_repo_and_tag(str(s.get("image", "")))[0] == PROMETHEUS_IMAGE}
    workers = metrics_endpoints(compose)
    if not found:
        return [f"no service runs {PROMETHEUS_IMAGE}, which would scrape {sorted(workers)}"] if workers else []
    problems = []
    for name, service in found.items():
        host = container_to_host(service, PROMETHEUS_CONFIG, repo)
        if host is None or not host.is_file():
            problems.append(f"service {name}: {PROMETHEUS_CONFIG} is not mounted from the repo")
            continue
        config = yaml.safe_load(host.read_text(encoding="utf-8")) or {}
        targets = {t for job in config.get("scrape_configs") or [] for static in job.get("static_configs") or []
                   for t in static.get("targets") or []}
        for missing in sorted(workers - targets):
            problems.append(f"service {name}: {host.relative_to(repo)} does not scrape worker {missing}")
        for extra in sorted(targets - workers):
            problems.append(f"service {name}: {host.relative_to(repo)} scrapes {extra}, which is no worker's "
                            f"--metrics-port ({', '.join(sorted(workers)) or 'none'})")
    return problems


# --- tests on the real file -----------------------------------------------------------
