"""By hand: bring a failed-over route's applications back to its old primary, one task per step."""

from __future__ import annotations

from airflow.sdk import Param

DOC = """
### Failback
After `mirrorflow_failover` moved a route's applications to its target, and once
the old primary (the route's source) is back: copy back what was written on the
target and move the consumer groups home (`mirrorflow.yaml` from
`MIRRORFLOW_CONFIG`). Trigger by hand with `route`; each task is one step and logs
what it decided:

1. `check`: both clusters answer, a failover holds the route, none of its workers
   runs; the replicas to copy back; records of the old primary never copied.
2. `prepare`: `incremental` (default): a reverse route (target -> old primary)
   starts right after the last record the route copied. `resync`: the old
   primary's topics are deleted (refused when records there never reached the
   target, unless `accept_loss`); the reverse route creates them again.
3. `reverse_copy`: the reverse route copies up to the replicas' ends.
4. `fence` (param `fence`): deny WRITE on the target's topics the reverse route copies
   (ACLs, as the failover's fence), watch that none gets past; lifted at `release`.
5. `drain`: stop the producers on the target; copies until nothing is left (up to
   `drain_timeout` s).
6. `translate`: each group's position on the target, translated to the old primary.
7. `commit_offsets` and 8. `verify`: into the old primary's idle groups, read back.
9. `release`: the route may run again (`mirrorflow run`).
10. `finish`: figures stored in `mf_failback_run`, next steps in the log.

With `topics`, only topics a per-topic failover moved come back (mode
`incremental`): the route's workers keep copying its other topics, and copy
these again at `release`.

A run that failed midway resumes at the failed step when triggered again with the
same params. `dry_run` shows every step and changes nothing. The same without
Airflow: `mirrorflow failback --route R`.
"""

STEPS = ["check", "prepare", "reverse-copy", "fence", "drain", "translate", "commit-offsets", "verify", "release",
         "finish"]
PARAMS = {
    "route": Param("", type="string", description="the failed-over route to bring back"),
    "mode": Param("incremental", enum=["incremental", "resync"], description="incremental or resync"),
    "groups": Param([], type=["null", "array"], description="only these groups (default: the route's group filter)"),
    "topics": Param([], type=["null", "array"],
                    description="only these topics, failed over by topic (incremental); the route copies the others"),
    "drain_timeout": Param(60, type=["null", "integer"], minimum=0, description="seconds to copy the last records"),
    "accept_loss": Param(False, type=["null", "boolean"], description="resync: drop records never copied"),
    "dry_run": Param(False, type=["null", "boolean"], description="show every step, change nothing"),
    "fence": Param(False, type=["null", "boolean"], description="deny writes on the backup's topics first (ACLs)"),
    "accept_bypass": Param(False, type=["null", "boolean"],
                           description="with fence: go on when records were written past it"),
}


def mirrorflow_failback() -> None:
    from replicator.airflow.runbook_dag import runbook_dag

    runbook_dag("mirrorflow_failback", "replicator.runbooks.failback.run", STEPS, PARAMS, DOC, __doc__)


mirrorflow_failback()
