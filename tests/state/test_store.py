"""State store: migrations agree with the models; repository writes are idempotent upserts."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import Engine, event, text

from replicator.config import parse_config
from replicator.domain.route_topic import AddedBy, DesiredState, TopicStatus
from replicator.state import repository
from replicator.state.models import Base
from replicator.state.store import (
    SCHEMA_HEAD,
    VERSION_TABLE,
    StateStore,
    current_revision,
    head_revision,
    upgrade,
)

CONFIG = parse_config(
    "clusters: {a: {bootstrap.servers: 'h:1'}, b: {bootstrap.servers: 'h:2'}}\n"
    "routes:\n"
    "  - {name: a-to-b, source: a, target: b, topics: [orders]}\n"
    "  - {name: b-to-a, source: b, target: a, topics: [x], policy: {mapping: {x: y}}}\n"
)


def test_migrations_create_exactly_the_models(state_url: str) -> None:
    with StateStore(state_url) as store:  # migrates on first use
        with store.engine.connect() as connection:
            context = MigrationContext.configure(connection, opts={"version_table": VERSION_TABLE})
            assert compare_metadata(context, Base.metadata) == []
        assert current_revision(store.engine) == head_revision() is not None


def test_the_schema_head_named_in_the_code_is_the_newest_migration() -> None:
    """A new migration in sql/migrations must be named in SCHEMA_HEAD too: a database at the old head would
    otherwise still be migrated (Alembic decides), but every command would pay Alembic's import again."""
    assert SCHEMA_HEAD == head_revision(), "a migration was added: set replicator.state.store.SCHEMA_HEAD to it"


def test_a_database_at_head_is_opened_without_importing_alembic(tmp_path: Path) -> None:
    """Opening a migrated database (every command's first store) reads its version with SQLAlchemy alone; one
    behind the newest migration is migrated, by Alembic, as before."""
    import subprocess
    import sys

    from alembic import command

    from replicator.state.store import alembic_config, make_engine

    url = f"sqlite:///{tmp_path / 'state.db'}"
    engine = make_engine(url)
    with engine.begin() as connection:  # the schema of the migration before the newest
        command.upgrade(alembic_config(connection), f"{int(SCHEMA_HEAD) - 1:04d}")
    engine.dispose()
    probe = ("import sys\nfrom replicator.state.store import StateStore, current_revision\n"
             f"StateStore({url!r}).close()\nprint('alembic' in sys.modules)\n")

    def opened() -> str:
        done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    assert opened() == "True"  # one migration behind: Alembic migrates it
    with StateStore(url) as store:
        assert current_revision(store.engine) == SCHEMA_HEAD
    assert opened() == "False"  # at head: Alembic is not even imported


def test_upgrade_twice_is_harmless(state_url: str) -> None:
    with StateStore(state_url) as store:
        head = current_revision(store.engine)
        assert upgrade(store.engine) == (head, head)


def test_routes_and_topics_upsert(state_url: str) -> None:
    with StateStore(state_url) as store:
        for _ in range(2):  # a retried task must be harmless
            with store.session() as session:
                assert repository.register_routes(session, CONFIG.routes) == ["a-to-b", "b-to-a"]
                repository.set_topic(session, "a-to-b", "orders", DesiredState.REPLICATE, AddedBy.CONFIG)
        with store.session() as session:
            repository.set_topic(session, "a-to-b", "orders", DesiredState.PAUSED, AddedBy.CLI)
            repository.set_topic(session, "a-to-b", "audit", DesiredState.REPLICATE, AddedBy.CLI)
            repository.report_status(session, "a-to-b", "orders", TopicStatus.REPLICATING, "3 partitions")
        with store.session() as session:
            topics = repository.route_topics(session, "a-to-b")
            assert repository.route_topics(session, "b-to-a") == []
        assert [(t.topic, t.desired_state, t.status, t.added_by) for t in topics] == [
            ("audit", DesiredState.REPLICATE, TopicStatus.PENDING, AddedBy.CLI),
            ("orders", DesiredState.PAUSED, TopicStatus.REPLICATING, AddedBy.CONFIG),
        ]
        assert topics[1].status_detail == "3 partitions"


