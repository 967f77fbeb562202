"""A running worker's state DB goes away and comes back: said once each way, nothing it had to store lost."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from replicator.config import parse_config
from replicator.domain.route_topic import AddedBy, DesiredState, TopicStatus
from replicator.state import repository
from replicator.state.route_link import StateLink
from replicator.state.store import StateStore
from tests.support import sqlite_locked

CONFIG = parse_config("clusters: {a: {bootstrap.servers: 'x:1'}, b: {bootstrap.servers: 'y:1'}}\n"
                      "routes: [{name: r, source: a, target: b, topics: [t]}]\n")
ROUTE = CONFIG.route("r")
AWAY, BACK = "state database unavailable", "state database answers again"


@pytest.fixture
def store(state_url: str) -> Iterator[StateStore]:
    """A migrated store with route r registered (SQLite gives up on a lock after 0.1 s)."""
    with StateStore(state_url + ("?timeout=0.1" if state_url.startswith("sqlite") else "")) as opened:
        opened.run(lambda session: repository.register_routes(session, CONFIG.routes))
        yield opened


@contextmanager
def outage(store: StateStore) -> Iterator[None]:
    """The database refuses every connection and statement until the block ends."""
    url = store.engine.url
    store.engine.dispose()
    if url.get_backend_name() == "sqlite":  # a rollback-journal exclusive lock keeps readers out too
        with sqlite_locked(str(url.database)):
            yield
        return
    admin = create_engine(make_url(url).set(database="postgres"), isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f'ALTER DATABASE "{url.database}" ALLOW_CONNECTIONS false'))
        connection.execute(text("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = :d"),
                           {"d": url.database})
        try:
            yield
        finally:
            connection.execute(text(f'ALTER DATABASE "{url.database}" ALLOW_CONNECTIONS true'))
    admin.dispose()


def _lines(caplog: pytest.LogCaptureFixture, start: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.getMessage().startswith(start)]


def test_lost_ranges_found_while_the_database_is_away_are_stored_once_it_answers(
        store: StateStore, caplog: pytest.LogCaptureFixture) -> None:
    link = StateLink(ROUTE, store, retry_seconds=0)  # ask again on every call: still one line each way
    with outage(store):
        link.data_loss("t", 0, (100, 250))
        link.data_loss("t", 1, (5, 9))
        link.data_loss("t", 0, (100, 250))  # the same range found again (the partition placed again)
        assert link.held() is None  # unknown while away: no answer is no hold
        assert link.data_losses() is None  # `mirrorflow status`: unknown, not "none"
    assert len(_lines(caplog, AWAY)) == 1 and _lines(caplog, BACK) == []
    assert link.held() is None  # a read: the DB answers, the kept writes go first
    with store.session() as session:
        assert repository.data_losses(session, "r") == [("t", 0, 100, 250), ("t", 1, 5, 9)]
    assert link.data_losses() == [("t", 0, 100, 250), ("t", 1, 5, 9)]
    [back] = _lines(caplog, BACK)
    assert "route=r" in back and "skipped_writes=3 skipped_reads=2" in back
    assert len(_lines(caplog, AWAY)) == 1


def test_reads_while_away_answer_what_the_database_said_last(
        store: StateStore, caplog: pytest.LogCaptureFixture) -> None:
    with store.session() as session:
        repository.set_topic(session, "r", "paused", DesiredState.PAUSED, AddedBy.CLI)
        repository.set_topic(session, "r", "extra", DesiredState.REPLICATE, AddedBy.CLI)
    link = StateLink(ROUTE, store, retry_seconds=0)
    said = ({"extra", "paused"}, set())  # a paused topic stays subscribed: no rebalance of the others
    assert link.manual_topics() == said and link.paused == {"paused"}
    with outage(store):
        assert link.manual_topics() == said  # its silence must not resume the paused topic
        assert link.paused == {"paused"}
    [away] = _lines(caplog, AWAY)
    assert "route=r" in away and "cause=" in away
    with store.session() as session:
        repository.set_topic(session, "r", "paused", DesiredState.REPLICATE, AddedBy.CLI)
        repository.set_topic(session, "r", "gone", DesiredState.REMOVED, AddedBy.CLI)
    assert link.manual_topics() == ({"extra", "paused"}, {"gone"}) and link.paused == frozenset()
    assert len(_lines(caplog, BACK)) == 1


def test_a_worker_stopping_while_the_database_is_away_logs_the_ranges_it_could_not_store(
        store: StateStore, caplog: pytest.LogCaptureFixture) -> None:
    link = StateLink(ROUTE, store)
    with outage(store):
        link.data_loss("t", 2, (7, 11))
        link.close()
    [error] = [r for r in caplog.records if r.levelname == "ERROR"]
    assert "count=1" in error.getMessage()
    assert "data_loss topic=t partition=2 from=7 to_exclusive=11" in error.getMessage()


def test_topics_started_and_stopped_are_stored_with_their_statuses(store: StateStore) -> None:
    """What `mirrorflow topics list` and the page show: new topics join the route as config topics copying,
    a topic removed by hand keeps its desired state, stopped ones say so, and a thousand arrive at once."""
    store.run(lambda session: repository.set_topic(session, "r", "paused", DesiredState.PAUSED, AddedBy.CLI))
    link = StateLink(ROUTE, store)
    many = [f"t{n:04d}" for n in range(1000)]
    link.replicating([*many, "paused"], [])
    link.replicating(["t0000"], ["t0001", "paused", "never-known"])
    rows = {t.topic: t for t in store.run(lambda session: repository.route_topics(session, "r"))}
    assert set(rows) == {*many, "paused"}
    assert (rows["t0000"].status, rows["t0000"].desired_state, rows["t0000"].added_by) == (
        TopicStatus.REPLICATING, DesiredState.REPLICATE, AddedBy.CONFIG)
    assert rows["t0001"].status == TopicStatus.STOPPED
    assert (rows["paused"].status, rows["paused"].desired_state, rows["paused"].added_by) == (
        TopicStatus.STOPPED, DesiredState.PAUSED, AddedBy.CLI)
    assert sum(r.status == TopicStatus.REPLICATING for r in rows.values()) == 999
