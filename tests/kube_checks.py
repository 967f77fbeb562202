"""docker/kubernetes/ checked against the code, as the compose file is (used by tests/unit/dev/test_kubernetes.py):
each container's command parses with our CLI under its environment (the worker's id from its pod's name), the
ConfigMap's mirrorflow.yaml loads with the Secret's files mounted where the pod mounts them, the ServiceMonitor
reaches the port ``--metrics-port`` serves, the image is the one the Dockerfile builds, a stop gets the time it
takes. Each check returns readable problem lines; the manifests are plain YAML documents.
"""

from __future__ import annotations

import re
import shlex
import tomllib
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from replicator.cli.run_cmd import WORKER_ID_ENV, worker_id_of
from replicator.config import CONFIG_ENV
from replicator.errors import ConfigError, UsageError
from tests.compose_checks import REPO, image_repo_and_tag, is_mirrorflow, load_compose, parse_cli, services
from tests.compose_health import worker_stop_seconds
from tests.mounted_config import load_mounted

KUBE_DIR = REPO / "docker" / "kubernetes"
Doc = dict[str, Any]
KubeCheck = Callable[[list[Doc]], list[str]]


def load_manifests(folder: Path = KUBE_DIR) -> list[Doc]:
    """Every document of the folder's YAML files."""
    return [doc for path in sorted(folder.glob("*.yaml"))
            for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")) if doc]


def of_kind(docs: list[Doc], kind: str) -> list[Doc]:
    """The documents of one kind."""
    return [doc for doc in docs if doc.get("kind") == kind]


def name(doc: Doc) -> str:
    """``metadata.name``."""
    return str(doc.get("metadata", {}).get("name", "?"))


def pod(sts: Doc) -> Doc:
    """The pod spec of a StatefulSet."""
    return dict(sts["spec"]["template"]["spec"])


def all_containers(sts: Doc) -> list[Doc]:
    """Init containers, then containers."""
    spec = pod(sts)
    return [*spec.get("initContainers", []), *spec.get("containers", [])]


def pod_names(sts: Doc) -> list[str]:
    """The first and the last pod's name (StatefulSet pods are <name>-<ordinal>)."""
    return sorted({f"{name(sts)}-0", f"{name(sts)}-{max(int(sts['spec'].get('replicas', 1)) - 1, 0)}"})


def container_env(container: Doc, pod_name: str) -> dict[str, str]:
    """The container's environment in the pod ``pod_name``: values, and the pod's name from the downward API."""
    env = {}
    for item in container.get("env", []):
        field = item.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath")
        if "value" in item:
            env[item["name"]] = str(item["value"])
        elif field == "metadata.name":
            env[item["name"]] = pod_name
    return env


def argv(container: Doc) -> list[str]:
    """The container's command line (command + args)."""
    return [str(a) for a in [*container.get("command", []), *container.get("args", [])]]


def command_problems(docs: list[Doc]) -> list[str]:
    """Each mirrorflow command parses under its container's environment; the fleet runs `db upgrade` before
    `run`, and each worker's id is its pod's name."""
    problems = []
    for sts in of_kind(docs, "StatefulSet"):
        seen = []
        for container in all_containers(sts):
            line = argv(container)
            if not is_mirrorflow(line):
                continue
            seen.append(" ".join(line[1:3]))
            for pod_name in pod_names(sts):
                problems += _command_problems(container, line, pod_name)
        inits = [" ".join(argv(c)[1:3]) for c in pod(sts).get("initContainers", [])]
        if "db upgrade" not in inits:
            problems.append(f"StatefulSet {name(sts)}: no init container runs `mirrorflow db upgrade` (runs: {seen})")
        if not any(s.startswith("run") for s in seen):
            problems.append(f"StatefulSet {name(sts)}: no container runs `mirrorflow run`")
    return problems


def _command_problems(container: Doc, line: list[str], pod_name: str) -> list[str]:
    where = f"container {container['name']} of pod {pod_name}"
    args, why = parse_cli(line[1:], container_env(container, pod_name))
    if why:
        return [f"{where}: `{shlex.join(line)}`: {why}"]
    if line[1:2] != ["run"]:
        return []
    try:
        worker_id = worker_id_of(args)
    except UsageError as exc:
        return [f"{where}: {exc}"]
    if worker_id != pod_name:
        return [f"{where}: worker id {worker_id!r}, not the pod's name (set {WORKER_ID_ENV} from metadata.name)"]
    return []


def config_path(container: Doc) -> PurePosixPath | None:
    """The config a mirrorflow container loads: --config, else $MIRRORFLOW_CONFIG."""
    line = argv(container)
    if "--config" in line[:-1]:
        return PurePosixPath(line[line.index("--config") + 1])
    value = container_env(container, "pod").get(CONFIG_ENV)
    return PurePosixPath(value) if value else None


def mounted_volume(container: Doc, path: PurePosixPath) -> tuple[str, PurePosixPath] | None:
    """(volume name, path inside the volume) of the container's mount that holds ``path``."""
    for mount in sorted(container.get("volumeMounts", []), key=lambda m: -len(m["mountPath"])):
        root = PurePosixPath(mount["mountPath"])
        if path == root or root in path.parents:
            return mount["name"], path.relative_to(root)
    return None


def volume_files(volume: Doc) -> dict[str, str]:
    """A configMap or secret volume's files -> their keys (all keys when it lists no items)."""
    source = volume.get("configMap") or volume.get("secret") or {}
    return {item["path"]: item["key"] for item in source.get("items", [])}


def secret_files(sts: Doc, container: Doc) -> dict[PurePosixPath, str]:
    """The files the pod's Secret volumes put in the container (contents: a value made up per key)."""
    volumes = {v["name"]: v for v in pod(sts).get("volumes", [])}
    out = {}
    for mount in container.get("volumeMounts", []):
        volume = volumes.get(mount["name"], {})
        if "secret" in volume:
            for path, key in volume_files(volume).items():
                out[PurePosixPath(mount["mountPath"]) / path] = f"secret-{key}"
    return out


def config_text(docs: list[Doc], sts: Doc, container: Doc, path: PurePosixPath) -> str:
    """The config file's text from the ConfigMap the container mounts at ``path``; ConfigError when none."""
    found = mounted_volume(container, path)
    volumes = {v["name"]: v for v in pod(sts).get("volumes", [])}
    volume = volumes.get(found[0], {}) if found else {}
    if not found or "configMap" not in volume:
        raise ConfigError(f"{path}: not in a ConfigMap the container mounts")
    key = volume_files(volume).get(str(found[1]), str(found[1]))
    maps = {name(m): m.get("data", {}) for m in of_kind(docs, "ConfigMap")}
    data = maps.get(volume["configMap"]["name"])
    if data is None or key not in data:
        raise ConfigError(f"{path}: ConfigMap {volume['configMap']['name']} has no key {key!r}")
    return str(data[key])


def config_problems(docs: list[Doc]) -> list[str]:
    """Each mirrorflow container's config loads from the ConfigMap, its ${file:} secrets from the Secret volume."""
    problems = []
    for sts in of_kind(docs, "StatefulSet"):
        for container in all_containers(sts):
            path = config_path(container)
            if not is_mirrorflow(argv(container)) or path is None:
                continue
            try:
                text = config_text(docs, sts, container, path)
                load_mounted(text, str(path), path.parent, container_env(container, pod_names(sts)[0]),
                             secret_files(sts, container))
            except ConfigError as exc:
                problems.append(f"container {container['name']}: config {path}: {exc}")
    return problems


def _port(container: Doc, port: object) -> int | None:
    """A container port by number or by name."""
    if isinstance(port, int):
        return port
    return next((p["containerPort"] for p in container.get("ports", []) if p.get("name") == port), None)


def metrics_problems(docs: list[Doc]) -> list[str]:
    """The ServiceMonitor and the probes reach the port `mirrorflow run --metrics-port` serves, at /metrics."""
    problems = []
    for sts in of_kind(docs, "StatefulSet"):
        for container in pod(sts).get("containers", []):
            line = argv(container)
            if not is_mirrorflow(line) or line[1:2] != ["run"]:
                continue
            served = int(line[line.index("--metrics-port") + 1]) if "--metrics-port" in line[:-1] else None
            for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
                get = container.get(probe, {}).get("httpGet")
                if not get:
                    problems.append(f"container {container['name']}: no {probe} on /metrics")
                elif _port(container, get.get("port")) != served or get.get("path") != "/metrics":
                    problems.append(f"container {container['name']}: {probe} asks port {get.get('port')} "
                                    f"{get.get('path')}, the worker serves {served} /metrics")
            problems += _scrape_problems(docs, sts, container, served)
    return problems


def _scrape_problems(docs: list[Doc], sts: Doc, container: Doc, served: int | None) -> list[str]:
    labels = sts["spec"]["template"]["metadata"].get("labels", {})
    ports = {p["name"]: _port(container, p.get("targetPort", p["port"]))
             for svc in of_kind(docs, "Service") if _selects(svc["spec"].get("selector"), labels)
             for p in svc["spec"].get("ports", [])}
    monitors = of_kind(docs, "ServiceMonitor")
    if not monitors:
        return ["no ServiceMonitor scrapes the workers"]
    problems = []
    for monitor in monitors:
        for endpoint in monitor["spec"].get("endpoints", []):
            reached = ports.get(endpoint.get("port"))
            if reached != served or endpoint.get("path", "/metrics") != "/metrics":
                problems.append(f"ServiceMonitor {name(monitor)}: scrapes port {endpoint.get('port')!r} (container "
                                f"port {reached}) {endpoint.get('path', '/metrics')}, the worker serves {served} "
                                f"/metrics")
    return problems


def _selects(selector: dict[str, str] | None, labels: dict[str, str]) -> bool:
    return bool(selector) and all(labels.get(k) == v for k, v in (selector or {}).items())


def selector_problems(docs: list[Doc]) -> list[str]:
    """The StatefulSet's pods are selected by it, its PodDisruptionBudget and its headless Service, whose labels
    the ServiceMonitor selects."""
    problems = []
    for sts in of_kind(docs, "StatefulSet"):
        labels = sts["spec"]["template"]["metadata"].get("labels", {})
        headless = {name(s): s for s in of_kind(docs, "Service") if s["spec"].get("clusterIP") == "None"}
        service = headless.get(sts["spec"].get("serviceName", ""))
        if service is None:
            problems.append(f"StatefulSet {name(sts)}: serviceName {sts['spec'].get('serviceName')!r} is no headless "
                            f"Service ({sorted(headless)})")
        selectors = [("StatefulSet", name(sts), sts["spec"]["selector"].get("matchLabels"))]
        selectors += [(d["kind"], name(d), d["spec"]["selector"].get("matchLabels"))
                      for d in of_kind(docs, "PodDisruptionBudget")]
        selectors += [("Service", name(s), s["spec"].get("selector")) for s in of_kind(docs, "Service")]
        problems += [f"{kind} {n}: selector {sel} does not select the pods ({labels})"
                     for kind, n, sel in selectors if not _selects(sel, labels)]
        for monitor in of_kind(docs, "ServiceMonitor"):
            if service is not None and not _selects(monitor["spec"]["selector"].get("matchLabels"),
                                                    service["metadata"].get("labels", {})):
                problems.append(f"ServiceMonitor {name(monitor)}: selects no label set of Service {name(service)}")
    return problems


def built_image(repo: Path = REPO) -> str:
    """The image the Dockerfile builds, as released: compose's image name, tagged with the package's version."""
    built = [s["image"] for s in services(load_compose(repo / "docker-compose.yml")).values() if s.get("build")]
    version = tomllib.loads((repo / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
    return f"{image_repo_and_tag(built[0])[0]}:{version}"


def image_problems(docs: list[Doc]) -> list[str]:
    """Each container runs the image the Dockerfile builds, at the package's version."""
    expected = built_image()
    return [f"container {c['name']}: image {c.get('image')!r}, the Dockerfile builds {expected}"
            for sts in of_kind(docs, "StatefulSet") for c in all_containers(sts) if c.get("image") != expected]


def stop_problems(docs: list[Doc]) -> list[str]:
    """A worker pod gets the time its stop takes before the kubelet kills it (the default grace is 30 s)."""
    needed = worker_stop_seconds()
    return [f"StatefulSet {name(sts)}: terminationGracePeriodSeconds {grace}, but a worker's stop may take "
            f"{needed:.0f} s" for sts in of_kind(docs, "StatefulSet")
            if (grace := pod(sts).get("terminationGracePeriodSeconds", 30)) < needed]


def resource_problems(docs: list[Doc]) -> list[str]:
    """Each container asks for CPU and memory and is bounded in both."""
    return [f"container {c['name']}: no {kind}.{what}" for sts in of_kind(docs, "StatefulSet")
            for c in all_containers(sts) for kind in ("requests", "limits") for what in ("cpu", "memory")
            if what not in c.get("resources", {}).get(kind, {})]


_CREATE_SECRET = re.compile(r"kubectl\s+create\s+secret\s+generic\s+(\S+)((?:\s*\\?\s*--from-file=[^\s\\]+)+)")


def secret_command_problems(docs: list[Doc], readme: str) -> list[str]:
    """The README's `kubectl create secret generic NAME --from-file=KEY=...` makes the Secret the pods mount,
    with exactly the keys they read."""
    created = {m.group(1): set(re.findall(r"--from-file=([^=\s\\]+)=", m.group(2)))
               for m in _CREATE_SECRET.finditer(readme)}
    problems = []
    for sts in of_kind(docs, "StatefulSet"):
        for volume in pod(sts).get("volumes", []):
            if "secret" not in volume:
                continue
            secret, keys = volume["secret"]["secretName"], set(volume_files(volume).values())
            if secret not in created:
                problems.append(f"README: no `kubectl create secret generic {secret}` (creates {sorted(created)})")
            elif created[secret] != keys:
                problems.append(f"README: `kubectl create secret generic {secret}` makes keys "
                                f"{sorted(created[secret])}, the pods read {sorted(keys)}")
    return problems
