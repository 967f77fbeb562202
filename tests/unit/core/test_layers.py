"""The package's layers (README, "Layout"): each part imports only the parts above it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[3] / "replicator"
CORE = "core"  # the package's top-level modules: config, errors, logs, paths, jars, waiting
LAYERS = ["domain", CORE, "state", "kafka", "worker", "runbooks", "airflow"]
ON_TOP = {"ui": set(), "dev": set(), "testing": set(), "cli": {"dev"}}  # on every layer; the cli runs the dev tools


def part_of(module: str) -> str:
    """``replicator.kafka.clients`` -> ``kafka``; a top-level module -> core."""
    name = module.split(".")[1] if module.count(".") >= 1 else ""
    return name if (PACKAGE / name).is_dir() else CORE


def imports(path: Path) -> set[str]:
    """Every ``replicator.*`` module a file imports, at the top or inside a function."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("replicator."):
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.startswith("replicator."))
    return found


def allowed(part: str) -> set[str]:
    if part in ON_TOP:
        return set(LAYERS) | {part} | ON_TOP[part]
    return set(LAYERS[:LAYERS.index(part) + 1])


FILES = sorted(PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(PACKAGE.parent)))
def test_each_module_imports_only_the_layers_above_its_own(path: Path) -> None:
    relative = path.relative_to(PACKAGE)
    part = relative.parts[0] if len(relative.parts) > 1 else CORE
    wrong = sorted(m for m in imports(path) if part_of(m) not in allowed(part) and m != "replicator")
    assert not wrong, f"{relative} ({part}) imports {wrong}"


def test_the_check_can_fail() -> None:
    assert part_of("replicator.worker.route_worker") not in allowed("kafka")
    assert part_of("replicator.config") in allowed("state")
    assert part_of("replicator.config") not in allowed("domain")
