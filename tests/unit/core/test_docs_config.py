"""docs/configuration.md and the pydantic models of ``replicator.config`` agree, both ways.

The models are walked through ``model_fields`` (into nested models, lists and mappings
of models, and unions such as ``policy``) into YAML key paths: ``routes[].sync.acls``,
``clusters.<name>``. Each must be the first cell (a code span) of a row of the tables
under "## Reference", and each such row must be a key of the models. A simple default
(boolean, number, string, list of strings, empty mapping) must appear in the row's
default cell. A new field without a row, a row for a field that went away, or a
changed default fails here.
"""

from __future__ import annotations

import re
import types
import typing
from collections.abc import Iterator, Mapping
from pathlib import Path

from pydantic import BaseModel

from replicator.config import Config

REPO = Path(__file__).resolve().parents[3]
CONFIGURATION = REPO / "docs" / "configuration.md"

# ClusterConfig is not written as its fields: Config._clusters builds it from
# ``<name>: {property: value}``, so its two fields are these YAML keys.
YAML_SHAPE = {
    "clusters.<name>.name": "clusters.<name>",
    "clusters.<name>.properties": "clusters.<name>.<property>",
}

_ROW_KEY = re.compile(r"^\|\s*`([^`]+)`\s*\|")


def _models(annotation: object) -> Iterator[tuple[str, type[BaseModel]]]:
    """(path suffix, model) of each model an annotation holds: itself, list items, mapping values."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield "", annotation
        return
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        for arg in args:
            yield from _models(arg)
    elif origin is tuple:
        for suffix, model in _models(args[0]):
            yield "[]" + suffix, model
    elif origin is not None and isinstance(origin, type) and issubclass(origin, Mapping):
        for suffix, model in _models(args[1]):
            yield ".<name>" + suffix, model


def model_keys(model: type[BaseModel] = Config, prefix: str = "") -> dict[str, object]:
    """Every YAML key path of ``model`` and its nested models, with the field's default."""
    keys: dict[str, object] = {}
    for name, field in model.model_fields.items():
        if field.exclude:  # derived when the file is read, never written in it
            continue
        path = f"{prefix}{name}"
        keys[path] = None if field.is_required() else field.get_default(call_default_factory=True)
        for suffix, nested in _models(field.annotation):
            keys.update(model_keys(nested, f"{path}{suffix}."))
    return keys


def yaml_keys() -> dict[str, object]:
    """``model_keys`` in the shape the YAML file is written in."""
    keys = model_keys()
    missing = set(YAML_SHAPE) - set(keys)
    assert not missing, f"YAML_SHAPE names fields the models no longer have: {sorted(missing)}"
    return {YAML_SHAPE.get(path, path): default for path, default in keys.items()}


def documented_rows(text: str) -> dict[str, list[str]]:
    """key -> cells of each table row under '## Reference' (up to the next '## ')."""
    section = text.split("\n## Reference\n", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        match = _ROW_KEY.match(line)
        if match:
            rows[match.group(1)] = [cell.strip() for cell in line.strip().strip("|").split("|")]
    return rows


def _shown(default: object) -> str | None:
    """How a simple default is written in the docs; None for the ones not checked."""
    if isinstance(default, bool):
        return str(default).lower()
    if isinstance(default, float) and default.is_integer():
        return str(int(default))
    if isinstance(default, int | float | str):
        return str(default)
    if isinstance(default, tuple) and all(isinstance(item, str) for item in default):
        return "[" + ", ".join(f'"{item}"' for item in default) + "]"
    if isinstance(default, Mapping) and not default:
        return "{}"
    return None


def config_doc_problems(text: str) -> list[str]:
    """One line per disagreement between the reference tables of ``text`` and the models."""
    keys, rows = yaml_keys(), documented_rows(text)
    problems = [f"{key}: a field of the models, not documented" for key in keys if key not in rows]
    problems += [
        f"{key}: documented, but no such field in the models" for key in rows if key not in keys
    ]
    for key, default in keys.items():
        shown = _shown(default)
        if key in rows and shown is not None and f"`{shown}`" not in rows[key][2]:
            problems.append(
                f"{key}: default `{shown}` not in its row's default cell {rows[key][2]!r}"
            )
    return problems


def test_the_reference_matches_the_models() -> None:
    assert config_doc_problems(CONFIGURATION.read_text(encoding="utf-8")) == []


def test_the_walk_reaches_nested_models_lists_mappings_and_unions() -> None:
    keys = yaml_keys()
    for key in (
        "clusters.<name>",
        "clusters.<name>.<property>",
        "routes[].name",
        "routes[].policy.mapping",
        "routes[].sync.acls",
        "routes[].checkpoints.interval",
        "routes[].sla.webhook",
        "state.url",
    ):
        assert key in keys


def test_drift_is_found() -> None:
    text = CONFIGURATION.read_text(encoding="utf-8")
    broken = text.replace("| `routes[].sla.max_lag` |", "| `routes[].sla.max_lagg` |").replace(
        "| `routes[].sync.acls` | boolean | `true` |",
        "| `routes[].sync.acls` | boolean | `false` |",
    )
    assert config_doc_problems(broken) == [
        "routes[].sla.max_lag: a field of the models, not documented",
        "routes[].sla.max_lagg: documented, but no such field in the models",
        "routes[].sync.acls: default `true` not in its row's default cell '`false`'",
    ]
