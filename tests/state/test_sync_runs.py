"""Sync runs in the state DB: each run and its diff, newest first; discovered topics registered once."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pendulum

from replicator.config import parse_config
from replicator.domain.route_topic import AddedBy, DesiredState, TopicStatus
from replicator.domain.sync_run import Outcome, SyncChange, SyncRun
from replicator.state import repository
from replicator.state.store import StateStore

CONFIG = parse_config("clusters: {a: {bootstrap.servers: 'h:1'}, b: {bootstrap.servers: 'h:2'}}\n"
                      "routes:\n  - {name: a-to-b, source: a, target: b, topics: [orders]}\n")
T0 = dt.datetime(2026, 11, 1, 12, 0, tzinfo=dt.UTC)


def test_runs_and_changes_round_trip_newest_first(state_url: str) -> None:
    first = SyncRun("a-to-b", "discovery", T0, T0 + dt.timedelta(seconds=2),
                    (SyncChange("create topic", "topic a.orders", "from orders, 3 partitions", Outcome.APPLIED),
                     SyncChange("alter configs", "topic a.x", "retention.ms: (unset) -> 5", Outcome.FAILED,
                                "INVALID_CONFIG: no")),
                    ("a note",))
    later = pendulum.instance(T0).add(minutes=5)  # what a run stamps its times with
    second = SyncRun("a-to-b", "metadata", later, later.add(seconds=1))
    with StateStore(state_url) as store:
        with store.session() as session:
            repository.record_sync_run(session, first)
            repository.record_sync_run(session, second)
        with store.session() as session:
            runs = repository.sync_runs(session, "a-to-b")
            assert repository.sync_runs(session, "a-to-b", step="discovery") == [first]
            assert repository.sync_runs(session, "other") == []
        assert runs == [second, first]
        assert runs[1].status.value == "failed" and runs[0].status.value == "ok"
        assert runs[1].started_at == T0 and runs[1].started_at.tzinfo is not None


def test_discovered_topics_are_registered_once_and_never_override_the_operator(state_url: str) -> None:
    with StateStore(state_url) as store:
        with store.session() as session:
            repository.register_routes(session, CONFIG.routes)
            repository.set_topic(session, "a-to-b", "paused", DesiredState.PAUSED, AddedBy.CLI)
            assert repository.register_discovered(session, "a-to-b", ["orders", "paused"]) == ["orders"]
            assert repository.register_discovered(session, "a-to-b", ["orders", "paused"]) == []
            repository.set_topic(session, "a-to-b", "copied", DesiredState.REPLICATE, AddedBy.CONFIG)
            repository.report_status(session, "a-to-b", "copied", TopicStatus.REPLICATING)
            repository.set_topic(session, "a-to-b", "wished", DesiredState.REPLICATE, AddedBy.CLI)
        with store.session() as session:
            topics = {t.topic: (t.desired_state, t.added_by) for t in repository.route_topics(session, "a-to-b")}
            replicated = repository.replicated_topics(session, "a-to-b")
        assert topics["orders"] == (DesiredState.REPLICATE, AddedBy.DISCOVERY)
        assert topics["paused"] == (DesiredState.PAUSED, AddedBy.CLI)
        # replicated before: copied by a worker or given a replica by discovery; not a mere wish, not paused
        assert replicated == {"orders", "copied"}


def test_discovery_is_due_after_the_routes_interval(tmp_path: Path) -> None:
    from replicator.runbooks.sync.run import discovery_due

    config = tmp_path / "mirrorflow.yaml"
    config.write_text("clusters: {a: {bootstrap.servers: 'h:1'}, b: {bootstrap.servers: 'h:2'}}\n"
                      "routes:\n  - {name: a-to-b, source: a, target: b, topics: [orders],"
                      " sync: {discovery_interval: 10}}\n"
                      f"state: {{url: 'sqlite:///{tmp_path / 'state.db'}'}}\n")
    assert discovery_due(config, "a-to-b", now=T0)  # never ran
    with StateStore(f"sqlite:///{tmp_path / 'state.db'}") as store:
        with store.session() as session:
            repository.record_sync_run(session, SyncRun("a-to-b", "discovery", T0, T0))
            repository.record_sync_run(session, SyncRun("a-to-b", "metadata", T0 + dt.timedelta(minutes=9),
                                                        T0 + dt.timedelta(minutes=9)))
    assert not discovery_due(config, "a-to-b", now=T0 + dt.timedelta(minutes=9))
    assert discovery_due(config, "a-to-b", now=T0 + dt.timedelta(minutes=10))  # a metadata run does not count
