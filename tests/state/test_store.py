"""State store: migrations agree with the models; repository writes are idempotent upserts."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from replicator.config import parse_config
from replicator.domain.route_topic import AddedBy, DesiredState, TopicStatus
from replicator.state import repository
from replicator.state.models import Base
from replicator.state.store import (
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
    store = StateStore(state_url)  # migrates on first use
    try:
        with store.engine.connect() as connection:
            context = MigrationContext.configure(connection, opts={"version_table": VERSION_TABLE})
            assert compare_metadata(context, Base.metadata) == []
        assert current_revision(store.engine) == head_revision() is not None
    finally:
        store.close()


def test_upgrade_twice_is_harmless(state_url: str) -> None:
    store = StateStore(state_url)
    try:
        head = current_revision(store.engine)
        assert upgrade(store.engine) == (head, head)
    finally:
        store.close()


def test_routes_and_topics_upsert(state_url: str) -> None:
    store = StateStore(state_url)
    try:
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
    finally:
        store.close()


def test_unknown_route_is_a_clear_error(state_url: str) -> None:
    import pytest

    from replicator.errors import ConfigError

    store = StateStore(state_url)
    try:
        with pytest.raises(ConfigError, match="route 'nope' is not registered"), store.session() as session:
            repository.route_topics(session, "nope")
    finally:
        store.close()


def test_unreachable_database_is_a_state_store_error() -> None:
    import pytest

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
    store = StateStore(state_url)
    try:
        assert StateLink(config.route("fresh"), store).manual_topics() == (set(), set())
    finally:
        store.close()
