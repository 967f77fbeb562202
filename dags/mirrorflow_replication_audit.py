"""Hourly: each route's topics compared with their replicas over the previous hour (Spark)."""

from __future__ import annotations

import pendulum
from airflow.sdk import CronDataIntervalTimetable, Param, dag, task, task_group

from replicator.airflow.task_errors import said_in_one_line

DOC = """
### Replication audit
Every hour, for the hour before (the run's data interval, `[start, end)`): for each
route of `mirrorflow.yaml` (`MIRRORFLOW_CONFIG`), a task writes the audit's spec
(topics, replicas, the route's committed offsets), `spark-submit spark_jobs/audit.py`
compares source and target per partition and minute (counts and digests of key,
value, headers, timestamp), and a task stores the result in the state DB
(`mf_audit_run`, `mf_audit_result`). Source records missing on the target fail the
run, naming topic, partition and offsets; duplicates and extra records are reported.
Records the route has not copied yet count as pending, not missing.

**Spark**: submitted through the `spark_default` connection. When it does not exist
(a fresh Airflow), the job runs on `local[2]` (`MIRRORFLOW_SPARK_MASTER` to change);
create the connection for a cluster (`spark://host:7077`, `yarn`, `k8s://...`; the
driver runs in the task, in client mode: docs/operations.md says what a cluster needs). The
Kafka connector jars come from `.cache/jars/spark` (`$MIRRORFLOW_JARS/spark` when set, as in the image).

**Catch-up**: off (`catchup=False`), so a fresh install does not queue an audit for
every hour since `start_date`. The window comes from the data interval alone, so
past hours are audited by a backfill:

```
airflow backfill create --dag-id mirrorflow_replication_audit \\
    --from-date 2026-11-01T00:00:00Z --to-date 2026-11-02T00:00:00Z
```

Trigger by hand with `route` to audit one route (a manual run covers the last
complete hour). Without Airflow: `mirrorflow audit --route R --from T1 --to T2`.
Spec and result files: `$MIRRORFLOW_WORK_DIR` (default `runs/` next to the config).
"""


@dag(
    dag_id="mirrorflow_replication_audit",
    schedule=CronDataIntervalTimetable("0 * * * *", timezone="UTC"),
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    tags=["mirrorflow"],
    description=__doc__,
    doc_md=DOC,
    default_args={"retries": 1, "retry_delay": pendulum.duration(minutes=2)},
    params={"route": Param(None, type=["null", "string"], description="one route (default: every route)")},
)
def mirrorflow_replication_audit() -> None:
    from replicator.airflow.spark_submit import MirrorFlowSparkSubmitOperator
    from replicator.runbooks.audit.scheduled import AUDIT_JOB

    @task
    @said_in_one_line
    def routes(params: dict[str, object] | None = None) -> list[str]:
        from replicator.airflow.schedule import chosen_routes

        return chosen_routes(None, (params or {}).get("route"))

    @task
    @said_in_one_line
    def prepare(route: str, dag_run=None, data_interval_start=None,  # type: ignore[no-untyped-def]
                data_interval_end=None) -> dict[str, object]:
        from replicator.runbooks.audit.scheduled import audit_run_key, prepare_job

        key = audit_run_key(dag_run.dag_id, dag_run.run_id, route)
        return prepare_job(route, data_interval_start, data_interval_end, key)

    @task(retries=0)  # a loss found is a verdict, not a transient failure: fail the run now
    @said_in_one_line
    def record(prepared: dict[str, object]) -> dict[str, object]:
        from replicator.runbooks.audit.scheduled import record_job

        return record_job(prepared)

    @task
    @said_in_one_line
    def job_args(prepared: dict[str, object]) -> list[str]:
        return list(prepared["args"])  # type: ignore[call-overload]

    @task_group
    def audit_route(route: str) -> None:
        prepared = prepare(route)
        job = MirrorFlowSparkSubmitOperator(task_id="audit_job", application=str(AUDIT_JOB),
                                            application_args=job_args(prepared), conn_id="spark_default",
                                            name="mirrorflow-audit")
        job >> record(prepared)

    audit_route.expand(route=routes())


mirrorflow_replication_audit()
