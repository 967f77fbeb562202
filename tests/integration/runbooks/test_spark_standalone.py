"""Audits and backfills on a real Spark standalone cluster: a master and a worker on loopback, started from the
classes PySpark ships (``replicator.dev.localspark``), as a user's own cluster would run them.

Submitted the two ways users submit: the CLI's ``--master spark://...`` (the driver in the ``mirrorflow``
process) and the DAGs' ``spark_default`` connection (``spark-submit`` in the task). The audit's verdict on the
cluster is the one ``local[2]`` gives on the same data, finding for finding; the backfill's records arrive once,
byte for byte; the Kafka connector jars reach the executors from our jar cache (each executor's folder holds
them, fetched from the driver), and the jobs' own modules too.

One cluster for the module (its start, ~15 s, and each application's executor start are the cost).
"""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from replicator.dev.localspark import LocalSpark, LocalSparkSpec
from replicator.jars import spark_kafka_jars
from spark_jobs.session import jobs_archive
from tests.kafka_io import Rec, produce, read_all
from tests.late_route import LateRoute, started_late
from tests.support import free_port

pytestmark = pytest.mark.spark

DAGS = Path(__file__).resolve().parents[3] / "dags"
MIRRORFLOW = str(Path(sys.executable).parent / "mirrorflow")
PARTITIONS, OLD, NEW = 2, 20, 6
HOUR_END = dt.datetime.now(dt.UTC).replace(minute=0, second=0, microsecond=0)
FIRST_MS = int(HOUR_END.timestamp() * 1000) - 3_000_000  # ten minutes into the previous hour


@pytest.fixture(scope="module")
def spark_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalSpark]:
    """A master and one worker (2 cores, 1 GiB for executors) of the module's own."""
    cluster = LocalSpark(LocalSparkSpec(home=tmp_path_factory.mktemp("spark"), port=free_port(),
                                        webui_port=free_port(), worker_cores=2, worker_memory="1g"))
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()


def _records(first_ms: int, count: int, tag: str) -> dict[int, list[Rec]]:
    """Null keys, tombstones, binary values and headers, a null header value: what byte-exact must cover."""
    return {p: [Rec(p, None if n % 4 == 1 else f"k{p}-{n}".encode(),
                    None if n % 7 == 3 else f"{tag}{p}-{n}".encode() + b"\x00\xff",
                    (("h", str(n).encode()), ("n", None)) if n % 2 else (), first_ms + 10_000 * n + p)
                for n in range(count)] for p in range(PARTITIONS)}


def _scenario(primary, backup, work: Path, name: str) -> LateRoute:  # type: ignore[no-untyped-def]
    topic, route = f"t-standalone-{name}-{int(time.time())}", f"sa-{name}"
    old, new = _records(FIRST_MS, OLD, "old"), _records(FIRST_MS + 10_000 * OLD, NEW, "new")
    return started_late(primary.bootstrap_servers, backup.bootstrap_servers, work, topic, route, old, new)


@pytest.fixture(scope="module")
def scenario(primary, backup, tmp_path_factory: pytest.TempPathFactory) -> LateRoute:  # type: ignore[no-untyped-def]
    return _scenario(primary, backup, tmp_path_factory.mktemp("standalone-cli"), "cli")


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([MIRRORFLOW, *args], capture_output=True, text=True, timeout=600, check=False)


def _audit(s: LateRoute, master: str, key: str) -> dict[str, Any]:
    start, end = HOUR_END - dt.timedelta(hours=1), HOUR_END
    began = time.monotonic()
    done = _cli("audit", "--config", str(s.config), "--route", s.route, "--from", start.isoformat(),
                "--to", end.isoformat(), "--master", master, "--run-key", key, "--json")
    assert done.returncode in (0, 1), done.stderr[-3000:]  # 1: records missing (a verdict, with its JSON)
    print(f"audit on {master} took {time.monotonic() - began:.1f} s")
    summary: dict[str, Any] = json.loads(done.stdout)
    return summary


def _ran_on(cluster: LocalSpark, name: str, before: set[str]) -> dict[str, Any]:
    """The one application named ``name`` the cluster ran since ``before`` (app ids), finished."""
    apps = [a for a in cluster.applications() if a["id"] not in before and a["name"] == name]
    assert len(apps) == 1, cluster.applications()
    assert apps[0]["state"] == "FINISHED" and apps[0]["cores"] > 0, apps[0]
    return apps[0]


def _fetched_by_executors(cluster: LocalSpark, app_id: str) -> set[str]:
    """The files every executor of the application fetched from the driver (jars, Python files)."""
    dirs = cluster.executor_dirs(app_id)
    assert dirs, f"no executor ran for {app_id}"
    fetched = [{p.name for p in d.iterdir()} for d in dirs]
    return set.intersection(*fetched)


