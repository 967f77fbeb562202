"""By hand: copy a historical range of a route's topic to its replica (Spark), then check the copy."""

from __future__ import annotations

import pendulum
from airflow.sdk import Param, dag, task

from replicator.airflow.param_schemas import OFFSETS, TIME
from replicator.airflow.task_errors import said_in_one_line

DOC = """
### Backfill a topic
Triggered by hand with `route`, `topic` and a range: `from`/`to` (times, ISO 8601,
UTC unless they carry an offset) or `from_offset` (`0=100,1=250`) with an optional
`to_offset`. A task plans the range and writes the job's spec, `spark-submit
spark_jobs/backfill.py` copies it to the same partitions of the replica (key, value,
headers, timestamp; idempotent producer, `acks=all`; progress and the Spark UI URL in
its log) and checks by offsets that each record arrived; a last task fails the run
when records are missing.

The range ends where the route's own copies begin (its first offset sync, else its
committed offset): a time range is cut there, offsets reaching past it are refused
unless `overlap_ok` (those records would be on the replica twice). The copies land
on the replica **after** the route's records.

Each run is recorded in the state DB (`mf_backfill_run`, shown on the Replication
page) before the copy. A range whose offsets a *done* or *running* backfill of the
topic already copied fails the run at `prepare`, naming that backfill, unless
`overlap_ok`; a *failed* one does not block (running it again may repeat what it had
written). The last task runs even when the job failed, to mark the run failed.

Spark: the `spark_default` connection, or `local[2]` when it does not exist (see the
audit DAG). Without Airflow: `mirrorflow backfill --route R --topic T --from T1 --to T2`.
"""


@dag(
    dag_id="mirrorflow_backfill_topic",
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    tags=["mirrorflow"],
    description=__doc__,
    doc_md=DOC,
    params={
        "route": Param("", type="string", description="the route"),
        "topic": Param("", type="string", description="the source topic"),
        "from": Param(None, type=["null", "string"], pattern=TIME,
                      description="range start by time (ISO 8601 like 2026-11-27T10:00:00Z, or now), included"),
        "to": Param(None, type=["null", "string"], pattern=TIME, description="range end by time, excluded"),
        "from_offset": Param(None, type=["null", "string"], pattern=OFFSETS,
                             description="range start by offsets: P=N,P=N"),
        "to_offset": Param(None, type=["null", "string"], pattern=OFFSETS,
                           description="range end by offsets (default: route start)"),
        "overlap_ok": Param(False, type=["null", "boolean"], description="copy records the route copied too (twice)"),
    },
)
def mirrorflow_backfill_topic() -> None:
    from replicator.airflow.spark_submit import MirrorFlowSparkSubmitOperator
    from replicator.runbooks.backfill.steps import BACKFILL_JOB

    @task
    @said_in_one_line
    def prepare(params: dict[str, object] | None = None, dag_run=None) -> dict[str, object]:  # type: ignore[no-untyped-def]
        from replicator.runbooks.backfill.steps import prepare_job

        return prepare_job(params or {}, f"{dag_run.dag_id}/{dag_run.run_id}")

    @task
    @said_in_one_line
    def job_args(prepared: dict[str, object]) -> list[str]:
        return list(prepared["args"])  # type: ignore[call-overload]

    @task(retries=0, trigger_rule="all_done_min_one_success")  # after a failed job too: mark the run failed
    @said_in_one_line
    def check(prepared: dict[str, object]) -> dict[str, object]:
        from replicator.runbooks.backfill.steps import judge_job

        return judge_job(prepared)

    prepared = prepare()
    job = MirrorFlowSparkSubmitOperator(task_id="backfill_job", application=str(BACKFILL_JOB),
                                        application_args=job_args(prepared), conn_id="spark_default",
                                        name="mirrorflow-backfill")
    job >> check(prepared)


mirrorflow_backfill_topic()