def test_a_look_reads_only_the_topics_an_operator_acted_on(state_url: str) -> None:
    """A worker asks every look (every 5 s) for the hand-made topics and pauses: not for the thousands it found."""
    with StateStore(state_url) as store:
        with store.session() as session:
            repository.register_routes(session, CONFIG.routes)
            for i in range(50):
                repository.set_topic(session, "a-to-b", f"found{i:02d}", DesiredState.REPLICATE, AddedBy.DISCOVERY)
            repository.set_topic(session, "a-to-b", "orders", DesiredState.REPLICATE, AddedBy.CONFIG)
            repository.set_topic(session, "a-to-b", "found07", DesiredState.PAUSED, AddedBy.CLI)
            repository.set_topic(session, "a-to-b", "found08", DesiredState.REMOVED, AddedBy.CLI)
            repository.set_topic(session, "a-to-b", "found09", DesiredState.FAILED_OVER, AddedBy.CLI)
            repository.set_topic(session, "a-to-b", "audit", DesiredState.REPLICATE, AddedBy.CLI)
        with store.session() as session:
            acted_on = repository.operator_topics(session, "a-to-b")
            assert len(repository.route_topics(session, "a-to-b")) == 52
        assert [(t.topic, t.desired_state, t.added_by) for t in acted_on] == [
            ("audit", DesiredState.REPLICATE, AddedBy.CLI),
            ("found07", DesiredState.PAUSED, AddedBy.DISCOVERY),
            ("found08", DesiredState.REMOVED, AddedBy.DISCOVERY),
            ("found09", DesiredState.FAILED_OVER, AddedBy.DISCOVERY),
        ]
        from replicator.state.route_link import StateLink

        link = StateLink(CONFIG.route("a-to-b"), store)
        assert link.manual_topics() == ({"audit"}, {"found08"})
        assert link.paused == {"found07", "found09"}


def test_unknown_route_is_a_clear_error(state_url: str) -> None:
    from replicator.errors import ConfigError

    with StateStore(state_url) as store:
        with pytest.raises(ConfigError, match="route 'nope' is not registered"), store.session() as session:
            repository.route_topics(session, "nope")


def test_unreachable_database_is_a_state_store_error() -> None:
    from replicator.errors import StateStoreError

    with pytest.raises(StateStoreError, match="state database unreachable") as caught:
        StateStore("postgresql+psycopg://nobody:secretpw@127.0.0.1:1/none")
    assert "secretpw" not in str(caught.value)
    with pytest.raises(StateStoreError, match=r"state.url"):
        StateStore("not a url")


def test_a_route_never_registered_has_no_manual_topics(state_url: str) -> None:
    """`mirrorflow status` (and a starting worker) on a route no one has run yet."""
    from replicator.config import parse_config
    from replicator.state.route_link import StateLink

    config = parse_config("clusters: {a: {bootstrap.servers: 'x:1'}, b: {bootstrap.servers: 'y:1'}}\n"
                          "routes: [{name: fresh, source: a, target: b, topics: [t]}]\n")
    with StateStore(state_url) as store:
        assert StateLink(config.route("fresh"), store).manual_topics() == (set(), set())


def _closed_connections(store: StateStore) -> list[object]:
    """The DBAPI connections of ``store`` closed from now on (SQLAlchemy's pool event)."""
    closed: list[object] = []
    event.listen(store.engine, "close", lambda dbapi_connection, _record: closed.append(dbapi_connection))
    return closed


