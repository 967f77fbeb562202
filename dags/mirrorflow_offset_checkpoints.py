"""Every minute: each route's consumer-group offsets translated to the target (checkpoints)."""

from __future__ import annotations

import pendulum
from airflow.sdk import Param, dag, task

from replicator.airflow.task_errors import said_in_one_line

DOC = """
### Offset checkpoints
For each route of `mirrorflow.yaml` (`MIRRORFLOW_CONFIG`) whose last checkpoint run is
older than its `checkpoints.interval` (seconds, default 60): reads the committed
offsets of the source's consumer groups (`checkpoints.groups` minus
`checkpoints.exclude_groups`), translates each through the route's offset syncs —
exact when the route has copied up to the group, "at most N may repeat" when it
lags, never skipping — and stores them in the state DB (`mf_checkpoint`) and the
compacted topic `mirrorflow-checkpoints.<route>.internal` on the target. With
`checkpoints.write_target_groups` they are also committed into the target's groups
that have no active members (never moving one backwards).

Trigger by hand with `route` (and `groups`) to run now. A group that cannot be
read or written fails the run, named in the task log. The same without Airflow:
`mirrorflow checkpoint`.
"""


@dag(
    dag_id="mirrorflow_offset_checkpoints",
    schedule="* * * * *",
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    tags=["mirrorflow"],
    description=__doc__,
    doc_md=DOC,
    params={
        "route": Param(None, type=["null", "string"], description="one route, now (default: every due one)"),
        "groups": Param([], type=["null", "array"], description="only these groups (default: the route's filter)"),
    },
)
def mirrorflow_offset_checkpoints() -> None:
    @task
    @said_in_one_line
    def due_routes(params: dict[str, object] | None = None) -> list[str]:
        from replicator.airflow.schedule import chosen_routes
        from replicator.runbooks.checkpoints.run import checkpoint_due

        return chosen_routes(None, (params or {}).get("route"), checkpoint_due)

    @task
    @said_in_one_line
    def checkpoint(route: str, params: dict[str, object] | None = None) -> dict[str, object]:
        from replicator.runbooks.checkpoints.run import checkpoint_route

        groups = list((params or {}).get("groups") or []) or None  # type: ignore[call-overload]
        return checkpoint_route(None, route, groups)

    checkpoint.expand(route=due_routes())


mirrorflow_offset_checkpoints()
