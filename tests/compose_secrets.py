"""Passwords of the compose stack (used by tests/unit/dev/test_compose.py and test_kubernetes.py).

They come only from docker/mirrorflow.env, a file the user fills in from the committed example: compose
hands each to the services that need it as a secret (a file under /run/secrets/). Checked here: no password
is written in docker-compose.yml or docker/ (nor as a compose default, nor in a URL); every variable the
compose file uses is in the example, which holds no value for a secret; each image that would otherwise start
with a default password gets one from a secret; the real env file is git-ignored and kept out of the image.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from tests.compose_checks import (
    COMPOSE_FILE,
    ENV_EXAMPLE,
    ENV_FILE,
    REPO,
    Compose,
    environment,
    image_repo_and_tag,
    services,
)
from tests.compose_configs import service_secrets

SECRET_KEY = re.compile(r"(?i)passw(or)?d|secret|token|credential|api[_-]?key")
# A value that names where the secret is, not the secret: a ${VAR} or ${file:} reference, a *_FILE variable's path.
_REFERENCE = re.compile(r"^\$\{(?:file:[^}]+|[A-Za-z_][A-Za-z0-9_]*)\}$")
_COMPOSE_DEFAULT = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]*:?-([^}]+)\}")
_URL_PASSWORD = re.compile(r"://[^/\s:@]+:([^@\s]+)@")
_USED_VARIABLE = re.compile(r"(?<!\$)\$\{([A-Za-z_][A-Za-z0-9_]*)(?=[}:?+-])")
# Keys whose values name secrets rather than hold them (compose's secrets lists, a Secret volume's name).
_NAMING_KEY = re.compile(r"(?i)^(x-[\w-]*)?secrets$|^secretName$|^source$|^environment$")
# Images that start with a well-known or no password unless given one, and the setting that gives it as a file.
PASSWORD_FILE_SETTINGS = {
    "postgres": "POSTGRES_PASSWORD_FILE",
    "grafana/grafana": "GF_SECURITY_ADMIN_PASSWORD__FILE",
}


def deployment_files(repo: Path) -> list[Path]:
    """The compose file and every YAML file under docker/ (configs, Prometheus, Grafana, Kubernetes)."""
    found = [p for p in sorted((repo / "docker").rglob("*")) if p.suffix in {".yml", ".yaml"}]
    return [repo / COMPOSE_FILE.relative_to(REPO), *found]


def _pairs(node: Any, key: str = "") -> Iterator[tuple[str, str]]:
    """(key, string value) of every scalar in a YAML document; a Kubernetes/compose ``{name, value}`` entry
    counts under its name, a ``KEY=VALUE`` list item under KEY."""
    if isinstance(node, dict):
        if isinstance(node.get("name"), str) and isinstance(node.get("value"), str):
            yield node["name"], node["value"]
        for k, v in node.items():
            yield from _pairs(v, str(k))
    elif isinstance(node, list):
        for item in node:
            if isinstance(item, str) and "=" in item and key == "environment":
                yield tuple(item.split("=", 1))  # type: ignore[misc]
            else:
                yield from _pairs(item, key)
    elif isinstance(node, str):
        yield key, node


def literal_problems(key: str, value: str) -> list[str]:
    """Why ``key: value`` writes a password down (none when it only says where one is)."""
    problems = []
    if _NAMING_KEY.match(key):
        return problems
    if SECRET_KEY.search(key) and value.strip() and not key.upper().endswith("FILE"):
        if not _REFERENCE.match(value.strip()):
            problems.append(f"{key}: a literal value")
    for default in _COMPOSE_DEFAULT.findall(value) if SECRET_KEY.search(key) else []:
        problems.append(f"{key}: a default value {default!r} in its ${{...}}")
    for password in _URL_PASSWORD.findall(value):
        if not _REFERENCE.match(password):
            problems.append(f"{key}: a URL with a password in it")
    return problems


def secret_literal_problems_in(path: Path, repo: Path) -> list[str]:
    """Every password written down in one YAML file (all its documents)."""
    problems = []
    for document in yaml.safe_load_all(path.read_text(encoding="utf-8")):
        for key, value in _pairs(document):
            problems += [f"{path.relative_to(repo)}: {p}" for p in literal_problems(key, value)]
    return problems


def secret_literal_problems(repo: Path) -> list[str]:
    """No password in docker-compose.yml or docker/: each comes from the env file (or a Kubernetes Secret)."""
    found = [p for path in deployment_files(repo) for p in secret_literal_problems_in(path, repo)]
    return list(dict.fromkeys(found))  # an anchor shared by several services says it once


def raw_compose(path: Path = COMPOSE_FILE) -> Compose:
    """The compose file as written (no variable substituted)."""
    return dict(yaml.safe_load(path.read_text(encoding="utf-8")))


def used_variables(raw: Compose) -> set[str]:
    """Variables the compose file needs from its env file: those its values interpolate, and the secrets'."""
    interpolated = {name for _, value in _pairs(raw) for name in _USED_VARIABLE.findall(value)}
    return interpolated | secret_variables(raw)


