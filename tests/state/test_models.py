"""The models against the migrated schema, where Alembic's comparison does not look: column order.

Columns a model inherits (``id`` from ``Base``, ``run_id`` from ``RunPart``, the timestamps
of ``Timestamped``) are placed by their ``sort_order``; a wrong one reorders CREATE TABLE
without any difference ``compare_metadata`` would report.
"""

from __future__ import annotations

import pytest
from sqlalchemy import inspect

from replicator.state.models import Base
from replicator.state.store import StateStore

TABLES = sorted(Base.metadata.tables)


@pytest.mark.parametrize("table", TABLES)
def test_migrated_columns_are_in_the_models_order(state_url: str, table: str) -> None:
    with StateStore(state_url) as store:
        migrated = [column["name"] for column in inspect(store.engine).get_columns(table)]
    assert migrated == [column.name for column in Base.metadata.tables[table].columns]
