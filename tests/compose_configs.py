"""The mirrorflow configs the compose services load, as each service sees them: the file (a bind mount or the
image's copy of the repo), the service's environment, and its compose secrets under /run/secrets, their values
from the env file a user fills in from docker/mirrorflow.env.example (used by tests/unit/dev/test_compose.py).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from replicator.config import CONFIG_ENV, Config
from replicator.errors import ConfigError
from tests.compose_checks import (
    APP_DIR,
    ENV_EXAMPLE,
    REPO,
    SECRETS_DIR,
    Compose,
    Service,
    argvs,
    container_to_host,
    environment,
    is_mirrorflow,
    listeners,
    services,
)
from tests.mounted_config import load_mounted


@dataclass(frozen=True)
class ConfigRef:
    """One service's reference to a mirrorflow config, resolved to a repo file."""

    service: str
    container_path: PurePosixPath
    host_path: Path | None  # None: neither mounted nor part of the image's copy of the repo
    environ: Mapping[str, str]
    secrets: Mapping[PurePosixPath, str]  # the service's secret files: container path -> contents


def config_paths(service: Service) -> set[PurePosixPath]:
    """The config files a service names: ``--config`` arguments and $MIRRORFLOW_CONFIG."""
    paths = {p for argv in argvs(service) if is_mirrorflow(argv) for p in _config_args(argv)}
    if CONFIG_ENV in environment(service):
        paths.add(PurePosixPath(environment(service)[CONFIG_ENV]))
    return paths


def _config_args(argv: list[str]) -> Iterator[PurePosixPath]:
    for index, arg in enumerate(argv):
        if arg == "--config" and index + 1 < len(argv):
            yield PurePosixPath(argv[index + 1])
        elif arg.startswith("--config="):
            yield PurePosixPath(arg.partition("=")[2])


def read_env_file(path: Path) -> dict[str, str]:
    """``NAME=value`` lines of a compose env file (comments and blank lines skipped)."""
    pairs = (line.split("=", 1) for line in path.read_text(encoding="utf-8").splitlines()
             if line.strip() and not line.lstrip().startswith("#"))
    return {name.strip(): value.strip() for name, value in pairs}


def filled_env(repo: Path) -> dict[str, str]:
    """The example env file as a user fills it in: each empty value given one (named after its variable)."""
    example = read_env_file(repo / ENV_EXAMPLE.relative_to(REPO))
    return {name: value or f"filled-{name.lower()}" for name, value in example.items()}


def service_secrets(compose: Compose, service: Service) -> dict[str, PurePosixPath]:
    """The secrets a service is given: name -> the path of its file in the container."""
    out = {}
    for entry in service.get("secrets") or []:
        source, target = (entry, None) if isinstance(entry, str) else (entry["source"], entry.get("target"))
        out[source] = SECRETS_DIR / (target or source)  # an absolute target stays as it is
    return out


def secret_value(compose: Compose, name: str, environ: Mapping[str, str], repo: Path) -> str | None:
    """What compose writes into the secret ``name``: its variable's value, or its file's text; None if neither."""
    declared = (compose.get("secrets") or {}).get(name) or {}
    if "environment" in declared:
        return environ.get(declared["environment"])
    if "file" in declared and (repo / declared["file"]).is_file():
        return (repo / declared["file"]).read_text(encoding="utf-8")
    return None


def mounted_secrets(compose: Compose, service: Service, environ: Mapping[str, str], repo: Path,
                    ) -> dict[PurePosixPath, str]:
    """The service's secret files (container path -> contents) when compose starts it with ``environ``."""
    values = {path: secret_value(compose, name, environ, repo) for name, path in
              service_secrets(compose, service).items()}
    return {path: value for path, value in values.items() if value is not None}


def config_refs(compose: Compose, repo: Path, environ: Mapping[str, str] | None = None) -> list[ConfigRef]:
    """Every (service, config file) pair of the compose file; secrets from ``environ`` (default: the
    example env file, filled in)."""
    env = filled_env(repo) if environ is None else environ
    return [
        ConfigRef(name, path, container_to_host(service, path, repo), environment(service),
                  mounted_secrets(compose, service, env, repo))
        for name, service in services(compose).items()
        for path in sorted(config_paths(service))
    ]


