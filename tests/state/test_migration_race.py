"""Workers started together on a fresh state database all migrate it, none fails.

Each round starts ``PROCESSES`` processes that wait on one barrier and then open
(and so migrate) the same new database at the same moment; it is repeated
``ROUNDS`` times, because a race lost once in a while is still a worker that died.
"""

from __future__ import annotations

import multiprocessing
import os
from pathlib import Path
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from replicator.state.models import Base
from replicator.state.store import VERSION_TABLE, StateStore, current_revision, head_revision
from tests.state.conftest import fresh_database

PROCESSES, ROUNDS = 8, 6


def _open(url: str, barrier: Any, answers: Any) -> None:
    barrier.wait(30)
    try:
        StateStore(url).close()
        answers.put("ok")
    except BaseException as exc:  # noqa: BLE001 - reported to the test
        answers.put(f"{type(exc).__name__}: {exc}")


def _race(url: str) -> list[str]:
    """Open ``url`` from PROCESSES processes at once; returns every failure."""
    context = multiprocessing.get_context("fork")  # cheap children: the modules are already imported
    barrier, answers = context.Barrier(PROCESSES), context.Queue()
    children = [context.Process(target=_open, args=(url, barrier, answers)) for _ in range(PROCESSES)]
    for child in children:
        child.start()
    results = [answers.get(timeout=120) for _ in children]
    for child in children:
        child.join(30)
    return [result for result in results if result != "ok"]


def _assert_at_head(url: str) -> None:
    with StateStore(url) as store:
        assert current_revision(store.engine) == head_revision() is not None
        with store.engine.connect() as connection:
            context = MigrationContext.configure(connection, opts={"version_table": VERSION_TABLE})
            assert compare_metadata(context, Base.metadata) == []


@pytest.mark.parametrize("round_", range(ROUNDS))
def test_processes_migrating_one_new_sqlite_file_at_once_all_succeed(tmp_path: Path, round_: int) -> None:
    url = f"sqlite:///{tmp_path / 'state.db'}"
    assert _race(url) == []
    _assert_at_head(url)


@pytest.mark.postgres
@pytest.mark.parametrize("round_", range(ROUNDS))
def test_processes_migrating_one_new_postgres_database_at_once_all_succeed(
        postgres_url: str, round_: int) -> None:
    with fresh_database(postgres_url, f"race{os.getpid()}_{round_}") as url:
        assert _race(url) == []
        _assert_at_head(url)
