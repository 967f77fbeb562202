"""Run the reporting queries of ``sql/queries/`` on the state DB.

Each ``<name>.sql`` file holds one portable ``SELECT`` with named parameters. Its
date-time columns are typed as the models declare them (SQLite hands them back as
text otherwise), so every row comes back as a plain dict of Python values.
"""

from __future__ import annotations

import datetime as dt
import re
from functools import cache
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, DateTime, bindparam, inspect, text
from sqlalchemy.sql.selectable import TextualSelect
from sqlalchemy.types import TypeEngine

from replicator.paths import SQL_DIR
from replicator.state.models import Base

QUERIES_DIR = SQL_DIR / "queries"
FAILBACK_TABLE = "mf_failback_run"  # optional: a later migration adds it
BACKFILL_TABLE = "mf_backfill_run"  # optional too (migration 0009)
LAG_TABLE = "mf_lag_sample"  # optional too (migration 0013)
OWNER_TABLE = "mf_partition_owner"  # optional too (migration 0015)
SAMPLE_TABLE = "mf_route_sample"  # optional too (migration 0017)
TIME_PARAMS = ("since",)  # parameters bound as date-times, like the columns they are compared with

Row = dict[str, Any]


def _datetime_columns() -> dict[str, TypeEngine[Any]]:
    return {column.name: column.type for table in Base.metadata.sorted_tables
            for column in table.columns if isinstance(column.type, DateTime)}


def query_names(folder: Path = QUERIES_DIR) -> list[str]:
    """The names of the shipped queries (``routes``, ``audit_series``, ...)."""
    return sorted(path.stem for path in folder.glob("*.sql"))


@cache
def load_query(name: str, folder: Path = QUERIES_DIR) -> TextualSelect:
    """The query ``<name>.sql``, its date-time columns typed; KeyError for an unknown name."""
    path = folder / f"{name}.sql"
    if not path.is_file():
        raise KeyError(f"no query {name!r} in {folder}")
    # Whole-line comments go: a ":word" in one would read as a parameter.
    sql = "\n".join(line for line in path.read_text().splitlines() if not line.lstrip().startswith("--"))
    clause = text(sql)
    times = [bindparam(p, type_=DateTime(timezone=True)) for p in TIME_PARAMS if re.search(rf":{p}\b", sql)]
    return clause.bindparams(*times).columns(**_datetime_columns())


def run_query(connection: Connection, name: str, **params: Any) -> list[Row]:
    """Every row of query ``name`` as a dict (date-times in UTC)."""
    result = connection.execute(load_query(name), params)
    return [{key: _utc(value) for key, value in row.items()} for row in result.mappings()]


def has_table(connection: Connection, table: str) -> bool:
    """True when ``table`` exists in the state DB."""
    return inspect(connection).has_table(table)


def has_column(connection: Connection, table: str, column: str) -> bool:
    """True when ``table`` exists with ``column`` (a state DB not yet migrated to where it was added: False)."""
    inspector = inspect(connection)
    return inspector.has_table(table) and column in {c["name"] for c in inspector.get_columns(table)}


def _utc(value: Any) -> Any:
    # SQLite hands timezone-aware columns back naive; they were written in UTC.
    if isinstance(value, dt.datetime) and value.tzinfo is None:
        return value.replace(tzinfo=dt.UTC)
    return value


ROUTE_QUERIES = ("audit_series", "audit_runs", "audit_findings", "failover_runs", "checkpoints",
                 "sla_states", "sla_events", "sync_last", "topics_held")
LIMITS = {"audit_series": 20000, "audit_runs": 20, "audit_findings": 200, "failover_runs": 20,
          "failback_runs": 20, "backfill_runs": 20, "checkpoints": 500, "sla_events": 50,
          "lag_series": 50000,  # a week of one sample a minute for five topics
          "partition_owners": 20000, "sync_last": 1000}


def page_rows(connection: Connection, route: str, since: dt.datetime) -> tuple[dict[str, list[Row]], list[Row] | None]:
    """The rows of every query of one route's page, and its failback runs (None: no such table);
    ``backfill_runs`` is among the rows only where its table exists."""
    rows = {name: run_query(connection, name, route=route, since=since, limit=LIMITS.get(name, 100))
            for name in ROUTE_QUERIES}
    if has_table(connection, BACKFILL_TABLE):
        rows["backfill_runs"] = run_query(connection, "backfill_runs", route=route, limit=LIMITS["backfill_runs"])
    if has_table(connection, LAG_TABLE):
        rows["lag_series"] = run_query(connection, "lag_series", route=route, since=since,
                                       limit=LIMITS["lag_series"])
    if has_column(connection, "mf_checkpoint", "target_end"):
        rows["checkpoint_lags"] = run_query(connection, "checkpoint_lags", route=route, limit=LIMITS["checkpoints"])
    if has_table(connection, SAMPLE_TABLE):
        rows["route_samples"] = run_query(connection, "route_samples", route=route, since=since,
                                          limit=LIMITS["lag_series"])
    if has_table(connection, OWNER_TABLE):
        rows["partition_owners"] = run_query(connection, "partition_owners", route=route,
                                             limit=LIMITS["partition_owners"])
    failbacks = None
    if has_table(connection, FAILBACK_TABLE):
        failbacks = run_query(connection, "failback_runs", route=route, limit=LIMITS["failback_runs"])
    return rows, failbacks


OVERVIEW_QUERIES = ("overview_sla", "overview_audits", "overview_held")
PARTITION_STATE_TABLE = "mf_partition_state"  # optional too (migration 0012)


def overview_rows(connection: Connection) -> dict[str, list[Row]]:
    """The rows of the overview of every route (``overview_states`` only where its table exists)."""
    rows = {name: run_query(connection, name) for name in OVERVIEW_QUERIES}
    if has_table(connection, PARTITION_STATE_TABLE):
        rows["overview_states"] = run_query(connection, "overview_states")
    return rows