def load_ref(ref: ConfigRef) -> Config:
    """Load a referenced config as the service would: that file, that service's environment and secrets."""
    if ref.host_path is None:
        raise ConfigError(f"{ref.container_path} is neither bind-mounted nor below {APP_DIR}")
    try:
        text = ref.host_path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read {ref.host_path}: {exc.strerror}") from None
    return load_mounted(text, str(ref.host_path), ref.container_path.parent, ref.environ, ref.secrets)



# --- the checks ---------------------------------------------------------------------------


def config_problems(compose: Compose, repo: Path) -> list[str]:
    """Each config a service names loads, with that service's own environment."""
    problems = []
    for ref in config_refs(compose, repo):
        try:
            load_ref(ref)
        except ConfigError as exc:
            problems.append(f"service {ref.service}: config {ref.container_path}: {exc}")
    return problems


def bootstrap_problems(compose: Compose, repo: Path) -> list[str]:
    """Each cluster of each loaded config is an advertised, bound listener of a service."""
    problems = []
    for ref in config_refs(compose, repo):
        try:
            config = load_ref(ref)
        except ConfigError:
            continue  # config_problems reports it
        for cluster in config.clusters.values():
            for server in (s.strip() for s in cluster.bootstrap_servers.split(",")):
                where = f"{ref.container_path}: cluster {cluster.name} at {server}"
                problems += _server_problems(compose, where, server)
    return problems


def _server_problems(compose: Compose, where: str, server: str) -> list[str]:
    """One bootstrap server: a service name (what Docker's DNS resolves) and its listener."""
    host, _, port_text = server.rpartition(":")
    if host not in services(compose):
        return [f"{where}: {host!r} is no compose service ({', '.join(services(compose))})"]
    service = services(compose)[host]
    advertised = listeners(service, "KAFKA_ADVERTISED_LISTENERS")
    matching = [ln for ln, address in advertised.items() if address == (host, int(port_text))]
    if not matching:
        shown = ", ".join(f"{h}:{p}" for h, p in advertised.values()) or "none"
        return [f"{where}: not an advertised listener of service {host} ({shown})"]
    bound = listeners(service, "KAFKA_LISTENERS").get(matching[0])
    if bound is None or bound[1] != int(port_text):
        binds = f"port {bound[1]}" if bound else "nothing"
        return [f"{where}: service {host} advertises it, but listener {matching[0]} binds {binds}"]
    return []


WORK_DIR_ENV = "MIRRORFLOW_WORK_DIR"  # replicator.runbooks.audit.scheduled: the DAGs' spec and result files


def read_only_targets(service: Service) -> list[PurePosixPath]:
    """The container paths the service mounts read-only."""
    out = []
    for volume in service.get("volumes") or []:
        if isinstance(volume, Mapping) and volume.get("read_only"):
            out.append(PurePosixPath(volume["target"]))
        elif isinstance(volume, str) and volume.count(":") >= 2 and "ro" in volume.rsplit(":", 1)[1].split(","):
            out.append(PurePosixPath(volume.split(":")[1]))
    return out


def work_dir_problems(compose: Compose, repo: Path) -> list[str]:
    """The Airflow services write the DAGs' job files where they can: $MIRRORFLOW_WORK_DIR, else runs/ beside
    the config, must not be on a read-only mount."""
    problems = []
    for name, service in services(compose).items():
        if not any(argv[:1] == ["airflow"] for argv in argvs(service)):
            continue
        env = environment(service)
        config = PurePosixPath(env.get(CONFIG_ENV, "mirrorflow.yaml"))
        work = PurePosixPath(env.get(WORK_DIR_ENV) or config.parent / "runs")
        for target in read_only_targets(service):
            if work == target or target in work.parents:
                problems.append(f"service {name}: the DAGs write their job files to {work}, on the read-only "
                                f"mount {target} (set {WORK_DIR_ENV} to a writable path)")
    return problems
