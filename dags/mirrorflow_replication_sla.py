"""Every minute: each route's SLA (heartbeat, lag, audit, stuck partitions); red while breached, alerts once."""

from __future__ import annotations

import pendulum
from airflow.sdk import Param, dag, task

from replicator.airflow.task_errors import said_in_one_line

DOC = """
### Replication SLA
For each route of `mirrorflow.yaml` (`MIRRORFLOW_CONFIG`), checks against the route's
`sla:` limits:
- **heartbeat**: age of the newest heartbeat the route's workers wrote to the source's
  `mirrorflow-heartbeats.<route>`, read from its replica on the target
  (`<source>.mirrorflow-heartbeats.<route>` under `prefix`): end-to-end latency as a
  user sees it (`sla.heartbeat_age`, default 30 s);
- **lag**: records on the source not yet copied (`sla.max_lag`, default 100000);
- **audit**: the route's latest audit found no missing record (`sla.audit_must_be_clean`).

- **stuck**: no partition of the route is stuck (its workers found it unfetched while
  the source had records past it: `routes[].stuck_after`).

A check that cannot be measured counts as breached. While a check is breached, the
route's `check` task fails: the run is red and Airflow's own failure alerting (callbacks,
email) sees it, on every run while it lasts. The notifiers alert each breach once, and its
recovery once, whatever the number of runs in between (state in the state DB:
`mf_sla_state`, history in `mf_sla_event`). Alerts go to the task log and, when
`sla.webhook` is set, as JSON to that URL. An alert that could not be sent fails the
task and is sent again by the next run. Trigger with `route` to check one route now.
"""


@dag(
    dag_id="mirrorflow_replication_sla",
    schedule="* * * * *",
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    tags=["mirrorflow"],
    description=__doc__,
    doc_md=DOC,
    params={"route": Param(None, type=["null", "string"], description="one route (default: every route)")},
)
def mirrorflow_replication_sla() -> None:
    @task
    @said_in_one_line
    def routes(params: dict[str, object] | None = None) -> list[str]:
        from replicator.airflow.schedule import chosen_routes

        return chosen_routes(None, (params or {}).get("route"))

    @task
    @said_in_one_line
    def check(route: str) -> dict[str, object]:
        from airflow.sdk import get_current_context

        from replicator.runbooks.sla.run import check_route, fail_if_breached

        return fail_if_breached(check_route(None, route, context=get_current_context()))

    check.expand(route=routes())


mirrorflow_replication_sla()
