"""By hand: fail a route over to its target cluster, one task per step of the runbook."""

from __future__ import annotations

import pendulum
from airflow.sdk import Param, dag, task

DOC = """
### Failover
Moves the consumer groups of a route's source cluster to its target
(`mirrorflow.yaml` from `MIRRORFLOW_CONFIG`). Trigger by hand with `route`; each
task is one step and logs what it decided:

1. `check_source`: reachable → the route may drain; unreachable → go on without it
   (the RPO is then known from the last checkpoint).
2. `drain`: wait until nothing is left to copy, up to `drain_timeout` seconds.
3. `stop_route`: mark the route failed over (`mirrorflow run` refuses it from then
   on) and wait until its workers left group `mirrorflow-<route>`; if they do not,
   the task fails saying to stop them.
4. `final_checkpoint`: mode `checkpoint` (default): a last checkpoint (or the stored
   ones when the source is down); mode `timestamp` (groups never checkpointed):
   offsets-for-times at `at` minus `margin` on each replica partition.
5. `commit_offsets`: into the target's groups that have no active member, never
   moving one backwards (a group with members is reported, never overwritten).
6. `verify`: the committed offsets read back.
7. `finish`: RPO, RTO (trigger to done) and what the applications do next, stored in
   the state DB (`mf_failover_run`, `mf_failover_step`, `mf_failover_offset`).

A run that failed midway resumes at the failed step when triggered again with the
same params. `dry_run` shows every step and changes nothing. The same without
Airflow: `mirrorflow failover --route R`.
"""


@dag(
    dag_id="mirrorflow_failover",
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    tags=["mirrorflow"],
    doc_md=DOC,
    params={
        "route": Param("", type="string", description="the route to fail over"),
        "groups": Param([], type="array", description="only these groups (default: every checkpointed group)"),
        "mode": Param("checkpoint", enum=["checkpoint", "timestamp"], description="checkpoint or timestamp"),
        "at": Param(None, type=["null", "string"], description="mode timestamp: ISO instant consumed up to"),
        "margin": Param("60s", type="string", description="mode timestamp: resume this much before `at`"),
        "drain_timeout": Param(60, type="integer", minimum=0, description="seconds to wait for the lag to drain"),
        "dry_run": Param(False, type="boolean", description="show every step, change nothing"),
    },
)
def mirrorflow_failover() -> None:
    @task
    def start(params: dict[str, object] | None = None) -> dict[str, object]:
        from replicator.runbooks.failover.run import start_run

        p = params or {}
        return start_run(None, str(p.get("route") or ""), list(p.get("groups") or []) or None,  # type: ignore[call-overload]
                         str(p.get("mode") or "checkpoint"), str(p["at"]) if p.get("at") else None,
                         str(p.get("margin") or "60s"), int(p.get("drain_timeout") or 0),  # type: ignore[call-overload]
                         bool(p.get("dry_run")))

    @task
    def check_source(run: dict[str, object]) -> dict[str, object]:
        from replicator.runbooks.failover.run import step_of_run

        return step_of_run(None, "check-source", run)

    @task
    def drain(run: dict[str, object]) -> dict[str, object]:
        from replicator.runbooks.failover.run import step_of_run

        return step_of_run(None, "drain", run)

    @task
    def stop_route(run: dict[str, object]) -> dict[str, object]:
        from replicator.runbooks.failover.run import step_of_run

        return step_of_run(None, "stop-route", run)

    @task
    def final_checkpoint(run: dict[str, object]) -> dict[str, object]:
        from replicator.runbooks.failover.run import step_of_run

        return step_of_run(None, "final-checkpoint", run)

    @task
    def commit_offsets(run: dict[str, object]) -> dict[str, object]:
        from replicator.runbooks.failover.run import step_of_run

        return step_of_run(None, "commit-offsets", run)

    @task
    def verify(run: dict[str, object]) -> dict[str, object]:
        from replicator.runbooks.failover.run import step_of_run

        return step_of_run(None, "verify", run)

    @task
    def finish(run: dict[str, object]) -> dict[str, object]:
        from replicator.runbooks.failover.run import step_of_run

        done = step_of_run(None, "finish", run)
        print(done["next_steps"])  # the task log ends with what the applications do next
        return done

    finish(verify(commit_offsets(final_checkpoint(stop_route(drain(check_source(start())))))))


mirrorflow_failover()
