"""By hand: pause or resume one topic of a route; its workers follow within seconds, no rebalance."""

from __future__ import annotations

import pendulum
from airflow.sdk import Param, dag, task

from replicator.airflow.task_errors import said_in_one_line

DOC = """
### Pause or resume a topic
Triggered by hand with `route`, `topic` and `action` (`pause` or `resume`), on the
config of `MIRRORFLOW_CONFIG`. The wish is stored in the state DB; the route's running
workers read it at their next look (every 5 s) and stop, or start again, fetching the
topic's partitions. Every other partition stays where it is: no rebalance, nothing
skipped (a resumed topic goes on from its committed offsets). The topic stays on the
route and shows PAUSED in `mirrorflow status`, on the Replication page and in the
metric `mirrorflow_paused_partitions`.

The run fails, naming it, for an unknown route, a topic the route does not copy and a
topic a per-topic failover holds (fail it back instead). Who may trigger it is
Airflow's to say (the DAG run permissions), and each run stays in Airflow's history.
The same without Airflow: `mirrorflow topics pause --route R --topic T`.
"""


@dag(
    dag_id="mirrorflow_topic_pause",
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    tags=["mirrorflow"],
    description=__doc__,
    doc_md=DOC,
    params={
        "route": Param("", type="string", minLength=1, description="the route"),
        "topic": Param("", type="string", minLength=1, description="the source topic"),
        "action": Param("pause", enum=["pause", "resume"], description="pause or resume"),
    },
)
def mirrorflow_topic_pause() -> None:
    @task
    @said_in_one_line
    def change(params: dict[str, object] | None = None) -> str:
        import logging

        from replicator.config import load_config
        from replicator.runbooks.topic_pause import pause_topic

        given = params or {}
        said = pause_topic(load_config(), str(given["route"]), str(given["topic"]), given["action"] == "pause")
        logging.getLogger("replicator").info("%s", said)
        return said

    change()


mirrorflow_topic_pause()