def _shipped(fetched: set[str]) -> None:
    """The connector jars from our cache and the jobs' own modules reached the executors (through the driver)."""
    assert {p.name for p in spark_kafka_jars()} <= fetched, fetched
    assert jobs_archive().name in fetched, fetched


def test_cli_audit_on_the_cluster_finds_what_local_finds(spark_cluster: LocalSpark, scenario: LateRoute,
                                                         backup) -> None:  # type: ignore[no-untyped-def]
    # Break the replica by hand, so the verdict has findings to compare: a duplicate and a record born there.
    dup = scenario.new[0][2]
    produce(backup.bootstrap_servers, scenario.replica, [dup, Rec(1, b"x", b"born on the target", (), FIRST_MS + 5)])
    local = _audit(scenario, "local[2]", "local")
    before = {a["id"] for a in spark_cluster.applications()}
    remote = _audit(scenario, spark_cluster.spec.master_url, "standalone")
    app = _ran_on(spark_cluster, "mirrorflow-audit", before)

    assert remote["counts"] == local["counts"] and remote["counts"]["duplicates"] == 1, remote["counts"]
    assert (remote["counts"]["extra"], remote["counts"]["missing"]) == (1, 0), remote["counts"]
    for key in ("status", "topics", "findings", "notes", "buckets", "buckets_with_findings"):
        assert remote[key] == local[key], key
    assert remote["findings"], "the broken replica gave no finding to compare"
    _shipped(_fetched_by_executors(spark_cluster, app["id"]))


def test_cli_backfill_on_the_cluster_copies_the_earlier_records_once(spark_cluster: LocalSpark, scenario: LateRoute,
                                                                     backup) -> None:  # type: ignore[no-untyped-def]
    before = {a["id"] for a in spark_cluster.applications()}
    done = _cli("backfill", "--config", str(scenario.config), "--route", scenario.route, "--topic", scenario.topic,
                "--from-offset", ",".join(f"{p}=0" for p in range(PARTITIONS)), "--master",
                spark_cluster.spec.master_url, "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads(done.stdout)
    assert summary["written"] == {str(p): OLD for p in range(PARTITIONS)}, summary
    assert (summary["check"]["missing"], summary["check"]["duplicates"]) == (0, 0), summary["check"]
    app = _ran_on(spark_cluster, "mirrorflow-backfill", before)
    _shipped(_fetched_by_executors(spark_cluster, app["id"]))
    replica = read_all(backup.bootstrap_servers, scenario.replica, PARTITIONS)
    for p in range(PARTITIONS):  # the route's copies (and the hand-made duplicate / extra), then the old ones once
        assert replica[p][-OLD:] == scenario.old[p], f"partition {p}"
        assert replica[p][:NEW] == scenario.new[p], f"partition {p}"


@pytest.mark.airflow
def test_the_dags_submit_to_the_cluster_their_spark_default_connection_names(  # type: ignore[no-untyped-def]
        spark_cluster: LocalSpark, airflow_db, task_environ, primary, backup, tmp_path, monkeypatch) -> None:
    from airflow.dag_processing.dagbag import DagBag

    from replicator.airflow.spark_submit import local_connection_uri_env

    s = _scenario(primary, backup, tmp_path, "dag")
    monkeypatch.setenv("MIRRORFLOW_CONFIG", str(s.config))
    monkeypatch.delenv("MIRRORFLOW_WORK_DIR", raising=False)
    monkeypatch.setenv(*local_connection_uri_env("spark_default", spark_cluster.spec.master_url))
    before = {a["id"] for a in spark_cluster.applications()}
    dags = DagBag(dag_folder=str(DAGS))

    run = dags.get_dag("mirrorflow_backfill_topic").test(
        run_conf={"route": s.route, "topic": s.topic, "from_offset": ",".join(f"{p}=0" for p in range(PARTITIONS))})
    assert run.state == "success", {ti.task_id: ti.state for ti in run.get_task_instances()}
    assert read_all(backup.bootstrap_servers, s.replica, PARTITIONS) == {p: s.new[p] + s.old[p]
                                                                         for p in range(PARTITIONS)}
    run = dags.get_dag("mirrorflow_replication_audit").test(logical_date=HOUR_END, run_conf={"route": s.route})
    assert run.state == "success", {(ti.task_id, ti.map_index): ti.state for ti in run.get_task_instances()}
    with sqlite3.connect(tmp_path / "state.db") as db:
        audits = db.execute("select status, source_records, target_records, missing from mf_audit_run"
                            " where route = ?", (s.route,)).fetchall()
    assert audits == [("clean", PARTITIONS * (OLD + NEW), PARTITIONS * (OLD + NEW), 0)]

    for name in ("mirrorflow-backfill", "mirrorflow-audit"):
        _shipped(_fetched_by_executors(spark_cluster, _ran_on(spark_cluster, name, before)["id"]))
