"""Every 10 minutes: each route's topic configs and ACLs on the target follow the source."""

from __future__ import annotations

import pendulum
from airflow.sdk import Param, dag, task

from replicator.airflow.task_errors import said_in_one_line

DOC = """
### Metadata sync
For each route of `mirrorflow.yaml` (`MIRRORFLOW_CONFIG`): topic configs (MirrorMaker 2's
exclusions plus the route's `sync.exclude_configs` are never copied) and ACLs (topic
ACLs mapped through the naming policy, group ACLs, principals mapped by
`sync.principals`; WRITE is not granted on replicas unless `sync.grant_write`).

`plan` logs the diff as a table; `apply` applies it and stores the run and every
change in the state DB (`mf_sync_run`, `mf_sync_change`). With `dry_run` the
run only plans. A failing topic is named in the `apply` log, the rest is still
applied, and the run ends failed. The same without Airflow: `mirrorflow sync`.
"""


@dag(
    dag_id="mirrorflow_metadata_sync",
    schedule="*/10 * * * *",
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    tags=["mirrorflow"],
    description=__doc__,
    doc_md=DOC,
    params={
        "route": Param(None, type=["null", "string"], description="one route (default: all)"),
        "dry_run": Param(False, type=["null", "boolean"], description="plan only, change nothing"),
    },
)
def mirrorflow_metadata_sync() -> None:
    @task
    @said_in_one_line
    def routes(params: dict[str, object] | None = None) -> list[str]:
        from replicator.airflow.schedule import chosen_routes

        return chosen_routes(None, (params or {}).get("route"))

    @task
    @said_in_one_line
    def plan(route: str) -> dict[str, object]:
        from replicator.runbooks.sync.run import plan_report

        return plan_report(None, route, "metadata")

    @task
    @said_in_one_line
    def apply(report: dict[str, object], params: dict[str, object] | None = None) -> dict[str, object]:
        from replicator.runbooks.sync.run import sync_metadata

        if (params or {}).get("dry_run") or (not report["actions"] and not report["unreadable"]):
            return {**report, "applied": False}
        return {**sync_metadata(None, str(report["route"])), "applied": True}

    apply.expand(report=plan.expand(route=routes()))


mirrorflow_metadata_sync()
