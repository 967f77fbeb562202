"""Every minute, for each route whose discovery is due: new source topics get their replicas."""

from __future__ import annotations

import pendulum
from airflow.sdk import Param, dag, task

from replicator.airflow.task_errors import said_in_one_line

DOC = """
### Topic discovery
For each route of `mirrorflow.yaml` (`MIRRORFLOW_CONFIG`) whose last discovery is
older than its `sync.discovery_interval` (minutes, default 5): finds the source
topics its filters select, registers them in the state DB (running workers pick
them up), creates missing target topics with the source's partition count and
configs, and adds partitions on the target where the source grew. Target topics
are deleted only when the route sets `sync.delete_topics: true`.

A topic that fails (no permission, a config value the target refuses) is named in
the task log; the others are still done, and the run ends failed.
Trigger by hand with `route` to run one route now, whatever its interval.
"""


@dag(
    dag_id="mirrorflow_topic_discovery",
    schedule="* * * * *",
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    tags=["mirrorflow"],
    description=__doc__,
    doc_md=DOC,
    params={"route": Param(None, type=["null", "string"], description="one route, now (default: every due one)")},
)
def mirrorflow_topic_discovery() -> None:
    @task
    @said_in_one_line
    def due_routes(params: dict[str, object] | None = None) -> list[str]:
        from replicator.airflow.schedule import chosen_routes
        from replicator.runbooks.sync.run import discovery_due

        return chosen_routes(None, (params or {}).get("route"), discovery_due)

    @task
    @said_in_one_line
    def discover(route: str) -> dict[str, object]:
        from replicator.runbooks.sync.run import discover_topics

        return discover_topics(None, route)

    discover.expand(route=due_routes())


mirrorflow_topic_discovery()