def secret_variables(compose: Compose) -> set[str]:
    """The variables that become compose secrets."""
    return {str(s["environment"]) for s in (compose.get("secrets") or {}).values()
            if isinstance(s, dict) and "environment" in s}


def env_example_problems(raw: Compose, example: dict[str, str]) -> list[str]:
    """The example defines every variable the compose file uses, and nothing else; it holds no secret's value."""
    used = used_variables(raw)
    name = ENV_EXAMPLE.relative_to(REPO)
    problems = [f"{name}: does not define {v}, which docker-compose.yml uses" for v in sorted(used - set(example))]
    problems += [f"{name}: defines {v}, which docker-compose.yml never uses" for v in sorted(set(example) - used)]
    problems += [f"{name}: {v} holds a value: the example must leave every password to the user"
                 for v in sorted(secret_variables(raw) & set(example)) if example[v]]
    return problems


def secret_declaration_problems(compose: Compose, repo: Path) -> list[str]:
    """Each secret a service is given is declared, from a variable of the env file (never a file in the repo)."""
    declared = compose.get("secrets") or {}
    problems = []
    for name, service in services(compose).items():
        for secret in service_secrets(compose, service):
            spec = declared.get(secret)
            if not isinstance(spec, dict):
                problems.append(f"service {name}: secret {secret!r} is not declared under secrets:")
            elif "environment" not in spec:
                problems.append(f"secret {secret}: not from a variable of {ENV_FILE.relative_to(REPO)} ({spec})")
    return problems


def default_password_problems(compose: Compose, repo: Path) -> list[str]:
    """Each image that would start with a default (or no) password reads one from its secrets."""
    problems = []
    for name, service in services(compose).items():
        setting = PASSWORD_FILE_SETTINGS.get(image_repo_and_tag(str(service.get("image", "")))[0])
        if setting is None:
            continue
        path = environment(service).get(setting)
        mounted = set(service_secrets(compose, service).values())
        if path is None or PurePosixPath(path) not in mounted:
            problems.append(f"service {name}: {setting} is {path!r}, not one of its secrets "
                            f"({', '.join(map(str, sorted(mounted))) or 'none'}): it starts with its image's "
                            f"default password")
    return problems


def ignored(path: str, ignore_file: Path) -> bool:
    """Whether ``path`` (relative to the repo) matches a pattern of a .gitignore/.dockerignore (no negations)."""
    patterns = [line.strip() for line in ignore_file.read_text(encoding="utf-8").splitlines()
                if line.strip() and not line.startswith("#")]
    return any(fnmatch.fnmatch(path, p.strip("/")) or ("/" not in p.strip("/") and
                                                        fnmatch.fnmatch(Path(path).name, p.strip("/")))
               for p in patterns)


def env_file_problems(repo: Path) -> list[str]:
    """The real env file can be neither committed nor copied into the image."""
    path = str(ENV_FILE.relative_to(REPO))
    return [f"{ignore}: does not exclude {path}, which holds the stack's passwords"
            for ignore in (".gitignore", ".dockerignore") if not ignored(path, repo / ignore)]
