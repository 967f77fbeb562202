"""The Replication page's shaping, chart and HTML (pure): table-driven over the public functions."""

from __future__ import annotations

import datetime as dt
import re

import pytest

from replicator.ui.chart import runs_of_buckets, svg_chart
from replicator.ui.page import (
    Lag,
    Point,
    ReplicationPage,
    Series,
    backfill_row,
    build_latencies,
    build_page,
    build_rates,
    build_series,
    build_sync,
    build_workers,
    choose_route,
    compact_partitions,
    current_lag,
    failback_row,
    format_ranges,
    format_seconds,
    format_time,
    listed_routes,
    parse_lag,
)
from replicator.ui.render import render_error, render_page

T0 = dt.datetime(2026, 11, 26, 2, 0, tzinfo=dt.UTC)
MINUTE = dt.timedelta(minutes=1)


def _bucket(topic: str, at: dt.datetime, source: int, target: int, missing: int = 0) -> dict[str, object]:
    return {"topic": topic, "bucket_start": at, "source_count": source, "target_count": target,
            "missing_count": missing, "duplicate_count": 0}


@pytest.mark.parametrize(("detail", "records"), [
    ("lag 1234 records (limit 1000, largest orders[1]: 1200)", 1234),
    ("lag 0 records (limit 100000)", 0),
    ("cannot measure lag: cluster 'primary' unreachable", None),
    ("", None),
])
def test_parse_lag_reads_the_count_of_the_lag_check(detail: str, records: int | None) -> None:
    assert parse_lag(detail) == records


def test_current_lag_is_the_lag_check_of_the_sla_states() -> None:
    states = [{"check": "heartbeat", "state": "ok", "detail": "heartbeat age 1 s", "checked_at": T0},
              {"check": "lag", "state": "breached", "detail": "lag 7 records (limit 5)", "checked_at": T0}]
    assert current_lag(states) == Lag(7, "lag 7 records (limit 5)", T0, True)
    assert current_lag(states[:1]) is None


@pytest.mark.parametrize(("routes", "wanted", "chosen"), [
    (["a", "b"], "b", "b"), (["a", "b"], "nope", "a"), (["a", "b"], None, "a"), ([], "a", None),
])
def test_choose_route(routes: list[str], wanted: str | None, chosen: str | None) -> None:
    assert choose_route(routes, wanted) == chosen


def test_a_failbacks_reverse_route_is_not_offered_as_a_route_of_its_own() -> None:
    assert listed_routes(["orders", "orders.failback", "payments", "lone.failback"]) == [
        "orders", "payments", "lone.failback"]  # one whose route is not known stays: it is all there is of it


def test_the_lag_is_said_once_with_what_the_check_adds() -> None:
    measured = Lag(1234, "lag 1234 records (limit 1000, largest orders[1]: 1200)", T0, True)
    assert measured.note == "limit 1000, largest orders[1]: 1200"
    unknown = Lag(None, "cannot measure lag: cluster 'primary' unreachable", T0, True)
    assert unknown.note == "cannot measure lag: cluster 'primary' unreachable"
    html = render_page(build_page(["r"], "r", None, {"sla_states": [
        {"check": "lag", "state": "breached", "detail": measured.detail, "since": T0, "checked_at": T0}]}, None))
    box = html[html.index('<section id="lag">'):]
    box = box[:box.index("</section>")]
    assert box.count("1234") == 1 and "limit 1000" in box  # the count once (it was said twice)


def test_a_failed_over_route_says_so_at_the_top_until_released() -> None:
    """#15: after a failover nothing on the page said the route was failed over."""
    held = {"id": 4, "target_cluster": "backup", "status": "done", "route_stopped_at": T0, "released_at": None,
            "mode": "checkpoint", "stopped_at_step": None, "rpo_records": 0, "rpo_basis": "measured",
            "rto_seconds": 9.5, "triggered_at": T0, "finished_at": T0}
    old = {**held, "id": 2, "released_at": T0}
    page = build_page(["r"], "r", None, {"failover_runs": [held, old]}, None)
    assert page.held_by == held
    html = render_page(page)
    assert 'id="failed-over"' in html and "failed over to\nbackup (failover run 4" in html
    assert "mirrorflow failover --route r --release" in html
    released = build_page(["r"], "r", None, {"failover_runs": [{**held, "released_at": T0}, old]}, None)
    assert released.held_by is None and 'id="failed-over"' not in render_page(released)
    never_stopped = build_page(["r"], "r", None, {"failover_runs": [{**held, "route_stopped_at": None}]}, None)
    assert never_stopped.held_by is None  # a dry run, or one that failed before stopping the route


