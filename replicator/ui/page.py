"""What the Replication page shows of one route, shaped from query rows (pure).

The rows come from :mod:`replicator.ui.queries` as dicts; nothing here touches a
database, Airflow or HTML, so each rule is a table-driven unit test.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

from replicator.domain.failback import REVERSE_SUFFIX
from replicator.domain.failover import is_application_topic
from replicator.domain.partition_state import PartitionState

Row = Mapping[str, Any]
_LAG = re.compile(r"^lag (\d+) records")
_LAG_NOTE = re.compile(r"^lag \d+ records \((.*)\)$")


@dataclass(frozen=True, slots=True)
class Point:
    """One time bucket of a topic's audits: records on each side, and what was wrong."""

    at: dt.datetime
    source: int
    target: int
    missing: int = 0
    duplicates: int = 0


@dataclass(frozen=True, slots=True)
class Series:
    """A topic's audited buckets, oldest first: the chart of source vs target counts."""

    topic: str
    points: tuple[Point, ...]

    @property
    def missing(self) -> int:
        """Records missing on the target over the whole series."""
        return sum(p.missing for p in self.points)


@dataclass(frozen=True, slots=True)
class LagSeries:
    """A topic's lag (records not yet copied) over time, oldest first, as the SLA DAG measured it."""

    topic: str
    points: tuple[tuple[dt.datetime, int], ...]


def build_lag_series(rows: Iterable[Row]) -> tuple[LagSeries, ...]:
    """The samples of each topic, in topic order (the applications' topics first)."""
    by_topic: dict[str, list[tuple[dt.datetime, int]]] = {}
    for row in rows:
        by_topic.setdefault(str(row["topic"]), []).append((row["at"], int(row["lag"])))
    return tuple(LagSeries(t, tuple(sorted(by_topic[t]))) for t in sorted(by_topic, key=topic_order))


RATE_GAP = dt.timedelta(minutes=5)  # samples further apart than this: no rate between them (the DAG was off)


def build_rates(rows: Iterable[Row]) -> tuple[tuple[dt.datetime, int], ...]:
    """Records copied per second between consecutive SLA samples, at the later one. None across a gap longer than
    RATE_GAP or where the count went back (a topic deleted and created again restarts its offsets)."""
    samples = [(r["at"], int(r["copied"])) for r in rows if r.get("copied") is not None]
    out = []
    for (before, copied_before), (at, copied) in pairwise(samples):
        seconds = (at - before).total_seconds()
        if 0 < seconds <= RATE_GAP.total_seconds() and copied >= copied_before:
            out.append((at, round((copied - copied_before) / seconds)))
    return tuple(out)


def build_latencies(rows: Iterable[Row]) -> tuple[tuple[dt.datetime, int], ...]:
    """The replication latency (ms: the newest heartbeat's age) at each SLA sample that measured it."""
    return tuple((r["at"], int(r["latency_ms"])) for r in rows if r.get("latency_ms") is not None)


@dataclass(frozen=True, slots=True)
class Lag:
    """The route's latest measured lag (records not yet copied), as the SLA check stored it."""

    records: int | None  # None: the check could not measure it (see detail)
    detail: str
    measured_at: dt.datetime
    breached: bool

    @property
    def note(self) -> str:
        """What the check's detail says beyond the count (``limit 1000, largest orders[1]: 1200``), or all of
        it when it could not measure (the page shows the count once, not twice)."""
        match = _LAG_NOTE.match(self.detail)
        return match.group(1) if match else self.detail


@dataclass(frozen=True, slots=True)
class OverviewRow:
    """One route on the overview: held by a failover, partitions in states that need a look, lag, SLA, audit."""

    route: str
    held_by_run: int | None = None
    states: tuple[tuple[str, int], ...] = ()  # (state, partitions; topics for PAUSED) as the state DB knows them
    lag: Lag | None = None
    breached: tuple[str, ...] = ()  # SLA checks breached now
    sla_checked: bool = False
    audit: Row | None = None  # the latest audit run

    @property
    def state(self) -> str:
        """``FAILED_OVER``, the states with counts (``STUCK 2, PAUSED 1 topic``), or ``COPYING``."""
        if self.held_by_run is not None:
            return f"FAILED_OVER (run {self.held_by_run})"
        parts = [f"{name} {n}" + (" topic(s)" if name in ("PAUSED", "FAILED_OVER") else "") for name, n in self.states]
        return ", ".join(parts) or "COPYING"


