"""The Replication page's queries (sql/queries/) on a migrated state DB, SQLite and PostgreSQL.

The rows are written by the repository functions that audits, SLA checks, checkpoint
failover and failback runs call (tests/ui_seed.py).
"""

from __future__ import annotations

import datetime as dt
import json

import pytest

from replicator.state.audits import record_audit
from replicator.state.store import StateStore, make_engine
from replicator.ui.queries import load_query, page_rows, query_names, run_query
from tests.ui_seed import BACKFILL_KEY, OTHER, REPLICA, ROUTE, TOPIC, audit_report, seed

NOW = dt.datetime.now(dt.UTC).replace(microsecond=0)
WEEK_AGO = NOW - dt.timedelta(days=7)


def test_every_query_loads_and_an_unknown_name_is_a_key_error() -> None:
    assert {"routes", "audit_series", "audit_findings", "audit_runs", "checkpoints", "failover_runs",
            "failback_runs", "backfill_runs", "sla_states", "sla_events"} <= set(query_names())
    for name in query_names():
        load_query(name)
    with pytest.raises(KeyError, match="nope"):
        load_query("nope")


def test_a_route_page_holds_what_the_runs_recorded(state_url: str) -> None:
    seed(state_url, NOW)
    engine = make_engine(state_url)
    try:
        with engine.connect() as connection:
            assert [r["route"] for r in run_query(connection, "routes")] == [ROUTE]
            rows, _ = page_rows(connection, ROUTE, WEEK_AGO)
            other_rows, _ = page_rows(connection, "other-route", WEEK_AGO)
    finally:
        engine.dispose()
    [finding] = rows["audit_findings"]
    assert (finding["topic"], finding["target_topic"], finding["partition"], finding["status"]) == (
        TOPIC, REPLICA, 1, "missing")
    assert (finding["missing_offsets"], finding["duplicate_offsets"], finding["run_key"]) == ("40-41", "44",
                                                                                               "audit-ui-1")
    assert finding["bucket_start"].tzinfo is not None
    series = [(r["topic"], r["source_count"], r["target_count"], r["missing_count"]) for r in rows["audit_series"]]
    assert series == [(TOPIC, 9, 9, 0), (TOPIC, 26, 25, 2), (TOPIC, 10, 10, 0), (OTHER, 5, 5, 0)]  # newest first
    assert [r["status"] for r in rows["audit_runs"]] == ["missing"]
    assert {(r["check"], r["state"]) for r in rows["sla_states"]} == {("lag", "breached"), ("heartbeat", "ok")}
    assert [(r["check"], r["kind"]) for r in rows["sla_events"]] == [("lag", "breach")]
    assert [(r["group_id"], r["partition"], r["target_offset"]) for r in rows["checkpoints"]] == [
        ("billing", 0, 118), ("billing", 1, 77)]
    assert [(r["topic"], r["lag"]) for r in rows["lag_series"]] == [(TOPIC, 40), (TOPIC, 1234), (TOPIC, 7)]
    [failover] = rows["failover_runs"]
    assert (failover["mode"], failover["status"], failover["target_cluster"]) == ("checkpoint", "done", "backup")
    assert isinstance(failover["triggered_at"], dt.datetime)
    assert [(r["worker"], r["topic"], r["partition"]) for r in rows["partition_owners"]] == [
        ("w1@host-a:4242", TOPIC, 0), ("w1@host-a:4242", TOPIC, 1), ("w1@host-a:4242", TOPIC, 3),
        ("w2@host-b:77", TOPIC, 2)]
    assert rows["partition_owners"][0]["since"].tzinfo is not None
    assert [(r["step"], r["status"], r["kind"], r["outcome"]) for r in rows["sync_last"]] == [
        ("metadata", "failed", "config", "applied"), ("metadata", "failed", "acl", "failed")]
    assert all(not found for found in other_rows.values())