def test_a_store_used_as_a_context_manager_closes_at_the_end_of_the_block(state_url: str) -> None:
    with StateStore(state_url) as store:
        closed = _closed_connections(store)
        with store.session() as session:
            session.execute(text("SELECT 1"))
        assert closed == []  # back in the pool, still open
    assert len(closed) >= 1 and store.engine.pool.checkedin() == 0


def test_a_store_closes_when_its_block_raises(state_url: str) -> None:
    with pytest.raises(RuntimeError, match="boom"), StateStore(state_url) as store:
        closed = _closed_connections(store)
        with store.session() as session:
            session.execute(text("SELECT 1"))
        raise RuntimeError("boom")
    assert len(closed) >= 1 and store.engine.pool.checkedin() == 0


def _count_upgrades(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The URLs the store's migration check runs on from now on (a spy around ``upgrade``)."""
    from replicator.state import store as store_module

    checked: list[str] = []
    real = store_module.upgrade

    def spy(engine: Engine) -> tuple[str | None, str | None]:
        checked.append(engine.url.render_as_string(hide_password=False))
        return real(engine)

    monkeypatch.setattr(store_module, "upgrade", spy)
    return checked


def test_the_migration_check_runs_once_per_process_and_url(state_url: str, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    checked = _count_upgrades(monkeypatch)
    for _ in range(3):
        with StateStore(state_url) as store:
            assert current_revision(store.engine) == head_revision() is not None
    assert len(checked) == 1
    other = f"sqlite:///{tmp_path / 'other.db'}"
    with StateStore(other) as store:
        assert current_revision(store.engine) == head_revision()  # a new URL: checked, so migrated
    with StateStore(other):
        pass
    assert len(checked) == 2 and checked[1] == other


def test_a_failed_migration_check_is_not_remembered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from replicator.errors import StateStoreError

    checked, path = _count_upgrades(monkeypatch), tmp_path / "state.db"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(StateStoreError, match="locked"):
            StateStore(f"sqlite:///{path}?timeout=0.1")
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    with StateStore(f"sqlite:///{path}?timeout=0.1") as store:
        assert current_revision(store.engine) == head_revision()
    assert len(checked) == 2


def test_an_in_memory_database_is_migrated_by_every_store(monkeypatch: pytest.MonkeyPatch) -> None:
    checked = _count_upgrades(monkeypatch)
    for _ in range(2):
        with StateStore("sqlite://") as store:  # each engine its own empty database
            assert current_revision(store.engine) == head_revision()
    assert len(checked) == 2


def test_a_partition_state_is_stored_replaced_and_cleared_when_the_partition_is_placed_again(state_url: str) -> None:
    with StateStore(state_url) as store:
        store.run(lambda s: repository.record_partition_state(s, "r", "orders", 3, "STUCK", "position 7"))
        store.run(lambda s: repository.record_partition_state(s, "r", "orders", 4, "FAULTED", "too large"))
        store.run(lambda s: repository.record_partition_state(s, "other", "orders", 3, "STUCK", "elsewhere"))
        first = store.run(lambda s: repository.partition_states(s, "r"))
        assert {k: v[:2] for k, v in first.items()} == {("orders", 3): ("STUCK", "position 7"),
                                                        ("orders", 4): ("FAULTED", "too large")}
        store.run(lambda s: repository.record_partition_state(s, "r", "orders", 3, "STUCK", "position 7"))
        assert store.run(lambda s: repository.partition_states(s, "r"))[("orders", 3)][2] == first[("orders", 3)][2]
        store.run(lambda s: repository.clear_partition_states(s, "r", [("orders", 3), ("orders", 9)]))
        assert set(store.run(lambda s: repository.partition_states(s, "r"))) == {("orders", 4)}
        store.run(lambda s: repository.record_partition_state(s, "r", "orders", 4, None))
        assert store.run(lambda s: repository.partition_states(s, "r")) == {}
        assert set(store.run(lambda s: repository.partition_states(s, "other"))) == {("orders", 3)}
