"""References in a config's values: ``${NAME}`` (an environment variable) and ``${file:PATH}`` (a file's text).

A variable not set or a file that cannot be read is an error naming the key, never the value.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from replicator.errors import ConfigError

_ENV_REF = re.compile(r"\$\{(?:([A-Za-z_][A-Za-z0-9_]*)|file:([^}]+))\}")


def expand_env(node: Any, environ: Mapping[str, str], path: str, base: Path = Path(".")) -> Any:
    """Replace ``${NAME}`` in string values with the environment variable NAME, and ``${file:PATH}`` with the
    contents of the file PATH (relative to ``base``, the config file's folder; one final newline dropped)."""
    if isinstance(node, Mapping):
        return {k: expand_env(v, environ, f"{path}.{k}" if path else str(k), base) for k, v in node.items()}
    if isinstance(node, list):
        return [expand_env(v, environ, f"{path}[{i}]", base) for i, v in enumerate(node)]
    if isinstance(node, str):
        return _ENV_REF.sub(lambda m: _reference(m, environ, path, base), node)
    return node


def _reference(match: re.Match[str], environ: Mapping[str, str], path: str, base: Path) -> str:
    """The value of one ``${...}``; a variable not set or a file that cannot be read is an error naming the key
    (never the value)."""
    name, file = match.group(1), match.group(2)
    if name is not None:
        if name not in environ:
            raise ConfigError(f"{path}: environment variable {name} is not set")
        return environ[name]
    return read_secret_file(base / Path(file).expanduser(), path)


def read_secret_file(target: Path, key: str) -> str:
    """A ``${file:}`` value: the file's text, one final newline dropped; an error names ``key`` and the file."""
    try:
        text = target.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{key}: cannot read the file {target}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{key}: the file {target} is not UTF-8 text") from None
    return text.removesuffix("\n").removesuffix("\r")


_WHOLE_FILE_REF = re.compile(r"^\$\{file:([^}]+)\}$")
LOGIN_KEYS = ("sasl.username", "sasl.password")


def login_files(raw: Mapping[str, Any], base: Path) -> dict[str, dict[str, str]]:
    """Per cluster, the SASL login keys whose whole value is one ``${file:PATH}`` (key -> absolute file)."""
    out: dict[str, dict[str, str]] = {}
    clusters = raw.get("clusters")
    for name, props in (clusters.items() if isinstance(clusters, Mapping) else ()):
        for key in LOGIN_KEYS:
            found = _WHOLE_FILE_REF.match(str(props.get(key, ""))) if isinstance(props, Mapping) else None
            if found:
                out.setdefault(str(name), {})[key] = str((base / Path(found.group(1)).expanduser()).absolute())
    return out