def test_series_are_per_topic_oldest_bucket_first() -> None:
    rows = [_bucket("orders", T0 + MINUTE, 5, 3, 2), _bucket("mirrorflow-heartbeats.r", T0, 60, 60),
            _bucket("audit", T0, 1, 1), _bucket("orders", T0, 4, 4)]
    [audit, orders, heartbeats] = build_series(rows)  # the route's own heartbeats after the applications'
    assert heartbeats.topic == "mirrorflow-heartbeats.r"
    page = build_page(["r"], "r", None, {"audit_series": rows}, None)
    assert page.topics == ("audit", "orders", "mirrorflow-heartbeats.r")
    assert audit == Series("audit", (Point(T0, 1, 1),))
    assert orders.topic == "orders" and [p.at for p in orders.points] == [T0, T0 + MINUTE]
    assert orders.missing == 2


def test_a_topic_filter_keeps_that_topic_and_an_unknown_topic_shows_all() -> None:
    rows = {"audit_series": [_bucket("orders", T0, 1, 1), _bucket("pay", T0, 2, 2)],
            "audit_findings": [{"topic": "orders", "status": "missing"}, {"topic": "pay", "status": "extra"}],
            "checkpoints": [{"topic": "pay", "partition": 0}]}
    page = build_page(["r"], "r", "pay", rows, None)
    assert (page.topic, page.topics) == ("pay", ("orders", "pay"))
    assert [s.topic for s in page.series] == ["pay"] and [f["topic"] for f in page.findings] == ["pay"]
    assert page.failbacks is None
    everything = build_page(["r"], "r", "nope", rows, [])
    assert everything.topic is None and len(everything.findings) == 2 and everything.failbacks == ()


def test_failback_rows_show_their_figures_not_the_stored_run() -> None:
    row = {"id": 3, "route": "r", "mode": "incremental", "status": "done", "stopped_at_step": None,
           "triggered_at": T0, "finished_at": T0 + MINUTE, "rto_seconds": 61.0, "error": None, "records_copied": 12,
           "unreplicated_records": 2, "not_copied_records": 0, "run_json": "{...}"}
    shown = failback_row(row)
    assert shown["started_at"] == T0 and shown["error"] is None and "run_json" not in shown
    assert (shown["copied"], shown["unreplicated"], shown["not_copied"]) == (12, 2, 0)


def _backfill(topic: str, status: str = "done") -> dict[str, object]:
    return {"id": 1, "run_key": f"k-{topic}", "topic": topic, "target_topic": f"primary.{topic}", "mode": "offsets",
            "ranges": '[{"partition": 0, "start": 0, "end": 12, "clamped": false},'
                      ' {"partition": 1, "start": 5, "end": 5, "clamped": true}]',
            "status": status, "records_written": 12, "records_total": 12, "overlap_ok": 1, "started_at": T0,
            "finished_at": T0 + MINUTE, "error": None}


@pytest.mark.parametrize(("ranges", "text"), [
    ('[{"partition": 0, "start": 0, "end": 12}, {"partition": 1, "start": 5, "end": 9}]', "0: 0-12, 1: 5-9"),
    ('[{"partition": 0, "start": 3, "end": 3}]', ""),  # nothing planned there
    ("not json", "?"),
])
def test_format_ranges_lists_the_planned_offsets(ranges: str, text: str) -> None:
    assert format_ranges(ranges) == text


def test_backfill_rows_show_their_offsets_and_figures_per_topic() -> None:
    shown = backfill_row(_backfill("orders"))
    assert (shown["run_key"], shown["offsets"], shown["written"], shown["total"]) == ("k-orders", "0: 0-12", 12, 12)
    assert shown["overlap_ok"] is True and "ranges" not in shown
    rows = {"backfill_runs": [_backfill("orders"), _backfill("pay", "running")]}
    assert [b["topic"] for b in build_page(["r"], "r", "pay", rows, None).backfills or ()] == ["pay"]
    assert build_page(["r"], "r", None, rows, None).topics == ("orders", "pay")
    assert build_page(["r"], "r", None, {}, None).backfills is None  # no backfill table in this state DB
    html = render_page(build_page(["r"], "r", None, rows, None))
    assert 'id="backfills"' in html and "k-orders" in html and "0: 0-12" in html and 'class="running"' in html
    assert "<h2>Backfills</h2>" not in render_page(build_page(["r"], "r", None, {}, None))


