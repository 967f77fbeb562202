"""Every 5 minutes: does each cluster of mirrorflow.yaml answer? Fails the run when one does not."""

from __future__ import annotations

import pendulum
from airflow.sdk import dag, task

from replicator.airflow.task_errors import said_in_one_line

DOC = """
### Cluster health
Asks every cluster of `mirrorflow.yaml` (`MIRRORFLOW_CONFIG`) for its metadata:
cluster id, broker count, topic count, answer time. The run fails, naming each
unreachable cluster, so a dead cluster shows red here before replication lags.
"""


@dag(
    dag_id="mirrorflow_cluster_health",
    schedule="*/5 * * * *",
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    tags=["mirrorflow"],
    description=__doc__,
    doc_md=DOC,
    default_args={"retries": 1, "retry_delay": pendulum.duration(seconds=30)},
)
def mirrorflow_cluster_health() -> None:
    @task
    @said_in_one_line
    def cluster_names() -> list[str]:
        from replicator.config import load_config

        return sorted(load_config().clusters)

    @task
    @said_in_one_line
    def check(name: str) -> dict[str, object]:
        import dataclasses

        from replicator.config import load_config
        from replicator.kafka.health import check_cluster

        return dataclasses.asdict(check_cluster(load_config(), name))

    @task
    @said_in_one_line
    def report(results: list[dict[str, object]]) -> None:
        from replicator.kafka.health import ClusterHealth, require_healthy

        require_healthy([ClusterHealth(**r) for r in results])  # type: ignore[arg-type]

    report(check.expand(name=cluster_names()))


mirrorflow_cluster_health()
