"""By hand: bring a failed-over route's applications back to its old primary, one task per step."""

from __future__ import annotations

import pendulum
from airflow.sdk import Param, dag, task

DOC = """
### Failback
After `mirrorflow_failover` moved a route's applications to its target, and once
the old primary (the route's source) is back: copy back what was written on the
target and move the consumer groups home (`mirrorflow.yaml` from
`MIRRORFLOW_CONFIG`). Trigger by hand with `route`; each task is one step:

1. `check`: both clusters answer, a failover holds the route, none of its workers
   runs; the replicas to copy back; records of the old primary never copied.
2. `prepare`: `incremental` (default): a reverse route (target -> old primary)
   starts right after the last record the route copied. `resync`: the old
   primary's topics are deleted (refused when records there never reached the
   target, unless `accept_loss`); the reverse route creates them again.
3. `reverse_copy`: the reverse route copies up to the replicas' ends.
4. `drain`: stop the producers on the target; copies until nothing is left (up to
   `drain_timeout` s).
5. `translate`: each group's position on the target, translated to the old primary.
6. `commit_offsets` and 7. `verify`: into the old primary's idle groups, read back.
8. `release`: the route may run again (`mirrorflow run`).
9. `finish`: figures stored in `mf_failback_run`, next steps in the log.

A run that failed midway resumes at the failed step when triggered again with the
same params. `dry_run` shows every step and changes nothing. The same without
Airflow: `mirrorflow failback --route R`.
"""

STEPS = ["check", "prepare", "reverse-copy", "drain", "translate", "commit-offsets", "verify", "release", "finish"]


@dag(
    dag_id="mirrorflow_failback",
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    tags=["mirrorflow"],
    doc_md=DOC,
    params={
        "route": Param("", type="string", description="the failed-over route to bring back"),
        "mode": Param("incremental", enum=["incremental", "resync"], description="incremental or resync"),
        "groups": Param([], type="array", description="only these groups (default: the route's group filter)"),
        "drain_timeout": Param(60, type="integer", minimum=0, description="seconds to copy the last records"),
        "accept_loss": Param(False, type="boolean", description="resync: drop records never copied"),
        "dry_run": Param(False, type="boolean", description="show every step, change nothing"),
    },
)
def mirrorflow_failback() -> None:
    @task
    def start(params: dict[str, object] | None = None) -> dict[str, object]:
        from replicator.runbooks.failback.run import start_run

        p = params or {}
        return start_run(None, str(p.get("route") or ""), str(p.get("mode") or "incremental"),
                         list(p.get("groups") or []) or None,  # type: ignore[call-overload]
                         int(p.get("drain_timeout") or 0), bool(p.get("accept_loss")),  # type: ignore[call-overload]
                         bool(p.get("dry_run")))

    def step_task(step: str):  # type: ignore[no-untyped-def]
        @task(task_id=step.replace("-", "_"))
        def run_step(run: dict[str, object]) -> dict[str, object]:
            from replicator.runbooks.failback.run import step_of_run

            done = step_of_run(None, step, run)
            if step == "finish":
                print(done["next_steps"])  # the task log ends with what the applications do next
            return done

        return run_step

    run = start()
    for step in STEPS:
        run = step_task(step)(run)


mirrorflow_failback()
