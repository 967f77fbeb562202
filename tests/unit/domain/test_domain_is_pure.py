"""replicator.domain must stay importable without Kafka, Airflow, Spark or a database."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

DOMAIN = Path(__file__).resolve().parents[3] / "replicator" / "domain"
FORBIDDEN = {"confluent_kafka", "airflow", "pyspark", "sqlalchemy", "alembic", "yaml", "pydantic"}


def _imported_roots(path: Path) -> set[str]:
    roots = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(node.module.split(".")[0])
    return roots


@pytest.mark.parametrize("module", sorted(DOMAIN.glob("*.py")), ids=lambda p: p.name)
def test_domain_module_imports_no_io_library(module: Path) -> None:
    assert not (_imported_roots(module) & FORBIDDEN), f"{module.name} imports I/O libraries"


def test_domain_imports_nothing_outside_domain() -> None:
    for module in DOMAIN.glob("*.py"):
        for node in ast.walk(ast.parse(module.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("replicator"):
                assert node.module.startswith("replicator.domain"), f"{module.name}: {node.module}"