def build_overview(routes: Sequence[str], rows: Mapping[str, Sequence[Row]]) -> tuple[OverviewRow, ...]:
    """Every listed route's overview row from the overview queries' rows (keyed by query name)."""
    held = {str(r["route"]): int(r["run_id"]) for r in rows.get("overview_held", ())}
    audits = {str(r["route"]): r for r in rows.get("overview_audits", ())}
    states: dict[str, list[tuple[str, int]]] = {}
    order = [s.value for s in PartitionState]
    for r in sorted(rows.get("overview_states", ()), key=lambda r: order.index(str(r["state"]))
                    if str(r["state"]) in order else len(order)):
        states.setdefault(str(r["route"]), []).append((str(r["state"]), int(r["n"])))
    sla: dict[str, list[Row]] = {}
    for r in rows.get("overview_sla", ()):
        sla.setdefault(str(r["route"]), []).append(r)
    return tuple(OverviewRow(
        route, held.get(route), tuple(states.get(route, ())), current_lag(sla.get(route, ())),
        tuple(str(r["check"]) for r in sla.get(route, ()) if r["state"] == "breached"), route in sla,
        audits.get(route)) for route in routes)


@dataclass(frozen=True, slots=True)
class WorkerRow:
    """A running worker of the route and the partitions it placed (``orders[0-3], audit[1]``)."""

    worker: str
    partitions: str
    count: int
    since: dt.datetime | None  # its earliest placement still standing


def compact_partitions(keys: Iterable[tuple[str, int]]) -> str:
    """``orders[0-3,5], audit[1]``: each topic's partitions, runs of consecutive ones as a range."""
    by_topic: dict[str, list[int]] = {}
    for topic, partition in keys:
        by_topic.setdefault(topic, []).append(partition)
    out = []
    for topic in sorted(by_topic, key=topic_order):
        runs: list[list[int]] = []
        for p in sorted(set(by_topic[topic])):
            if runs and p == runs[-1][1] + 1:
                runs[-1][1] = p
            else:
                runs.append([p, p])
        out.append(f"{topic}[{','.join(str(a) if a == b else f'{a}-{b}' for a, b in runs)}]")
    return ", ".join(out)


def build_workers(rows: Iterable[Row]) -> tuple[WorkerRow, ...]:
    """One row per worker from the owner rows (worker, topic, partition, since)."""
    by_worker: dict[str, list[Row]] = {}
    for row in rows:
        by_worker.setdefault(str(row["worker"]), []).append(row)
    return tuple(WorkerRow(w, compact_partitions((str(r["topic"]), int(r["partition"])) for r in rs), len(rs),
                           min((r["since"] for r in rs if r["since"] is not None), default=None))
                 for w, rs in sorted(by_worker.items()))


@dataclass(frozen=True, slots=True)
class SyncView:
    """The route's latest sync run and the changes it made (its diff)."""

    run_id: int
    step: str
    status: str
    started_at: dt.datetime | None
    finished_at: dt.datetime | None
    notes: str | None
    changes: tuple[Row, ...]  # kind, resource, detail (old -> new), outcome, error


def build_sync(rows: Sequence[Row]) -> SyncView | None:
    """The latest sync run from its rows (one per change; one with no change when it changed nothing)."""
    if not rows:
        return None
    first = rows[0]
    return SyncView(int(first["run_id"]), str(first["step"]), str(first["status"]), first["started_at"],
                    first["finished_at"], first["notes"],
                    tuple({k: r[k] for k in ("kind", "resource", "detail", "outcome", "error")} for r in rows
                          if r["kind"] is not None))


