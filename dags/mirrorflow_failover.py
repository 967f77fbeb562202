"""By hand: fail a route over to its target cluster, one task per step of the runbook."""

from __future__ import annotations

from airflow.sdk import Param

from replicator.airflow.param_schemas import DURATION, INSTANT

DOC = """
### Failover
Moves the consumer groups of a route's source cluster to its target
(`mirrorflow.yaml` from `MIRRORFLOW_CONFIG`). Trigger by hand with `route`; each
task is one step and logs what it decided:

1. `check_source`: reachable → the route may drain; unreachable → go on without it
   (the RPO is then known from the last checkpoint).
2. `fence` (param `fence`): deny WRITE on the route's source topics to their writers
   (ACLs; `routes[].fence.exempt` spared), then watch their ends: records written
   past the fence lift it and fail the task, the route left copying, unless
   `accept_bypass`. Skipped without `fence`.
3. `drain`: wait until nothing is left to copy, up to `drain_timeout` seconds.
4. `stop_route`: mark the route failed over (`mirrorflow run` refuses it from then
   on) and wait until its workers left group `mirrorflow-<route>`; if they do not,
   the task fails saying to stop them.
5. `final_checkpoint`: mode `checkpoint` (default): a last checkpoint (or the stored
   ones when the source is down); mode `timestamp` (groups never checkpointed):
   offsets-for-times at `at` minus `margin` on each replica partition.
6. `commit_offsets`: into the target's groups that have no active member, never
   moving one backwards (a group with members is reported, never overwritten).
7. `verify`: the committed offsets read back.
8. `finish`: RPO, RTO (trigger to done) and what the applications do next, stored in
   the state DB (`mf_failover_run`, `mf_failover_step`, `mf_failover_offset`).

A run that failed midway resumes at the failed step when triggered again with the
same params. `dry_run` shows every step and changes nothing. The same without
Airflow: `mirrorflow failover --route R`.
"""

STEPS = ["check-source", "fence", "drain", "stop-route", "final-checkpoint", "commit-offsets", "verify", "finish"]
PARAMS = {
    "route": Param("", type="string", description="the route to fail over"),
    "groups": Param([], type=["null", "array"], description="only these groups (default: every checkpointed group)"),
    "topics": Param([], type=["null", "array"],
                    description="only these source topics (default: the whole route); the route copies the others"),
    "mode": Param("checkpoint", enum=["checkpoint", "timestamp"], description="checkpoint or timestamp"),
    "at": Param(None, type=["null", "string"], pattern=INSTANT,
                description="mode timestamp: ISO instant consumed up to (2026-11-01T12:00:00Z)"),
    "margin": Param("60s", type=["null", "string"], pattern=DURATION,
                    description="mode timestamp: resume this much before `at` (60, 60s, 5m, 1h)"),
    "drain_timeout": Param(60, type=["null", "integer"], minimum=0, description="seconds to wait for the lag to drain"),
    "dry_run": Param(False, type=["null", "boolean"], description="show every step, change nothing"),
    "fence": Param(False, type=["null", "boolean"], description="deny writes on the source topics first (ACLs)"),
    "accept_bypass": Param(False, type=["null", "boolean"],
                           description="with fence: go on when records were written past it"),
}


def mirrorflow_failover() -> None:
    from replicator.airflow.runbook_dag import runbook_dag

    runbook_dag("mirrorflow_failover", "replicator.runbooks.failover.run", STEPS, PARAMS, DOC, __doc__)


mirrorflow_failover()
