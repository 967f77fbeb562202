"""Health, start order and stopping in docker-compose.yml (used by tests/unit/dev/test_compose.py).

- every long-running service has a health check, run by a program its image surely has, and ours probe what
  the service serves (a worker's --metrics-port /metrics, a Spark daemon's web UI);
- a service waits for what it uses: a one-shot dependency to complete, one with a health check to be healthy;
- long-running services come back after a crash or a reboot;
- a worker is given the time its SIGTERM needs (flush, commit, close) before Docker kills it.
"""

from __future__ import annotations

import re
from pathlib import Path

from replicator.worker.exactly_once import COMMIT_GIVE_UP_S
from replicator.worker.timeouts import WorkerTimeouts
from tests.compose_checks import Compose, Service, image_repo_and_tag, is_mirrorflow, services
from tests.spark_checks import daemon_options, spark_daemons

# What a health check may run, per image, and why each is surely there.
IMAGE_PROGRAMS = {
    "apache/kafka": {"/opt/kafka/bin/kafka-broker-api-versions.sh"},  # Kafka's own tools, where the image puts them
    "postgres": {"pg_isready"},  # the server image ships PostgreSQL's client programs
    "prom/prometheus": {"promtool"},  # its Dockerfile copies /bin/promtool beside /bin/prometheus
    "grafana/grafana": {"curl"},  # its Dockerfile installs curl (apk on Alpine, apt on Ubuntu)
}
BUILT_PROGRAMS = {"python"}  # the MirrorFlow image (python:3.11-slim): no curl, no wget
RESTART_POLICIES = {"always", "unless-stopped"}
_LOCAL_URL = re.compile(r"http://(?:localhost|127\.0\.0\.1):(\d+)(/[^'\"\s]*)?")
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(h|m|s|ms|us)")


def worker_stop_seconds() -> float:
    """The longest a ``mirrorflow run`` takes from SIGTERM to exit, by the worker's own timeouts: the wait for the
    target to acknowledge what is in flight, an exactly-once route's last commit, then the source consumer's close
    (bounded to ``handover + close``)."""
    timeouts = WorkerTimeouts()
    return timeouts.shutdown + COMMIT_GIVE_UP_S + timeouts.handover + timeouts.close


def seconds(duration: str | int | float) -> float:
    """A compose duration (``90s``, ``1m30s``) in seconds."""
    if isinstance(duration, int | float):
        return float(duration)
    scale = {"h": 3600, "m": 60, "s": 1, "ms": 1e-3, "us": 1e-6}
    return sum(float(n) * scale[unit] for n, unit in _DURATION.findall(duration))


def depends_on(service: Service) -> dict[str, str]:
    """A service's dependencies -> the condition it waits for (the short list form waits for a start)."""
    raw = service.get("depends_on") or {}
    if isinstance(raw, list):
        return {str(name): "service_started" for name in raw}
    return {str(name): str((spec or {}).get("condition", "service_started")) for name, spec in raw.items()}


def one_shots(compose: Compose) -> set[str]:
    """Services that others wait for to complete: they run once and exit."""
    return {dep for s in services(compose).values() for dep, cond in depends_on(s).items()
            if cond == "service_completed_successfully"}


def long_running(compose: Compose) -> dict[str, Service]:
    """Every service but the one-shots."""
    shots = one_shots(compose)
    return {name: s for name, s in services(compose).items() if name not in shots}


def health_test(service: Service) -> list[str]:
    """The health check's command line ([] when none, or disabled)."""
    test = (service.get("healthcheck") or {}).get("test")
    if service.get("healthcheck", {}).get("disable") or not test or test == ["NONE"]:
        return []
    if isinstance(test, str):
        return test.split()
    kind, *rest = test
    words = rest[0].split() if kind == "CMD-SHELL" and rest else rest
    return [w for w in words if not re.match(r"^[A-Z_][A-Z0-9_]*=", w)] if kind == "CMD-SHELL" else words


def allowed_programs(service: Service) -> set[str]:
    """The programs a health check of this service may run."""
    if service.get("build"):
        return BUILT_PROGRAMS
    return IMAGE_PROGRAMS.get(image_repo_and_tag(str(service.get("image", "")))[0], set())


def healthcheck_problems(compose: Compose, repo: Path) -> list[str]:
    """Each long-running service has a health check whose program its image has, probing what it serves."""
    problems = []
    for name, service in long_running(compose).items():
        test = health_test(service)
        if not test:
            problems.append(f"service {name}: no health check")
            continue
        allowed = allowed_programs(service)
        if test[0] not in allowed:
            problems.append(f"service {name}: the health check runs {test[0]!r}, which its image is not known to "
                            f"have (known: {', '.join(sorted(allowed)) or 'none'})")
        expected = served_endpoint(name, service, compose)
        probed = _LOCAL_URL.search(" ".join(test))
        if expected and (not probed or (int(probed.group(1)), probed.group(2) or "/") != expected):
            shown = f"port {probed.group(1)} {probed.group(2) or '/'}" if probed else "no local URL"
            problems.append(f"service {name}: the health check probes {shown}, but the service serves "
                            f"port {expected[0]} {expected[1]}")
    return problems


def served_endpoint(name: str, service: Service, compose: Compose) -> tuple[int, str] | None:
    """(port, path) the service answers on, from its own command: a worker's metrics, a Spark daemon's UI."""
    argv = service.get("command")
    if isinstance(argv, list) and is_mirrorflow([str(a) for a in argv]) and "--metrics-port" in argv:
        return int(argv[argv.index("--metrics-port") + 1]), "/metrics"
    if name in spark_daemons(compose):
        cls, args = spark_daemons(compose)[name]
        port = daemon_options(cls, args).get("--webui-port")
        return (int(port), "/") if port and port.isdigit() else None
    return None


def depends_on_problems(compose: Compose, repo: Path) -> list[str]:
    """A service waits for a one-shot dependency to complete and for one with a health check to be healthy."""
    problems = []
    shots = one_shots(compose)
    for name, service in services(compose).items():
        for dep, condition in depends_on(service).items():
            target = services(compose).get(dep)
            if target is None:
                problems.append(f"service {name}: depends on {dep!r}, which is no service")
            elif dep not in shots and health_test(target) and condition != "service_healthy":
                problems.append(f"service {name}: waits for {dep} to be {condition.removeprefix('service_')}, "
                                f"not healthy (it has a health check)")
    return problems


def restart_problems(compose: Compose, repo: Path) -> list[str]:
    """Each long-running service is restarted by Docker after a crash or a reboot of the host."""
    return [f"service {name}: restart {service.get('restart', 'no')!r}: it stays down after a crash"
            for name, service in long_running(compose).items()
            if str(service.get("restart", "no")) not in RESTART_POLICIES]


def stop_grace_problems(compose: Compose, repo: Path) -> list[str]:
    """Each ``mirrorflow run`` service gets the time its stop takes before Docker kills it (default 10 s)."""
    needed = worker_stop_seconds()
    problems = []
    for name, service in services(compose).items():
        command = service.get("command")
        if isinstance(command, list) and is_mirrorflow([str(a) for a in command]) and command[1:2] == ["run"]:
            grace = seconds(service.get("stop_grace_period", "10s"))
            if grace < needed:
                problems.append(f"service {name}: stop_grace_period {grace:.0f} s, but a worker's stop may take "
                                f"{needed:.0f} s (then Docker kills it before it committed)")
    return problems