@dataclass(frozen=True, slots=True)
class ReplicationPage:
    """Everything the page shows of one route (and optionally one topic)."""

    routes: tuple[str, ...]
    route: str | None
    topic: str | None = None
    overview: tuple[OverviewRow, ...] = ()
    lag_series: tuple[LagSeries, ...] = ()
    topics: tuple[str, ...] = ()
    series: tuple[Series, ...] = ()
    audit_runs: tuple[Row, ...] = ()
    findings: tuple[Row, ...] = ()
    failovers: tuple[Row, ...] = ()
    failbacks: tuple[Row, ...] | None = None  # None: no failback table in this state DB
    backfills: tuple[Row, ...] | None = None  # None: no backfill table in this state DB
    checkpoints: tuple[Row, ...] = ()
    sla_states: tuple[Row, ...] = ()
    sla_events: tuple[Row, ...] = ()
    lag: Lag | None = None
    notes: tuple[str, ...] = field(default=())
    held_by: Row | None = None  # the failover run that holds the route (its workers are refused), if one does
    workers: tuple[WorkerRow, ...] | None = None  # None: no owner table in this state DB
    held_topics: tuple[Row, ...] = ()  # paused by the operator or moved by a per-topic failover
    rates: tuple[tuple[dt.datetime, int], ...] = ()  # records copied per second, over time
    latencies: tuple[tuple[dt.datetime, int], ...] = ()  # replication latency (ms), over time
    last_sync: SyncView | None = None


def listed_routes(names: Iterable[str]) -> list[str]:
    """The routes the page offers: a failback's reverse route (``<route>.failback``) is not one of the
    operator's -- it is measured by nothing, and its copy shows on its route's failback runs."""
    known = list(dict.fromkeys(names))
    return [n for n in known if not (n.endswith(REVERSE_SUFFIX) and n[:-len(REVERSE_SUFFIX)] in known)]


def choose_route(routes: Sequence[str], wanted: str | None) -> str | None:
    """The route asked for when known, else the first one (None when there is none)."""
    if wanted in routes:
        return wanted
    return routes[0] if routes else None


def parse_lag(detail: str) -> int | None:
    """The record count of a lag check's detail (``lag 12 records (limit ...)``), else None."""
    match = _LAG.match(detail)
    return int(match.group(1)) if match else None


def current_lag(sla_states: Iterable[Row]) -> Lag | None:
    """The lag check's latest finding, if the SLA DAG ever measured the route."""
    for row in sla_states:
        if row["check"] == "lag":
            detail = str(row["detail"])
            return Lag(parse_lag(detail), detail, row["checked_at"], row["state"] == "breached")
    return None


def topic_order(topic: str) -> tuple[bool, str]:
    """The applications' topics by name, then MirrorFlow's own (the route's heartbeats)."""
    return (not is_application_topic(topic), topic)


def build_series(rows: Iterable[Row]) -> tuple[Series, ...]:
    """One series per topic, in :func:`topic_order`, each oldest bucket first."""
    points: dict[str, list[Point]] = {}
    for row in rows:
        points.setdefault(str(row["topic"]), []).append(Point(
            row["bucket_start"], int(row["source_count"]), int(row["target_count"]),
            int(row["missing_count"]), int(row["duplicate_count"])))
    return tuple(Series(topic, tuple(sorted(found, key=lambda p: p.at)))
                 for topic, found in sorted(points.items(), key=lambda item: topic_order(item[0])))


def failback_row(row: Row) -> dict[str, Any]:
    """The columns the page shows of a failback run."""
    return {"id": row["id"], "mode": row["mode"], "status": row["status"],
            "stopped_at_step": row["stopped_at_step"], "started_at": row["triggered_at"],
            "finished_at": row["finished_at"], "rto_seconds": row["rto_seconds"], "error": row["error"],
            "copied": row["records_copied"], "unreplicated": row["unreplicated_records"],
            "not_copied": row["not_copied_records"]}


def format_ranges(ranges_json: str) -> str:
    """The planned source offsets of a backfill run, ``0: 0-12, 1: 5-9`` (empty ranges left out)."""
    try:
        ranges = json.loads(ranges_json)
        return ", ".join(f"{r['partition']}: {r['start']}-{r['end']}" for r in ranges if r["end"] > r["start"])
    except (ValueError, TypeError, KeyError):
        return "?"


def backfill_row(row: Row) -> dict[str, Any]:
    """The columns the page shows of a backfill run."""
    return {"run_key": row["run_key"], "topic": row["topic"], "target_topic": row["target_topic"],
            "mode": row["mode"], "status": row["status"], "offsets": format_ranges(row["ranges"]),
            "written": row["records_written"], "total": row["records_total"], "overlap_ok": bool(row["overlap_ok"]),
            "started_at": row["started_at"], "finished_at": row["finished_at"], "error": row["error"]}


