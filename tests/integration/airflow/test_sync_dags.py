"""The topic-discovery and metadata-sync DAGs, run with dag.test() against the session's clusters."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ConfigSource, NewPartitions

from replicator.kafka.admin import admin_client, create_topics

pytestmark = pytest.mark.airflow

DAGS = Path(__file__).resolve().parents[3] / "dags"


def _config(tmp_path: Path, primary: str, backup: str, topic: str, route: str, **extra: object) -> Path:
    path = tmp_path / "mirrorflow.yaml"
    path.write_text(json.dumps({
        "clusters": {"primary": {"bootstrap.servers": primary}, "backup": {"bootstrap.servers": backup}},
        "routes": [{"name": route, "source": "primary", "target": "backup", "topics": [topic], **extra}],
        "state": {"url": f"sqlite:///{tmp_path / 'state.db'}"},
    }))
    return path


def _run(dag_id: str, **conf: object):  # type: ignore[no-untyped-def]
    from airflow.dag_processing.dagbag import DagBag

    dag = DagBag(dag_folder=str(DAGS)).get_dag(dag_id)
    run = dag.test(run_conf=conf or None)
    return run, {(ti.task_id, ti.map_index): ti for ti in run.get_task_instances()}


def _describe(bootstrap: str, topic: str) -> tuple[int, dict[str, str]]:
    admin = admin_client(bootstrap)
    partitions = len(admin.list_topics(topic, timeout=10).topics[topic].partitions)
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    entries = admin.describe_configs([resource])[resource].result(timeout=15)
    topic_level = ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    return partitions, {k: e.value for k, e in entries.items() if e.source == topic_level}


def _alter(bootstrap: str, topic: str, **values: str) -> None:
    admin = admin_client(bootstrap)
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=[
        ConfigEntry(k.replace("_", "."), v, incremental_operation=AlterConfigOpType.SET) for k, v in values.items()])
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(timeout=15)


def test_discovery_then_metadata_sync(airflow_db, primary, backup, unique_name, tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    topic, route = f"{unique_name}-orders", f"r-{unique_name}"[:60]
    replica = f"primary.{topic}"
    monkeypatch.setenv("MIRRORFLOW_CONFIG", str(_config(tmp_path, primary.bootstrap_servers,
                                                         backup.bootstrap_servers, topic, route)))
    create_topics(primary.bootstrap_servers, {topic: 3}, {"retention.ms": "7200000", "min.insync.replicas": "1"})

    run, tis = _run("mirrorflow_topic_discovery")
    assert run.state == "success", {k: t.state for k, t in tis.items()}
    partitions, configs = _describe(backup.bootstrap_servers, replica)
    assert partitions == 3 and configs.get("retention.ms") == "7200000"
    assert "min.insync.replicas" not in configs  # excluded (MirrorMaker 2's list)

    # Not due again for 5 minutes: a scheduled run does nothing, one asked for the route runs now.
    admin = admin_client(primary.bootstrap_servers)
    for future in admin.create_partitions([NewPartitions(topic, 5)]).values():
        future.result(timeout=15)
    run, tis = _run("mirrorflow_topic_discovery")
    assert run.state == "success" and ("discover", 0) not in tis
    assert _describe(backup.bootstrap_servers, replica)[0] == 3
    run, tis = _run("mirrorflow_topic_discovery", route=route)
    assert run.state == "success" and tis[("discover", 0)].state == "success"
    assert _describe(backup.bootstrap_servers, replica)[0] == 5

    _alter(primary.bootstrap_servers, topic, retention_ms="3600000")
    run, tis = _run("mirrorflow_metadata_sync", route=route, dry_run=True)
    assert run.state == "success"
    assert _describe(backup.bootstrap_servers, replica)[1]["retention.ms"] == "7200000"  # dry run: untouched
    run, tis = _run("mirrorflow_metadata_sync", route=route)
    assert run.state == "success", {k: t.state for k, t in tis.items()}
    assert _describe(backup.bootstrap_servers, replica)[1]["retention.ms"] == "3600000"
    again = _run("mirrorflow_metadata_sync", route=route)[1][("apply", 0)]
    assert again.xcom_pull(task_ids="apply", map_indexes=0)["applied"] is False  # nothing left to do


def test_a_failing_topic_fails_the_run_and_the_rest_syncs(  # type: ignore[no-untyped-def]
        airflow_db, primary, backup, unique_name, tmp_path, monkeypatch) -> None:
    good, bad, route = f"{unique_name}-good", f"{unique_name}-bad", f"f-{unique_name}"[:60]
    monkeypatch.setenv("MIRRORFLOW_CONFIG", str(_config(tmp_path, primary.bootstrap_servers,
                                                         backup.bootstrap_servers, f"{unique_name}-.*", route,
                                                         sync={"exclude_configs": [r"max\.compaction\.lag\.ms"]})))
    create_topics(primary.bootstrap_servers, {good: 1, bad: 1})
    assert _run("mirrorflow_topic_discovery")[0].state == "success"
    # Valid on the source; on the target it would exceed that replica's max.compaction.lag.ms.
    _alter(backup.bootstrap_servers, f"primary.{bad}", max_compaction_lag_ms="1000")
    for topic in (good, bad):
        _alter(primary.bootstrap_servers, topic, min_compaction_lag_ms="5000", retention_ms="7200000")
    run, tis = _run("mirrorflow_metadata_sync", route=route)
    assert run.state == "failed" and tis[("apply", 0)].state == "failed"
    assert _describe(backup.bootstrap_servers, f"primary.{good}")[1]["min.compaction.lag.ms"] == "5000"
    assert "min.compaction.lag.ms" not in _describe(backup.bootstrap_servers, f"primary.{bad}")[1]  # refused whole


def test_a_topic_is_paused_and_resumed_from_airflow(  # type: ignore[no-untyped-def]
        airflow_db, primary, backup, unique_name, tmp_path, monkeypatch) -> None:
    """#15: pause/resume from the UI -- a DAG run by hand, Airflow's permissions and history around it."""
    from replicator.state.repository import route_topics
    from replicator.state.store import StateStore

    topic, route = f"{unique_name}-paused", f"p-{unique_name}"[:60]
    config = _config(tmp_path, primary.bootstrap_servers, backup.bootstrap_servers, topic, route)
    monkeypatch.setenv("MIRRORFLOW_CONFIG", str(config))
    create_topics(primary.bootstrap_servers, {topic: 1})

    def wanted() -> dict[str, str]:
        with StateStore(f"sqlite:///{tmp_path / 'state.db'}") as store:
            return {r.topic: r.desired_state.value for r in store.run(lambda s: route_topics(s, route))}

    run, tis = _run("mirrorflow_topic_pause", route=route, topic=topic, action="pause")
    assert run.state == "success", {k: t.state for k, t in tis.items()}
    assert tis[("change", -1)].xcom_pull(task_ids="change").startswith(f"route {route}: topic {topic} paused")
    assert wanted() == {topic: "paused"}
    assert _run("mirrorflow_topic_pause", route=route, topic=topic, action="resume")[0].state == "success"
    assert wanted() == {topic: "replicate"}
    assert _run("mirrorflow_topic_pause", route=route, topic=f"{unique_name}-nope", action="pause")[0].state \
        == "failed"  # the route does not copy it: the run says so and nothing changes
    assert wanted() == {topic: "replicate"}
