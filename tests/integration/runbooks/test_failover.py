"""Failover drills on a pair of clusters of their own (they stop ``primary``).

With the source up (CLI): a dry run changes nothing, bad names exit 2, a planned
failover drains the route (a partition ending with a transaction marker counts as
drained), refuses to go on while a worker runs, holds the route (the running worker
stops by itself), and resumes at the failed step. With the source lost (``dag.test()`` of ``mirrorflow_failover``): a
caught-up group resumes on backup exactly after its last record, a group
checkpointed while the route lagged skips nothing and repeats at most what the run
reported, a group never checkpointed resumes by timestamp, and the route refuses to
run until released.
"""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from replicator.dev.localcluster import LocalCluster
from replicator.kafka.admin import create_topics
from tests.checkpoint_io import (
    VISIBLE_PER_BATCH,
    checkpoint_json,
    consume_part,
    read_source,
    resume_on_target,
    wait_caught_up,
    write_batch,
)
from tests.kafka_io import Rec, committed, end_offsets, leave_group, produce, wait_until
from tests.records import BASE_TS, write_config
from tests.support import Worker, free_port, start_pair

pytestmark = pytest.mark.kafka

DAGS = Path(__file__).resolve().parents[3] / "dags"
MIRRORFLOW = str(Path(sys.executable).parent / "mirrorflow")
ROUTES = {  # route -> (topic, partitions, groups the route checkpoints)
    "dry": ("f-dry", 2, ["dry-app"]),
    "planned": ("f-planned", 2, ["planned-app"]),
    "caught": ("f-caught", 3, ["caught-app", "caught-busy"]),
    "lagging": ("f-lagging", 2, ["lagging-app"]),
    "stamp": ("f-stamp", 1, ["nobody"]),  # its group is never checkpointed
    "inc": ("f-inc", 2, ["inc-app"]),  # failed over with primary down, then failed back (incremental)
    "res": ("f-res", 2, ["res-app"]),  # failed over planned, then failed back (resync)
    "ident": ("f-ident", 2, ["ident-app"]),  # policy identity: failed over planned, failed back (incremental)
    "eos": ("f-eos", 2, ["eos-app"]),  # exactly-once: failed over planned
    "eosb": ("f-eosb", 2, ["eosb-app"]),  # exactly-once: failed over planned, then failed back (incremental)
    "open": ("f-open", 2, ["open-app"]),  # a transaction still open on the source at the cutover
}
POLICIES = {"ident": "identity"}
GUARANTEES = {"eos": "exactly-once", "eosb": "exactly-once"}


@dataclass
class Pair:
    """The module's clusters and its one config (one route per scenario)."""

    primary: LocalCluster
    backup: LocalCluster
    config: Path
    home: Path

    @property
    def p(self) -> str:
        return self.primary.spec.bootstrap_servers

    @property
    def b(self) -> str:
        return self.backup.spec.bootstrap_servers

    def up(self) -> None:
        self.primary.start()  # kept data: a restart after a drill finds everything

    def rows(self, sql: str, *args: object) -> list[tuple[Any, ...]]:
        with sqlite3.connect(self.home / "state.db") as db:
            return db.execute(sql, args).fetchall()


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    home = tmp_path_factory.mktemp("failover")
    primary, backup = start_pair(home, {"fprimary": free_port(), "fbackup": free_port()}, heap="384m")
    try:
        routes = [{"name": name, "source": "primary", "target": "backup", "topics": [topic],
                   "policy": POLICIES.get(name, "prefix"), "checkpoints": {"groups": groups},
                   "guarantee": GUARANTEES.get(name, "at-least-once")}
                  for name, (topic, _, groups) in ROUTES.items()]
        config = write_config(home / "m.yaml", primary.spec.bootstrap_servers, backup.spec.bootstrap_servers, routes)
        create_topics(primary.spec.bootstrap_servers, {topic: n for topic, n, _ in ROUTES.values()})
        yield Pair(primary, backup, config, home)
    finally:
        for cluster in (primary, backup):
            cluster.stop()


def _copy(pair: Pair, route: str, source: dict[int, list[tuple[int, Rec]]]) -> dict[int, int]:
    """Run the route's worker until it copied ``source``, then stop it (SIGTERM); the route's commits."""
    worker = Worker(pair.config, route, log_dir=pair.home)
    try:
        done = wait_caught_up(pair.p, route, ROUTES[route][0], source)
    finally:
        code = worker.terminate()[0]
    assert code == 0, worker.output()[-2000:]
    return done


