"""RunStore: the SQL store and the in-memory one keep runs alike; a new run and the one it replaces are one
transaction; a dry run is never stored."""

from __future__ import annotations

import pickle
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.orm import Session

from replicator.domain.runbook import StepStatus
from replicator.errors import UsageError
from replicator.runbooks.store import RunStore, SqlRunStore
from replicator.testing.runbook import MemoryRunStore
from tests.runbook_drill import T0, DrillRequest, DrillRun, with_steps

TABLE = "CREATE TABLE drill_run (run_id INTEGER PRIMARY KEY AUTOINCREMENT, route TEXT NOT NULL, data BLOB)"


def save_run(session: Session, run: DrillRun) -> DrillRun:
    if run.request.target == "refused-by-db":
        raise ValueError("the database refused the run")
    if run.run_id is None:
        new_id = session.execute(text("INSERT INTO drill_run (route) VALUES (:route)"),
                                 {"route": run.request.route}).lastrowid  # type: ignore[attr-defined]
        run = replace(run, run_id=new_id)
    session.execute(text("UPDATE drill_run SET data = :data WHERE run_id = :id"),
                    {"data": pickle.dumps(run), "id": run.run_id})
    return run


def all_runs(session: Session, route: str) -> list[DrillRun]:
    rows = session.execute(text("SELECT data FROM drill_run WHERE route = :route ORDER BY run_id"), {"route": route})
    return [pickle.loads(data) for (data,) in rows]


def unfinished_run(session: Session, route: str) -> DrillRun | None:
    found = [run for run in all_runs(session, route) if run.status in ("running", "failed")]
    return found[-1] if found else None


def load_run(session: Session, run_id: int) -> DrillRun:
    row = session.execute(text("SELECT data FROM drill_run WHERE run_id = :id"), {"id": run_id}).first()
    if row is None:
        raise UsageError(f"run {run_id} is not stored")
    return pickle.loads(row[0])  # type: ignore[no-any-return]


@pytest.fixture
def url(tmp_path: Path) -> Iterator[str]:
    url = f"sqlite:///{tmp_path / 'state.db'}"
    engine = create_engine(url)
    with engine.begin() as connection:
        connection.execute(text(TABLE))
    engine.dispose()
    yield url


@pytest.fixture(params=["sql", "memory"])
def store(request: pytest.FixtureRequest, url: str) -> RunStore[DrillRun]:
    if request.param == "memory":
        return MemoryRunStore()
    return SqlRunStore(url, save_run, unfinished_run, load_run)


def stored_count(store: RunStore[DrillRun], url: str) -> int:
    if isinstance(store, MemoryRunStore):
        return len(store.runs)
    engine = create_engine(url)
    try:
        with engine.connect() as connection:
            return int(connection.execute(text("SELECT count(*) FROM drill_run")).scalar_one())
    finally:
        engine.dispose()


def test_a_saved_run_gets_an_id_and_comes_back_as_saved(store: RunStore[DrillRun], url: str) -> None:
    first = store.save(DrillRun(DrillRequest("r")))
    second = store.save(DrillRun(DrillRequest("r")))
    assert (first.run_id, second.run_id) == (1, 2)
    moved = store.save(with_steps(first, StepStatus.DONE))
    assert moved.run_id == 1 and store.load(1) == moved
    assert stored_count(store, url) == 2


def test_a_dry_run_is_never_stored(store: RunStore[DrillRun], url: str) -> None:
    dry = DrillRun(DrillRequest("r", dry_run=True))
    assert store.save(dry) is dry
    assert stored_count(store, url) == 0
    assert store.unfinished("r") is None


@pytest.mark.parametrize(("statuses", "unfinished"), [
    ([], None),
    ([(StepStatus.DONE,)], 1),  # running
    ([(StepStatus.DONE, StepStatus.FAILED)], 1),  # failed: a re-run resumes it
    ([(StepStatus.DONE, StepStatus.DONE)], None),  # done
    ([(StepStatus.DONE, StepStatus.FAILED), (StepStatus.DONE,)], 2),  # the latest
    ([(StepStatus.DONE,), (StepStatus.DONE, StepStatus.DONE)], 1),  # the latest that is not finished
])
def test_unfinished_is_the_routes_latest_running_or_failed_run(store: RunStore[DrillRun],
                                                               statuses: list[tuple[StepStatus, ...]],
                                                               unfinished: int | None) -> None:
    for steps in statuses:
        store.save(with_steps(DrillRun(DrillRequest("r")), *steps))
    store.save(DrillRun(DrillRequest("other-route")))
    found = store.unfinished("r")
    assert (found.run_id if found else None) == unfinished


def test_begin_stores_the_new_run_and_the_abandoned_one(store: RunStore[DrillRun]) -> None:
    old = store.save(with_steps(DrillRun(DrillRequest("r")), StepStatus.FAILED))
    new = store.begin(DrillRun(DrillRequest("r", target="c")), old.abandon(T0))
    assert new.run_id == 2
    assert store.load(1).abandoned_at == T0
    assert store.unfinished("r") == new


def test_a_new_run_the_database_refuses_abandons_nothing(url: str) -> None:
    store = SqlRunStore(url, save_run, unfinished_run, load_run)
    old = store.save(with_steps(DrillRun(DrillRequest("r")), StepStatus.FAILED))
    with pytest.raises(ValueError, match="refused"):
        store.begin(DrillRun(DrillRequest("r", target="refused-by-db")), old.abandon(T0))
    assert store.load(1) == old
    assert store.unfinished("r") == old


@pytest.mark.parametrize("fails", [False, True])
def test_what_a_runbook_stores_with_a_new_run_is_in_the_same_transaction(url: str, fails: bool) -> None:
    def on_begin(session: Session) -> Any:
        session.execute(text("INSERT INTO drill_run (route, data) VALUES ('route-row', NULL)"))
        if fails:
            raise RuntimeError("route not registered")

    store = SqlRunStore(url, save_run, unfinished_run, load_run, on_begin=on_begin)
    if fails:
        with pytest.raises(RuntimeError):
            store.begin(DrillRun(DrillRequest("r")), None)
    else:
        store.begin(DrillRun(DrillRequest("r")), None)
    assert stored_count(store, url) == (0 if fails else 2)


def test_loading_a_run_that_is_not_stored_is_a_usage_error(store: RunStore[DrillRun]) -> None:
    with pytest.raises(UsageError, match="run 7 is not stored"):
        store.load(7)