@pytest.mark.parametrize(("value", "text"), [
    (T0, "2026-11-26 02:00:00Z"), (T0.replace(tzinfo=None), "2026-11-26 02:00:00Z"),
    (T0.astimezone(dt.timezone(dt.timedelta(hours=2))), "2026-11-26 02:00:00Z"), (None, ""),
])
def test_format_time_is_utc(value: dt.datetime | None, text: str) -> None:
    assert format_time(value) == text


@pytest.mark.parametrize(("seconds", "text"), [(None, ""), (4.25, "4.2 s"), (61.0, "1 min 1 s"), (200, "3 min 20 s")])
def test_format_seconds(seconds: float | None, text: str) -> None:
    assert format_seconds(seconds) == text


def test_the_chart_draws_both_sides_marks_missing_buckets_and_escapes_the_topic() -> None:
    svg = svg_chart(Series("<b>&x", (Point(T0, 10, 10), Point(T0 + MINUTE, 12, 9, 3))))
    assert svg.startswith("<svg") and svg.endswith("</svg>")
    assert 'class="source"' in svg and 'class="target"' in svg and svg.count('class="missing"') == 1
    assert "<b>" not in svg and "&lt;b&gt;&amp;x" in svg
    assert "<polyline" not in svg_chart(Series("empty", ()))
    many = svg_chart(Series("t", tuple(Point(T0 + i * MINUTE, i, i) for i in range(1440))))
    assert "<circle" not in many and many.count("<polyline") == 2


def test_a_gap_in_the_audits_is_no_line_and_equal_counts_keep_both_lines_visible() -> None:
    hours = [0, 1, 2, 6, 7]  # nothing audited from 3 to 5
    svg = svg_chart(Series("t", tuple(Point(T0 + h * 60 * MINUTE, 10, 10) for h in hours)))
    assert svg.count('class="source"') == 2 and svg.count('class="target"') == 2  # two runs of buckets each
    widths = dict(re.findall(r'class="(source|target)" fill="none" stroke="[^"]+" stroke-width="(\d+)"', svg))
    assert int(widths["source"]) > int(widths["target"])  # drawn under it, wider: equal counts show both
    assert runs_of_buckets([0.0, 60.0, 120.0, 360.0, 420.0]) == [range(0, 3), range(3, 5)]
    assert runs_of_buckets([0.0]) == [range(0, 1)] and runs_of_buckets([]) == [range(0, 0)]


def test_one_bucket_says_what_it_is() -> None:
    svg = svg_chart(Series("t", (Point(T0, 12, 9, 3),)))
    assert "<polyline" not in svg and "one bucket: source 12, target 9" in svg


def test_the_page_escapes_what_the_database_holds() -> None:
    evil = "<script>alert(1)</script>"
    page = ReplicationPage(routes=(evil,), route=evil, findings=({
        "run_key": evil, "topic": evil, "target_topic": "t", "partition": 0, "bucket_start": T0,
        "status": "missing", "source_count": 3, "target_count": 1, "missing_offsets": "5-6",
        "duplicate_offsets": None, "extra_offsets": None},))
    html = render_page(page)
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert "5-6" in html and "route=%3Cscript%3E" in html
    assert "<script>" not in render_error(evil)


def test_a_page_without_routes_says_what_to_run() -> None:
    html = render_page(ReplicationPage(routes=(), route=None))
    assert "mirrorflow db upgrade" in html and "<table" not in html


def test_the_shaping_and_drawing_modules_import_no_database_or_airflow() -> None:
    import ast
    from pathlib import Path

    folder = Path(__file__).resolve().parents[3] / "replicator" / "ui"
    for name in ("page.py", "chart.py", "render.py"):
        tree = ast.parse((folder / name).read_text())
        imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        imported |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        assert not {m for m in imported if m.split(".")[0] in ("sqlalchemy", "airflow", "fastapi")}, name


def test_the_overview_says_failed_over_first_then_the_states_in_their_order() -> None:
    from replicator.ui.page import OverviewRow, build_overview

    rows = {"overview_held": [{"route": "b", "run_id": 7}],
            "overview_states": [{"route": "a", "state": "PAUSED", "n": 1}, {"route": "a", "state": "STUCK", "n": 2},
                                {"route": "b", "state": "FAULTED", "n": 1}],
            "overview_sla": [{"route": "a", "check": "lag", "state": "ok", "detail": "lag 3 records (limit 10)",
                              "checked_at": T0}]}
    a, b, c = build_overview(["a", "b", "c"], rows)
    assert a.state == "PAUSED 1 topic(s), STUCK 2" and a.sla_checked and a.lag is not None and a.lag.records == 3
    assert b.state == "FAILED_OVER (run 7)" and not b.sla_checked
    assert c == OverviewRow("c") and c.state == "COPYING"