def test_a_bucket_audited_twice_counts_as_its_newest_audit_and_old_buckets_drop_out(state_url: str) -> None:
    seed(state_url, NOW)
    with StateStore(state_url) as store:
        store.run(lambda s: record_audit(s, audit_report(NOW, run_key="audit-ui-2")))
        with store.engine.connect() as connection:
            rows, _ = page_rows(connection, ROUTE, WEEK_AGO)
            recent, _ = page_rows(connection, ROUTE, NOW)
    assert [r["source_count"] for r in rows["audit_series"]] == [9, 26, 10, 5]  # not doubled
    assert {r["run_key"] for r in rows["audit_findings"]} == {"audit-ui-1", "audit-ui-2"}
    assert recent["audit_series"] == []


def test_failback_runs_are_read_with_their_figures(state_url: str) -> None:
    seed(state_url, NOW)
    with StateStore(state_url) as store:
        with store.engine.connect() as connection:
            _, failbacks = page_rows(connection, ROUTE, WEEK_AGO)
    assert failbacks is not None
    assert [(r["mode"], r["status"], r["records_copied"], r["not_copied_records"]) for r in failbacks] == [
        ("resync", "done", 4321, 0)]
    assert isinstance(failbacks[0]["triggered_at"], dt.datetime) and failbacks[0]["rto_seconds"] == 120.0


def test_backfill_runs_are_read_with_their_ranges_and_figures(state_url: str) -> None:
    seed(state_url, NOW)
    engine = make_engine(state_url)
    try:
        with engine.connect() as connection:
            rows, _ = page_rows(connection, ROUTE, WEEK_AGO)
            other_rows, _ = page_rows(connection, "other-route", WEEK_AGO)
    finally:
        engine.dispose()
    [run] = rows["backfill_runs"]
    assert (run["run_key"], run["topic"], run["target_topic"], run["mode"], run["status"]) == (
        BACKFILL_KEY, TOPIC, REPLICA, "time", "done")
    assert (run["records_written"], run["records_total"], bool(run["overlap_ok"]), run["error"]) == (40, 40, False,
                                                                                                    None)
    assert json.loads(run["ranges"]) == [{"partition": 0, "start": 0, "end": 40, "clamped": True},
                                         {"partition": 1, "start": 0, "end": 0, "clamped": True}]
    assert run["started_at"] == NOW - dt.timedelta(minutes=50) and run["finished_at"].tzinfo is not None
    assert other_rows["backfill_runs"] == []


def test_the_overview_holds_every_routes_states_sla_and_latest_audit(state_url: str) -> None:
    from replicator.ui.page import build_overview
    from replicator.ui.queries import overview_rows

    seed(state_url, NOW)
    engine = make_engine(state_url)
    try:
        with engine.connect() as connection:
            rows = overview_rows(connection)
    finally:
        engine.dispose()
    [row] = build_overview([ROUTE], rows)
    assert row.state == "STUCK 1, LOST_RECORDS 1" and row.held_by_run is None
    assert row.breached == ("lag",) and row.sla_checked and row.lag is not None and row.lag.breached
    assert row.audit is not None and row.audit["status"] == "missing"
    assert build_overview(["other-route"], rows)[0].state == "COPYING"


def test_the_topics_paused_or_failed_over_are_read_with_since_when(state_url: str) -> None:
    from replicator.config import RouteConfig
    from replicator.domain.route_topic import AddedBy, DesiredState
    from replicator.state.repository import register_routes, set_topic

    seed(state_url, NOW)
    route = RouteConfig.model_validate({"name": ROUTE, "source": "primary", "target": "backup", "topics": [TOPIC]})
    with StateStore(state_url) as store:
        store.run(lambda s: register_routes(s, [route]))
        store.run(lambda s: set_topic(s, ROUTE, OTHER, DesiredState.PAUSED, AddedBy.CONFIG))
        store.run(lambda s: set_topic(s, ROUTE, TOPIC, DesiredState.FAILED_OVER, AddedBy.CONFIG))
    engine = make_engine(state_url)
    try:
        with engine.connect() as connection:
            rows, _ = page_rows(connection, ROUTE, WEEK_AGO)
    finally:
        engine.dispose()
    assert [(r["topic"], r["desired_state"]) for r in rows["topics_held"]] == sorted(
        [(OTHER, "paused"), (TOPIC, "failed-over")])
    assert all(isinstance(r["updated_at"], dt.datetime) for r in rows["topics_held"])