def _failover(pair: Pair, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([MIRRORFLOW, "failover", "--config", str(pair.config), *args], capture_output=True,
                          text=True, timeout=300, check=False)


def _run_route(pair: Pair, route: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([MIRRORFLOW, "run", "--config", str(pair.config), "--route", route], capture_output=True,
                          text=True, timeout=60, check=False)


def _end_with_a_transaction(bootstrap: str, topic: str, partition: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"{topic}-last"})
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce(topic, b"last", b"k", partition=partition)
    producer.commit_transaction(30)


def test_dry_run_and_bad_names_change_nothing(pair: Pair) -> None:
    pair.up()
    topic, partitions, _ = ROUTES["dry"]
    write_batch(pair.p, topic, partitions, "one")
    consume_part(pair.p, "dry-app", topic, {0: 5, 1: 7})
    _copy(pair, "dry", read_source(pair.p, topic, partitions))
    assert checkpoint_json(pair.config, "--route", "dry")["status"] == "ok"
    stored = pair.rows("select count(*) from mf_checkpoint where route = 'dry'")

    done = _failover(pair, "--route", "dry", "--dry-run")
    assert done.returncode == 0, done.stderr
    steps = [line.split(":")[0] for line in done.stdout.splitlines() if line.startswith("[")]
    assert steps == [f"[{n}/8] {s}" for n, s in enumerate(["check-source", "fence", "drain", "stop-route",
                                                           "final-checkpoint", "commit-offsets", "verify",
                                                           "finish"], 1)]
    assert "[6/8] commit-offsets: planned: 2 planned" in done.stdout
    assert "Dry run of the failover of route dry: nothing was changed." in done.stdout
    for args, message in [
        (["--group", "nope"], "route dry: source 'primary': no consumer group 'nope'"),
        (["--group", "planned-app"], "no consumer group 'planned-app'"),
        (["--route", "nope"], "unknown route 'nope'"),
    ]:
        bad = _failover(pair, *(["--route", "dry"] if "--route" not in args else []), *args)
        assert bad.returncode == 2 and message in bad.stderr, bad.stderr
        assert "Traceback" not in bad.stderr
    assert pair.rows("select count(*) from mf_failover_run") == [(0,)]
    assert pair.rows("select count(*) from mf_checkpoint where route = 'dry'") == stored  # no final checkpoint
    assert committed(pair.b, "dry-app", f"primary.{topic}", partitions) in ({}, {0: -1, 1: -1})


def test_planned_failover_drains_waits_for_the_workers_and_resumes_where_it_stopped(pair: Pair) -> None:
    pair.up()
    topic, partitions, _ = ROUTES["planned"]
    write_batch(pair.p, topic, partitions, "one")
    worker = Worker(pair.config, "planned", log_dir=pair.home)
    try:
        wait_caught_up(pair.p, "planned", topic, read_source(pair.p, topic, partitions))  # the worker is in
        write_batch(pair.p, topic, partitions, "two")  # the drain waits for these
        _end_with_a_transaction(pair.p, topic, 1)  # partition 1 ends with a marker: offset lag 1, nothing to copy
        source = read_source(pair.p, topic, partitions)
        commits = consume_part(pair.p, "planned-app", topic, {0: 9, 1: 2 * VISIBLE_PER_BATCH})
        first = _failover(pair, "--route", "planned", "--drain-timeout", "90", "--stop-timeout", "0")
        assert first.returncode == 1, first.stdout + first.stderr
        assert "[3/8] drain: done: drained: nothing left to copy" in first.stdout
        assert "1 worker(s) still in group 'mirrorflow-planned' on 'primary' after 0 s: stop them" in first.stderr
        [(run_id, status, stopped_at)] = pair.rows(
            "select id, status, stopped_at_step from mf_failover_run where route = 'planned'")
        assert (status, stopped_at) == ("failed", "stop-route")
        refused = _run_route(pair, "planned")  # held from the moment the step began
        assert refused.returncode == 2, refused.stderr
        assert f"route planned was failed over to 'backup' by failover run {run_id}" in refused.stderr
        assert "Traceback" not in refused.stderr
        # The running worker notices the hold at its next look at the state DB (every 5 s) and stops.
        assert worker.process.wait(30) == 1, worker.output()[-2000:]
        assert f"failover run {run_id} moved the applications to 'backup' while this worker ran" in worker.output()
    finally:
        if worker.process.poll() is None:
            worker.terminate()
    again = _failover(pair, "--route", "planned", "--drain-timeout", "90", "--json")
    assert again.returncode == 0, again.stderr
    assert f"resuming failover run {run_id} of route planned (stopped at stop-route)" in again.stderr
    assert "[3/8] drain: done already" in again.stderr
    run = json.loads(again.stdout)
    assert run["run_id"] == run_id and run["status"] == "done" and run["source_reachable"] is True
    assert run["rpo"]["basis"] == "measured" and run["rpo"]["records"] == 0
    assert {(c["point"]["partition"], c["point"]["basis"], c["outcome"], c["verified"]) for c in run["commits"]} == {
        (0, "exact", "written", run["commits"][0]["point"]["target_offset"]),
        (1, "exact", "written", run["commits"][1]["point"]["target_offset"])}
    resumed = resume_on_target(pair.b, "planned-app", f"primary.{topic}", partitions)
    for p in range(partitions):
        assert resumed[p] == [rec for offset, rec in source[p] if offset >= commits[p]], f"partition {p}"


def test_records_of_a_transaction_still_open_at_the_cutover_are_counted_and_named_in_the_rpo(pair: Pair) -> None:
    """The route reads committed records: an open transaction's records are invisible to it, and lost if the
    transaction commits after the cutover. They are not silently left behind: the RPO names them."""
    pair.up()
    topic, partitions, _ = ROUTES["open"]
    write_batch(pair.p, topic, partitions, "one")
    _copy(pair, "open", read_source(pair.p, topic, partitions))
    stable = end_offsets(pair.p, topic, partitions, "read_uncommitted")[0]
    producer = Producer({"bootstrap.servers": pair.p, "transactional.id": "f-open-at-cutover"})
    producer.init_transactions(30)
    producer.begin_transaction()
    for n in range(3):
        producer.produce(topic, f"open-{n}".encode(), b"k", partition=0)
    producer.flush(30)
    try:
        done = _failover(pair, "--route", "open", "--drain-timeout", "2", "--json")
    finally:
        producer.abort_transaction(30)
    assert done.returncode == 0, done.stderr
    run = json.loads(done.stdout)
    assert run["rpo"]["records"] == 3 and run["rpo"]["open_transactions"] == [[topic, 0, stable, 3]], run["rpo"]
    assert (f"RPO: at most 3 records not replicated ({topic}-0: 3); 3 of them in transactions still open on the "
            f"source ({topic}-0: 3 from offset {stable})") in run["next_steps"]
    assert _failover(pair, "--route", "open", "--release").returncode == 0


def test_planned_failover_of_an_exactly_once_route_resumes_a_group_with_none_repeated(pair: Pair) -> None:
    """An exactly-once route's workers are members of its positions group on the target: the failover waits
    for that group to empty, and the application's group resumes on the target right after its last record."""
    pair.up()
    topic, partitions, _ = ROUTES["eos"]
    write_batch(pair.p, topic, partitions, "one")
    worker = Worker(pair.config, "eos", log_dir=pair.home)
    try:
        wait_caught_up(pair.p, "eos", topic, read_source(pair.p, topic, partitions))
        write_batch(pair.p, topic, partitions, "two")
        source = read_source(pair.p, topic, partitions)
        commits = consume_part(pair.p, "eos-app", topic, {0: 9, 1: 2 * VISIBLE_PER_BATCH})
        first = _failover(pair, "--route", "eos", "--drain-timeout", "90", "--stop-timeout", "0")
        assert first.returncode == 1, first.stdout + first.stderr
        assert "1 worker(s) still in group 'mirrorflow-eos.positions' on 'backup' after 0 s" in first.stderr
        assert worker.process.wait(30) == 1, worker.output()[-2000:]  # it noticed the hold and stopped
    finally:
        if worker.process.poll() is None:
            worker.terminate()
    assert "Traceback" not in worker.output()
    again = _failover(pair, "--route", "eos", "--drain-timeout", "90", "--json")
    assert again.returncode == 0, again.stderr
    run = json.loads(again.stdout)
    assert run["status"] == "done" and run["rpo"]["records"] == 0
    assert {(c["point"]["partition"], c["point"]["basis"], c["outcome"]) for c in run["commits"]} == {
        (0, "exact", "written"), (1, "exact", "written")}
    resumed = resume_on_target(pair.b, "eos-app", f"primary.{topic}", partitions)
    for p in range(partitions):
        assert resumed[p] == [rec for offset, rec in source[p] if offset >= commits[p]], f"partition {p}"


@dataclass(frozen=True)
class Lost:
    """What the source held before it was lost, for each drill."""

    caught: dict[int, list[tuple[int, Rec]]]
    caught_commits: dict[int, int]
    lagging: dict[int, list[tuple[int, Rec]]]
    lagging_commits: dict[int, int]
    lagging_route_end: dict[int, int]
    stamp: list[Rec]


@pytest.fixture(scope="module")
def lost(pair: Pair) -> Lost:
    """Three routes copied and checkpointed as each drill needs, then ``primary`` stopped."""
    pair.up()
    topic, partitions, _ = ROUTES["caught"]
    write_batch(pair.p, topic, partitions, "one")
    caught = read_source(pair.p, topic, partitions)
    caught_commits = consume_part(pair.p, "caught-app", topic, {0: 9, 1: 15, 2: 0})
    consume_part(pair.p, "caught-busy", topic, {0: 12})
    _copy(pair, "caught", caught)
    assert {r["status"] for r in checkpoint_json(pair.config, "--route", "caught")["checkpoints"]} == {"exact"}

    topic, partitions, _ = ROUTES["lagging"]
    write_batch(pair.p, topic, partitions, "one")
    route_end = _copy(pair, "lagging", read_source(pair.p, topic, partitions))
    write_batch(pair.p, topic, partitions, "two")
    lagging = read_source(pair.p, topic, partitions)
    lagging_commits = consume_part(pair.p, "lagging-app", topic, {0: VISIBLE_PER_BATCH + 10, 1: 5})
    rows = checkpoint_json(pair.config, "--route", "lagging")["checkpoints"]
    assert [r["status"] for r in rows] == ["behind", "exact"]
    _copy(pair, "lagging", lagging)  # the route catches up after the last checkpoint, then the source is lost

    topic, _, _ = ROUTES["stamp"]
    stamp = [Rec(0, f"k{n}".encode(), f"v{n}".encode(), (), BASE_TS + n * 1000) for n in range(30)]  # 1 s apart
    produce(pair.p, topic, stamp)
    consume_part(pair.p, "stamp-app", topic, {0: 12})
    _copy(pair, "stamp", read_source(pair.p, topic, 1))
    pair.primary.stop()
    return Lost(caught, caught_commits, lagging, lagging_commits, route_end, stamp)


def _dag_run(**conf: object) -> tuple[Any, dict[str, Any]]:
    from airflow.dag_processing.dagbag import DagBag

    dag = DagBag(dag_folder=str(DAGS)).get_dag("mirrorflow_failover")
    run = dag.test(run_conf=conf)
    tis = {ti.task_id: ti for ti in run.get_task_instances()}
    assert run.state == "success", {k: t.state for k, t in tis.items()}
    return run, tis["finish"].xcom_pull(task_ids="finish")


def test_caught_up_group_resumes_on_backup_exactly_after_the_failover_dag(  # type: ignore[no-untyped-def]
        pair: Pair, lost: Lost, airflow_db, monkeypatch) -> None:
    topic, partitions, _ = ROUTES["caught"]
    replica = f"primary.{topic}"
    monkeypatch.setenv("MIRRORFLOW_CONFIG", str(pair.config))
    _, dry = _dag_run(route="caught", dry_run=True)
    assert dry["status"] == "dry-run" and dry["run_id"] is None
    assert pair.rows("select count(*) from mf_failover_run where route = 'caught'") == [(0,)]
    assert committed(pair.b, "caught-app", replica, partitions) in ({}, {p: -1 for p in range(partitions)})

    busy = Consumer({"bootstrap.servers": pair.b, "group.id": "caught-busy", "group.protocol": "consumer",
                     "auto.offset.reset": "earliest", "enable.auto.commit": "false"})
    try:
        busy.subscribe([replica])
        while not busy.assignment():
            busy.poll(0.2)
        busy.commit(offsets=[TopicPartition(replica, 0, 1)], asynchronous=False)
        began = dt.datetime.now(dt.UTC)
        _, run = _dag_run(route="caught")
        took = (dt.datetime.now(dt.UTC) - began).total_seconds()
        assert committed(pair.b, "caught-busy", replica, 1) == {0: 1}, "a group with a member was overwritten"
    finally:
        leave_group(busy)
    assert run["status"] == "done" and run["source_reachable"] is False
    assert [(s["step"], s["status"]) for s in run["steps"]] == [
        ("check-source", "done"), ("fence", "skipped"), ("drain", "skipped"), ("stop-route", "done"),
        ("final-checkpoint", "skipped"), ("commit-offsets", "done"), ("verify", "done"), ("finish", "done")]
    assert run["rpo"] == {"records": 0, "basis": "last-checkpoint", "as_of": run["rpo"]["as_of"], "partitions": [],
                          "open_transactions": []}
    assert 0 < run["rto_seconds"] <= took
    assert {c["point"]["group"]: c["outcome"] for c in run["commits"]} == {"caught-app": "written",
                                                                           "caught-busy": "active-members"}
    assert "group caught-busy: left as it is on 'backup'" in run["next_steps"]
    print(f"failover DAG, source lost: RTO {run['rto_seconds']:.1f} s (dag.test {took:.1f} s)")

    resumed = resume_on_target(pair.b, "caught-app", replica, partitions)
    for p in range(partitions):
        expected = [rec for offset, rec in lost.caught[p] if offset >= lost.caught_commits.get(p, 0)]
        assert resumed[p] == expected, f"partition {p}: records lost or repeated"
    assert pair.rows("select status, rto_seconds, rpo_records from mf_failover_run where route = 'caught'") == [
        ("done", run["rto_seconds"], 0)]
    refused = _run_route(pair, "caught")
    assert refused.returncode == 2 and f"failover run {run['run_id']}" in refused.stderr, refused.stderr


def test_group_checkpointed_while_the_route_lagged_skips_nothing_and_repeats_at_most_the_bound(  # type: ignore[no-untyped-def]
        pair: Pair, lost: Lost, airflow_db, monkeypatch) -> None:
    topic, partitions, _ = ROUTES["lagging"]
    monkeypatch.setenv("MIRRORFLOW_CONFIG", str(pair.config))
    _, run = _dag_run(route="lagging")
    bound = {c["point"]["partition"]: c["point"]["max_repeats"] for c in run["commits"]}
    assert bound[0] == lost.lagging_commits[0] - lost.lagging_route_end[0] > 0 and bound[1] == 0
    assert run["rpo"]["records"] == bound[0] and run["rpo"]["basis"] == "last-checkpoint"
    assert f"at most {bound[0]} records may be read again" in run["next_steps"]

    resumed = resume_on_target(pair.b, "lagging-app", f"primary.{topic}", partitions)
    for p in range(partitions):
        unread = [rec for offset, rec in lost.lagging[p] if offset >= lost.lagging_commits[p]]
        repeated = resumed[p][: len(resumed[p]) - len(unread)]
        assert resumed[p][len(repeated):] == unread, f"partition {p}: a record the group never read was skipped"
        start = min(lost.lagging_route_end[p], lost.lagging_commits[p])
        assert repeated == [rec for offset, rec in lost.lagging[p] if start <= offset < lost.lagging_commits[p]]
        assert len(repeated) <= bound[p], f"partition {p}: more repeats than reported"
    assert len(resumed[0]) > len([o for o, _ in lost.lagging[0] if o >= lost.lagging_commits[0]]), "no repeat?"


def test_group_never_checkpointed_resumes_by_timestamp_and_the_route_is_held_until_released(
        pair: Pair, lost: Lost) -> None:
    topic, _, _ = ROUTES["stamp"]
    at = dt.datetime.fromtimestamp(lost.stamp[12].timestamp / 1000, dt.UTC).isoformat()
    done = _failover(pair, "--route", "stamp", "--mode", "timestamp", "--group", "stamp-app", "--at", at,
                     "--margin", "2s", "--json")
    assert done.returncode == 0, done.stderr
    run = json.loads(done.stdout)
    assert [(c["point"]["basis"], c["point"]["target_offset"], c["outcome"]) for c in run["commits"]] == [
        ("timestamp", 10, "written")]  # 2 s before the 13th record: the 11th
    assert run["rpo"]["basis"] == "unknown" and "taken as given" in " ".join(run["notes"])
    resumed = resume_on_target(pair.b, "stamp-app", f"primary.{topic}", 1)
    assert resumed[0] == lost.stamp[10:]  # records 10 and 11 again (the margin), none skipped
    refused = _run_route(pair, "stamp")
    assert refused.returncode == 2 and f"failover run {run['run_id']}" in refused.stderr

    released = _failover(pair, "--route", "stamp", "--release")
    assert released.returncode == 0 and f"released from failover run(s) {run['run_id']}" in released.stdout
    assert pair.rows("select released_at is not null from mf_failover_run where route = 'stamp'") == [(1,)]
    assert end_offsets(pair.b, f"primary.{topic}", 1) == {0: 30}


# -- failback ------------------------------------------------------------------

ORIGIN = ("mirrorflow.origin", b"backup")  # the reverse route stamps what was born on backup


def _read_on(bootstrap: str, group: str, topic: str, counts: dict[int, int]) -> dict[int, int]:
    """``group`` reads ``counts[p]`` more records from its committed offsets (an application on) and commits."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": "false",
                         "isolation.level": "read_committed"})
    try:
        start = {tp.partition: tp.offset for tp in consumer.committed([TopicPartition(topic, p) for p in counts],
                                                                     timeout=30)}
        wanted = {p: n for p, n in counts.items() if n}
        consumer.assign([TopicPartition(topic, p, start[p]) for p in wanted])
        taken, last = dict.fromkeys(wanted, 0), dict(start)
        while any(taken[p] < n for p, n in wanted.items()):
            for msg in consumer.consume(100, 0.5):
                assert msg.error() is None, msg.error()
                if taken[msg.partition()] < wanted[msg.partition()]:
                    taken[msg.partition()] += 1
                    last[msg.partition()] = msg.offset() + 1
        consumer.commit(offsets=[TopicPartition(topic, p, o) for p, o in last.items()], asynchronous=False)
        return last
    finally:
        consumer.close()


def _failback_dag(**conf: object) -> dict[str, Any]:
    from airflow.dag_processing.dagbag import DagBag

    dag = DagBag(dag_folder=str(DAGS)).get_dag("mirrorflow_failback")
    run = dag.test(run_conf=conf)
    tis = {ti.task_id: ti for ti in run.get_task_instances()}
    assert run.state == "success", {k: t.state for k, t in tis.items()}
    return tis["finish"].xcom_pull(task_ids="finish")  # type: ignore[no-any-return]


def _failback(pair: Pair, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([MIRRORFLOW, "failback", "--config", str(pair.config), *args], capture_output=True,
                          text=True, timeout=300, check=False)


def _records(source: dict[int, list[tuple[int, Rec]]]) -> dict[int, list[Rec]]:
    return {p: [rec for _, rec in recs] for p, recs in source.items()}


def _stamped(rec: Rec) -> Rec:
    return Rec(rec.partition, rec.key, rec.value, (*rec.headers, ORIGIN), rec.timestamp)


def test_incremental_failback_brings_back_what_was_written_on_backup_and_the_groups_exactly(  # type: ignore[no-untyped-def]
        pair: Pair, airflow_db, monkeypatch) -> None:
    from tests.records import by_partition, make_records

    topic, partitions, _ = ROUTES["inc"]
    replica = f"primary.{topic}"
    monkeypatch.setenv("MIRRORFLOW_CONFIG", str(pair.config))
    pair.up()
    refused = _failback(pair, "--route", "inc")  # not failed over: nothing to fail back, nothing stored
    assert refused.returncode == 2 and "route inc is not failed over" in refused.stderr, refused.stderr
    write_batch(pair.p, topic, partitions, "one")  # with transactions: gaps on primary, none on the replica
    before = _records(read_source(pair.p, topic, partitions))
    consume_part(pair.p, "inc-app", topic, {0: 5, 1: 9})
    _copy(pair, "inc", read_source(pair.p, topic, partitions))
    assert {r["status"] for r in checkpoint_json(pair.config, "--route", "inc")["checkpoints"]} == {"exact"}
    pair.primary.stop()  # the disaster
    over = _failover(pair, "--route", "inc", "--json")
    assert over.returncode == 0, over.stderr

    # The applications run on backup, as the failover said: producers write to a topic of the original name,
    # the group reads the replica on, then that topic (partition 0: the replica to its end and 3 new records;
    # partition 1: not even to the end of what came from primary).
    after = by_partition(make_records(partitions, 8, "after-failover"), partitions)
    create_topics(pair.b, {topic: partitions})
    produce(pair.b, topic, [r for p in range(partitions) for r in after[p]])
    on_backup = _read_on(pair.b, "inc-app", replica, {0: len(before[0]) - 5, 1: 4})
    consume_part(pair.b, "inc-app", topic, {0: 3})
    pair.up()  # primary is back, with records its route never copied (written just before it went down)
    stragglers = by_partition(make_records(partitions, 2, "never-copied"), partitions)
    produce(pair.p, topic, [r for p in range(partitions) for r in stragglers[p]])

    unknown = _failback(pair, "--route", "inc", "--group", "nobody-here")
    assert unknown.returncode == 2 and "no consumer group 'nobody-here' on 'backup'" in unknown.stderr
    dry = _failback_dag(route="inc", dry_run=True)
    assert dry["status"] == "dry-run" and pair.rows("select count(*) from mf_failback_run") == [(0,)]
    run = _failback_dag(route="inc")
    assert run["status"] == "done", run
    assert [(s["step"], s["status"]) for s in run["steps"]] == [
        (s, "skipped" if s == "fence" else "done") for s in ("check", "prepare", "reverse-copy", "fence", "drain",
                                                             "translate", "commit-offsets", "verify", "release",
                                                             "finish")]
    assert run["copied"] == sum(len(r) for r in after.values()) and run["not_copied"] == 0
    assert run["unreplicated_records"] == 2 * partitions
    print(f"failback DAG, incremental: RTO {run['rto_seconds']:.1f} s, {run['copied']} records copied back")
    assert {(c["point"]["partition"], c["point"]["basis"], c["outcome"]) for c in run["commits"]} == {
        (0, "exact", "written"), (1, "exact", "written")}
    assert pair.rows("select status, mode, records_copied from mf_failback_run where route = 'inc'") == [
        ("done", "incremental", run["copied"])]

    # primary holds every record: its own, the stragglers, then what was written on backup (stamped).
    now = _records(read_source(pair.p, topic, partitions))
    for p in range(partitions):
        assert now[p] == before[p] + stragglers[p] + [_stamped(r) for r in after[p]], f"partition {p}"
    # The group resumes on primary right after the last record it read on backup.
    resumed = resume_on_target(pair.p, "inc-app", topic, partitions)
    assert resumed[0] == [_stamped(r) for r in after[0][3:]]  # it never saw the stragglers: they stay behind it
    assert resumed[1] == before[1][9 + 4:] + stragglers[1] + [_stamped(r) for r in after[1]]
    assert on_backup[1] == 9 + 4

    # The route runs again: the stragglers reach backup, what came from backup does not go back.
    worker = Worker(pair.config, "inc", log_dir=pair.home)
    try:
        wanted = {p: len(before[p]) + len(stragglers[p]) for p in range(partitions)}
        wait_until(lambda: end_offsets(pair.b, replica, partitions) == wanted, 60, "the stragglers on backup")
        on_primary = read_source(pair.p, topic, partitions)
        last = {p: max(o for o, rec in on_primary[p] if rec in stragglers[p]) + 1 for p in range(partitions)}
        wait_until(lambda: committed(pair.p, "mirrorflow-inc", topic, partitions) == last, 30,
                   "route inc to commit the stragglers")  # the records from backup after them are skipped
    finally:
        assert worker.terminate()[0] == 0
    mirrored = _records(read_source(pair.b, replica, partitions))
    for p in range(partitions):
        assert mirrored[p] == before[p] + stragglers[p], f"replica partition {p}"
    assert _records(read_source(pair.b, topic, partitions)) == after  # as the applications wrote it


def test_resync_failback_recreates_primary_from_backup_and_refuses_to_drop_records_unasked(pair: Pair) -> None:
    from tests.records import by_partition, make_records

    topic, partitions, _ = ROUTES["res"]
    replica = f"primary.{topic}"
    pair.up()
    write_batch(pair.p, topic, partitions, "one")
    consume_part(pair.p, "res-app", topic, {0: 7, 1: 2})
    _copy(pair, "res", read_source(pair.p, topic, partitions))
    assert checkpoint_json(pair.config, "--route", "res")["status"] == "ok"
    over = _failover(pair, "--route", "res", "--drain-timeout", "10")
    assert over.returncode == 0, over.stderr

    after = by_partition(make_records(partitions, 6, "on-backup"), partitions)
    produce(pair.b, replica, [r for p in range(partitions) for r in after[p]])
    _read_on(pair.b, "res-app", replica, {0: 3, 1: 1})
    produce(pair.p, topic, [Rec(0, b"late", b"never copied", (), BASE_TS)])  # only on primary

    dry = _failback(pair, "--route", "res", "--mode", "resync", "--dry-run")
    assert dry.returncode == 1 and "1 offsets of 'primary' never reached 'backup'" in dry.stderr, dry.stderr
    refused = _failback(pair, "--route", "res", "--mode", "resync")
    assert refused.returncode == 1 and "add --accept-loss" in refused.stderr and "Traceback" not in refused.stderr
    assert end_offsets(pair.p, topic, partitions)[0] > 0, "a refused resync deleted the topic"
    done = _failback(pair, "--route", "res", "--mode", "resync", "--accept-loss", "--json")
    assert done.returncode == 0, done.stderr
    run = json.loads(done.stdout)
    assert "resuming failback run" in done.stderr and run["status"] == "done"
    print(f"failback CLI, resync: RTO {run['rto_seconds']:.1f} s, {run['copied']} records copied back")
    assert [c["point"]["basis"] for c in run["commits"]] == ["exact", "exact"]

    # primary holds exactly what backup holds, record for record (headers as written, no origin stamp).
    copy = _records(read_source(pair.b, replica, partitions))
    assert _records(read_source(pair.p, topic, partitions)) == copy
    resumed = resume_on_target(pair.p, "res-app", topic, partitions)
    for p, read in {0: 7 + 3, 1: 2 + 1}.items():
        assert resumed[p] == copy[p][read:], f"partition {p}"

    # The route runs again from the ends of the recreated topics: nothing goes back to backup twice.
    worker = Worker(pair.config, "res", log_dir=pair.home)
    try:
        produce(pair.p, topic, [Rec(1, b"home", b"again", (), BASE_TS)])
        wait_caught_up(pair.p, "res", topic, read_source(pair.p, topic, partitions))
    finally:
        assert worker.terminate()[0] == 0
    again = _records(read_source(pair.b, replica, partitions))
    assert again == {0: copy[0], 1: [*copy[1], Rec(1, b"home", b"again", (), BASE_TS)]}


def test_incremental_failback_of_an_identity_route_skips_what_came_from_primary_by_its_origin(pair: Pair) -> None:
    from tests.records import by_partition, make_records

    topic, partitions, _ = ROUTES["ident"]  # the same name on both clusters
    pair.up()
    write_batch(pair.p, topic, partitions, "one")
    before = _records(read_source(pair.p, topic, partitions))
    consume_part(pair.p, "ident-app", topic, {0: 4, 1: 6})
    _copy(pair, "ident", read_source(pair.p, topic, partitions))
    assert checkpoint_json(pair.config, "--route", "ident")["status"] == "ok"
    over = _failover(pair, "--route", "ident", "--drain-timeout", "10")
    assert over.returncode == 0, over.stderr

    after = by_partition(make_records(partitions, 5, "ident-after"), partitions)
    produce(pair.b, topic, [r for p in range(partitions) for r in after[p]])  # the applications, same topic
    _read_on(pair.b, "ident-app", topic, {0: len(before[0]) - 4 + 2, 1: 3})
    stragglers = by_partition(make_records(partitions, 1, "ident-late"), partitions)
    produce(pair.p, topic, [r for p in range(partitions) for r in stragglers[p]])

    done = _failback(pair, "--route", "ident", "--json")
    assert done.returncode == 0, done.stderr
    run = json.loads(done.stdout)
    assert run["copied"] == sum(map(len, after.values())) and run["unreplicated_records"] == partitions
    now = _records(read_source(pair.p, topic, partitions))
    for p in range(partitions):  # no record of primary came back twice, though its copies sit on backup too
        assert now[p] == before[p] + stragglers[p] + [_stamped(r) for r in after[p]], f"partition {p}"
    resumed = resume_on_target(pair.p, "ident-app", topic, partitions)
    assert resumed[0] == [_stamped(r) for r in after[0][2:]]
    assert resumed[1] == before[1][6 + 3:] + stragglers[1] + [_stamped(r) for r in after[1]]


def test_incremental_failback_of_an_exactly_once_route_then_its_copy_repeat_nothing(pair: Pair) -> None:
    """An exactly-once route failed over (planned) and back (incremental): the group resumes on primary right
    after the last record it read on backup; the route, run again, copies what primary got meanwhile once each
    (as read_committed readers of the replica see it) and nothing that came back from backup."""
    from tests.kafka_io import read_committed
    from tests.records import by_partition, make_records

    topic, partitions, _ = ROUTES["eosb"]
    replica = f"primary.{topic}"
    pair.up()
    write_batch(pair.p, topic, partitions, "one")
    before = _records(read_source(pair.p, topic, partitions))
    consume_part(pair.p, "eosb-app", topic, {0: 4, 1: 6})
    _copy(pair, "eosb", read_source(pair.p, topic, partitions))
    over = _failover(pair, "--route", "eosb", "--drain-timeout", "30")
    assert over.returncode == 0, over.stderr

    after = by_partition(make_records(partitions, 5, "eosb-after"), partitions)
    create_topics(pair.b, {topic: partitions})  # the applications write to a topic of the original name
    produce(pair.b, topic, [r for p in range(partitions) for r in after[p]])
    _read_on(pair.b, "eosb-app", replica, {0: len(before[0]) - 4, 1: 2})  # partition 0: to the replica's end
    consume_part(pair.b, "eosb-app", topic, {0: 3})
    stragglers = by_partition(make_records(partitions, 2, "eosb-late"), partitions)
    produce(pair.p, topic, [r for p in range(partitions) for r in stragglers[p]])  # never copied before

    done = _failback(pair, "--route", "eosb", "--json")
    assert done.returncode == 0, done.stderr
    run = json.loads(done.stdout)
    assert run["status"] == "done" and run["copied"] == sum(map(len, after.values()))
    assert run["unreplicated_records"] == 2 * partitions
    assert {(c["point"]["partition"], c["point"]["basis"], c["outcome"]) for c in run["commits"]} == {
        (0, "exact", "written"), (1, "exact", "written")}
    now = _records(read_source(pair.p, topic, partitions))
    for p in range(partitions):
        assert now[p] == before[p] + stragglers[p] + [_stamped(r) for r in after[p]], f"partition {p}"
    resumed = resume_on_target(pair.p, "eosb-app", topic, partitions)
    assert resumed[0] == [_stamped(r) for r in after[0][3:]]
    assert resumed[1] == before[1][6 + 2:] + stragglers[1] + [_stamped(r) for r in after[1]]

    worker = Worker(pair.config, "eosb", log_dir=pair.home)
    try:
        wanted = {p: before[p] + stragglers[p] for p in range(partitions)}
        wait_until(lambda: {p: len(r) for p, r in read_committed(pair.b, replica, partitions).items()}
                   == {p: len(r) for p, r in wanted.items()}, 60, "the stragglers on backup")
        on_primary = read_source(pair.p, topic, partitions)
        last = {p: max(o for o, rec in on_primary[p] if rec in stragglers[p]) + 1 for p in range(partitions)}
        wait_until(lambda: committed(pair.p, "mirrorflow-eosb", topic, partitions) == last, 30,
                   "route eosb to commit the stragglers")  # the records from backup after them are skipped
    finally:
        assert worker.terminate()[0] == 0
    assert "Traceback" not in worker.output()
    assert read_committed(pair.b, replica, partitions) == wanted  # once each, in order, nothing from backup