def test_a_topics_lag_over_time_is_one_escaped_line_broken_where_nothing_was_measured() -> None:
    from replicator.ui.chart import svg_lag_chart
    from replicator.ui.page import LagSeries, build_lag_series

    minute = dt.timedelta(minutes=1)
    rows = [{"topic": "<b>", "at": T0 + i * minute, "lag": n} for i, n in ((0, 5), (1, 9), (2, 3), (30, 4), (31, 0))]
    [series] = build_lag_series(rows)
    svg = svg_lag_chart(series)
    assert "&lt;b&gt;: lag over time" in svg and "<b>" not in svg
    assert svg.count("<polyline") == 2  # no line across the 28 minutes nobody measured
    lone = svg_lag_chart(LagSeries("orders", ((T0, 12),)))
    assert "one measure: 12 records" in lone


@pytest.mark.parametrize(("keys", "text"), [
    ([], ""),
    ([("orders", 3), ("orders", 0), ("orders", 1), ("orders", 5), ("orders", 6)], "orders[0-1,3,5-6]"),
    ([("mirrorflow-heartbeats.r", 0), ("audit", 2), ("orders", 0)], "audit[2], orders[0], mirrorflow-heartbeats.r[0]"),
])
def test_a_workers_partitions_are_compact_per_topic(keys: list[tuple[str, int]], text: str) -> None:
    assert compact_partitions(keys) == text


def test_workers_and_the_latest_sync_from_their_rows() -> None:
    workers = build_workers([{"worker": "b", "topic": "t", "partition": 1, "since": T0 + MINUTE},
                             {"worker": "a", "topic": "t", "partition": 0, "since": T0 + MINUTE},
                             {"worker": "a", "topic": "t", "partition": 2, "since": T0}])
    assert [(w.worker, w.partitions, w.count, w.since) for w in workers] == [
        ("a", "t[0,2]", 2, T0), ("b", "t[1]", 1, T0 + MINUTE)]
    nothing = build_sync([{"run_id": 4, "step": "full", "status": "ok", "started_at": T0, "finished_at": T0,
                           "notes": None, "kind": None, "resource": None, "detail": None, "outcome": None,
                           "error": None}])
    assert nothing is not None and nothing.changes == () and build_sync([]) is None
    html = render_page(ReplicationPage(routes=("r",), route="r", workers=(), last_sync=nothing))
    assert "No worker of this route is running" in html and "It changed nothing" in html
    assert "None: the route copies every topic it selects" in html


def test_held_topics_are_listed_with_the_dag_that_pauses_and_resumes() -> None:
    page = build_page(["r"], "r", None, {"topics_held": [
        {"topic": "audit", "desired_state": "failed-over", "updated_at": T0},
        {"topic": "orders", "desired_state": "paused", "updated_at": T0 + MINUTE}]}, None)
    html = render_page(page)
    assert "<td>audit</td><td class=\"failed\">FAILED_OVER</td>" in html
    assert "<td>orders</td><td class=\"failed\">PAUSED</td><td>2026-11-26 02:01:00Z</td>" in html
    assert 'href="/dags/mirrorflow_topic_pause"' in html


def test_records_per_second_between_samples_none_across_a_gap_or_a_count_that_went_back() -> None:
    rows = [{"at": T0, "copied": 100, "latency_ms": 1200}, {"at": T0 + MINUTE, "copied": 700, "latency_ms": None},
            {"at": T0 + 2 * MINUTE, "copied": 10, "latency_ms": 800},  # a topic created again: count went back
            {"at": T0 + 3 * MINUTE, "copied": 70, "latency_ms": 900},
            {"at": T0 + 20 * MINUTE, "copied": 9999, "latency_ms": 300},  # the DAG was off: no rate across
            {"at": T0 + 21 * MINUTE, "copied": None, "latency_ms": None}]
    assert build_rates(rows) == ((T0 + MINUTE, 10), (T0 + 3 * MINUTE, 1))
    assert build_latencies(rows) == ((T0, 1200), (T0 + 2 * MINUTE, 800), (T0 + 3 * MINUTE, 900),
                                     (T0 + 20 * MINUTE, 300))
    html = render_page(build_page(["r"], "r", None, {"route_samples": rows}, None))
    assert "r: records copied per second over time" in html and "replication latency over time" in html