def checkpoint_rows(checkpoints: Iterable[Row], lags: Iterable[Row]) -> tuple[Row, ...]:
    """The checkpoints with each group's lag on the source and on the target (if it moved now), where the run
    read the ends (None elsewhere)."""
    ends = {(r["group_id"], r["topic"], r["partition"]): r for r in lags}
    out = []
    for row in checkpoints:
        found = ends.get((row.get("group_id"), row.get("topic"), row.get("partition")), {})
        out.append({**row, "source_lag": _lag(found.get("source_end"), row.get("source_offset")),
                    "target_lag": _lag(found.get("target_end"), row.get("target_offset"))})
    return tuple(out)


def _lag(end: int | None, offset: int | None) -> int | None:
    return None if end is None or offset is None else max(0, end - offset)


def holding_run(failovers: Iterable[Row]) -> Row | None:
    """The newest failover run that stopped the route and was not released: the route is failed over."""
    for row in failovers:  # newest first
        if row.get("route_stopped_at") is not None and row.get("released_at") is None:
            return row
    return None


def _of_topic(rows: Iterable[Row], topic: str | None) -> tuple[Row, ...]:
    return tuple(r for r in rows if topic is None or r["topic"] == topic)


def build_page(routes: Sequence[str], route: str | None, topic: str | None,
               rows: Mapping[str, Sequence[Row]], failbacks: Sequence[Row] | None,
               overview: tuple[OverviewRow, ...] = ()) -> ReplicationPage:
    """The page of ``route`` from the rows of each query (keyed by query name), after the overview of all."""
    series = build_series(rows.get("audit_series", ()))
    checkpoints = rows.get("checkpoints", ())
    topics = tuple(sorted({s.topic for s in series} | {str(r["topic"]) for r in checkpoints}
                          | {str(r["topic"]) for r in rows.get("lag_series", ())}
                          | {str(r["topic"]) for r in rows.get("audit_findings", ())}
                          | {str(r["topic"]) for r in rows.get("backfill_runs", ())}, key=topic_order))
    chosen = topic if topic in topics else None
    return ReplicationPage(
        routes=tuple(routes), route=route, topic=chosen, topics=topics, overview=overview,
        series=tuple(s for s in series if chosen is None or s.topic == chosen),
        lag_series=tuple(s for s in build_lag_series(rows.get("lag_series", ()))
                         if chosen is None or s.topic == chosen),
        audit_runs=tuple(rows.get("audit_runs", ())),
        findings=_of_topic(rows.get("audit_findings", ()), chosen),
        failovers=tuple(rows.get("failover_runs", ())),
        failbacks=None if failbacks is None else tuple(failback_row(r) for r in failbacks),
        backfills=(None if "backfill_runs" not in rows
                   else tuple(backfill_row(r) for r in _of_topic(rows["backfill_runs"], chosen))),
        checkpoints=_of_topic(checkpoint_rows(checkpoints, rows.get("checkpoint_lags", ())), chosen),
        sla_states=tuple(rows.get("sla_states", ())),
        sla_events=tuple(rows.get("sla_events", ())),
        lag=current_lag(rows.get("sla_states", ())),
        held_by=holding_run(rows.get("failover_runs", ())),
        workers=None if "partition_owners" not in rows else build_workers(rows["partition_owners"]),
        last_sync=build_sync(rows.get("sync_last", ())),
        held_topics=tuple(rows.get("topics_held", ())),
        rates=build_rates(rows.get("route_samples", ())),
        latencies=build_latencies(rows.get("route_samples", ())),
    )


def format_time(value: dt.datetime | None) -> str:
    """``2026-11-26 03:00:05Z`` (UTC), or an empty string."""
    if value is None:
        return ""
    aware = value if value.tzinfo else value.replace(tzinfo=dt.UTC)
    return aware.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M:%SZ")


def format_seconds(value: float | None) -> str:
    """``42.0 s``, ``3 min 20 s``, or an empty string."""
    if value is None:
        return ""
    if value < 60:
        return f"{value:.1f} s"
    minutes, seconds = divmod(round(value), 60)
    return f"{minutes} min {seconds} s"
