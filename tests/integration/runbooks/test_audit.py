"""Audits on the real clusters with a real local Spark: a replica made by `mirrorflow run` audits clean,
a replica broken by hand is caught with the exact offsets, the route's unreplicated tail is pending.

One Spark session for the module (its start-up is the cost) and one replicated topic, made once.
"""

from __future__ import annotations

import datetime as dt
import json
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from replicator.domain.audit import record_digest
from replicator.domain.audit_report import AuditWindow
from replicator.domain.provenance import with_origin
from replicator.kafka.admin import create_topics
from replicator.runbooks.audit import AuditFailed, run_audit
from replicator.state import audits
from replicator.state.store import StateStore
from tests.kafka_io import Rec, committed, produce, read_all, wait_until
from tests.records import write_config
from tests.support import Worker, module_spark

pytestmark = pytest.mark.spark

PARTITIONS, OLD, IN_WINDOW, TAIL = 3, 2, 40, 3
STEP_MS = 15_000  # four records a minute: ten one-minute buckets per partition
START = (int(time.time() * 1000) - 3 * 3_600_000) // 60_000 * 60_000
END = START + STEP_MS * (IN_WINDOW + TAIL) + 60_000
BORN_ON_TARGET = (0, 5)  # (partition, n) of a record carrying mirrorflow.origin=backup: never copied


def _iso(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC).isoformat()


def _record(p: int, n: int) -> Rec:
    """Null keys, tombstones, empty values, binary, repeated and null headers, a non-ASCII header name."""
    headers: tuple[tuple[str, bytes | None], ...] = (
        (), (("h", b"1"), ("ключ", None), ("h", b"")), (("bin", b"\x00\xff"),))[n % 3]
    if (p, n) == BORN_ON_TARGET:
        headers = (("mirrorflow.origin", b"backup"),)
    elif (p, n) == (0, 6):
        headers = (("mirrorflow.origin", b"dc3"),)  # born elsewhere: copied with its origin untouched
    value = None if n % 13 == 0 else b"" if n % 11 == 0 else bytes([n % 256, 0, 255]) + b"v" * (n % 4)
    ts = START - 600_000 + n if n < 0 else START + STEP_MS * n + 100 * p
    return Rec(p, None if n % 9 == 0 else f"k{p}-{n}".encode(), value, headers, ts)


def _records(ns: range) -> list[Rec]:
    return [_record(p, n) for n in ns for p in range(PARTITIONS)]


@dataclass(frozen=True)
class Scenario:
    """A source topic replicated by a real worker up to offset 42 per partition, then 3 more records."""

    topic: str
    replica: str
    config: Path
    work: Path
    records: dict[tuple[int, int], Rec]  # (partition, source offset) -> record


@pytest.fixture(scope="module")
def spark() -> Iterator[object]:
    """The module's one local Spark session, its JVM stopped at the end."""
    with module_spark("mirrorflow-audit-tests") as session:
        yield session


@pytest.fixture(scope="module")
def scenario(primary, backup, tmp_path_factory: pytest.TempPathFactory) -> Scenario:  # type: ignore[no-untyped-def]
    work = tmp_path_factory.mktemp("audit")
    topic = f"t-audit-{uuid.uuid4().hex[:8]}"
    replica = f"{topic}.replica"
    create_topics(primary.bootstrap_servers, {topic: PARTITIONS})
    produce(primary.bootstrap_servers, topic, _records(range(-OLD, IN_WINDOW)))
    config = write_config(work / "m.yaml", primary.bootstrap_servers, backup.bootstrap_servers, [
        {"name": "p2b", "source": "primary", "target": "backup", "topics": [topic],
         "policy": {"mapping": {topic: replica}}}])  # a mapping route stamps an origin header on each copy
    worker = Worker(config, log_dir=work)
    try:
        done = {p: OLD + IN_WINDOW for p in range(PARTITIONS)}
        wait_until(lambda: committed(primary.bootstrap_servers, "mirrorflow-p2b", topic, PARTITIONS) == done,
                   120, "the route to commit every record")
    finally:
        code, _ = worker.terminate()
    assert code == 0, worker.output()[-2000:]
    produce(primary.bootstrap_servers, topic, _records(range(IN_WINDOW, IN_WINDOW + TAIL)))  # never replicated
    records = {(p, OLD + n): _record(p, n) for n in range(-OLD, IN_WINDOW + TAIL) for p in range(PARTITIONS)}
    return Scenario(topic, replica, config, work, records)


def test_spark_digests_are_the_domains(spark, scenario: Scenario, primary) -> None:  # type: ignore[no-untyped-def]
    from spark_jobs.audit import read_marks
    from spark_jobs.audit_frames import CopyRules

    window = AuditWindow(START, END, 60_000)
    options = {"kafka.bootstrap.servers": primary.bootstrap_servers}
    as_is = {(r["partition"], r["offset"]): r for r in
             read_marks(spark, options, scenario.topic, PARTITIONS, window).collect()}  # type: ignore[arg-type]
    inside = {k: r for k, r in scenario.records.items() if START <= r.timestamp < END}
    assert sorted(as_is) == sorted(inside)  # the two old records are outside the window
    for (p, offset), rec in inside.items():
        mark = as_is[(p, offset)]
        assert mark["digest"] == record_digest(rec.key, rec.value, rec.headers, rec.timestamp), (p, offset)
        assert (mark["timestamp_ms"], mark["bucket"]) == (rec.timestamp, rec.timestamp // 60_000 * 60_000)
        assert int(mark["weight"]) == int(mark["digest"][:15], 16)
    rules = CopyRules("primary", "backup", stamps_origin=True)
    copied = {(r["partition"], r["offset"]): r["digest"] for r in
              read_marks(spark, options, scenario.topic, PARTITIONS, window, rules).collect()}  # type: ignore[arg-type]
    born_on_target = (BORN_ON_TARGET[0], OLD + BORN_ON_TARGET[1])
    assert sorted(copied) == sorted(set(inside) - {born_on_target})
    for key, digest in copied.items():
        rec = inside[key]
        stamped = with_origin(list(rec.headers) or None, "primary")
        assert digest == record_digest(rec.key, rec.value, stamped, rec.timestamp), key


def test_a_replica_made_by_the_route_audits_clean_and_its_tail_is_pending(spark, scenario: Scenario) -> None:  # type: ignore[no-untyped-def]
    began = time.monotonic()
    summary = run_audit(scenario.config, "p2b", _iso(START), _iso(END), run_key="clean-1", spark=spark)  # type: ignore[arg-type]
    print(f"clean audit took {time.monotonic() - began:.1f} s")
    assert summary["status"] == "clean", summary["findings"]
    assert summary["counts"] == {"source": PARTITIONS * (IN_WINDOW + TAIL) - 1, "target": PARTITIONS * IN_WINDOW - 1,
                                 "pending": PARTITIONS * TAIL, "missing": 0, "duplicates": 0, "extra": 0}
    assert summary["topics"][scenario.topic]["replica"] == scenario.replica
    with StateStore(f"sqlite:///{scenario.work / 'state.db'}") as store:
        with store.session() as session:
            [run] = audits.audit_runs(session, "p2b")
            report = audits.audit_report(session, "clean-1")
    assert (run.run_key, run.status.value, run.counts.pending) == ("clean-1", "clean", PARTITIONS * TAIL)
    assert report is not None and len(report.results) == summary["buckets"] >= PARTITIONS * 10


def test_a_replica_made_by_an_exactly_once_route_audits_clean(spark, primary, backup, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The target has a commit marker after each transaction's records in each partition, and the worker reads
    read_committed positions: the audit finds every record once, offsets with markers between, the tail
    pending."""
    topic = f"t-audit-eos-{uuid.uuid4().hex[:8]}"
    create_topics(primary.bootstrap_servers, {topic: PARTITIONS})
    produce(primary.bootstrap_servers, topic, _records(range(-OLD, IN_WINDOW)))
    config = write_config(tmp_path / "m.yaml", primary.bootstrap_servers, backup.bootstrap_servers, [
        {"name": "p2bx", "source": "primary", "target": "backup", "topics": [topic],
         "policy": {"mapping": {topic: f"{topic}.replica"}}, "guarantee": "exactly-once",
         "transactions": {"max_records": 7}}])  # many transactions: markers all through the replica
    worker = Worker(config, log_dir=tmp_path)
    try:
        done = {p: OLD + IN_WINDOW for p in range(PARTITIONS)}
        wait_until(lambda: committed(primary.bootstrap_servers, "mirrorflow-p2bx", topic, PARTITIONS) == done,
                   120, "the route to commit every record")
    finally:
        code, _ = worker.terminate()
    assert code == 0, worker.output()[-2000:]
    produce(primary.bootstrap_servers, topic, _records(range(IN_WINDOW, IN_WINDOW + TAIL)))  # never replicated
    summary = run_audit(config, "p2bx", _iso(START), _iso(END), run_key="clean-eos", spark=spark)  # type: ignore[arg-type]
    assert summary["status"] == "clean", summary["findings"]
    assert summary["counts"] == {"source": PARTITIONS * (IN_WINDOW + TAIL) - 1, "target": PARTITIONS * IN_WINDOW - 1,
                                 "pending": PARTITIONS * TAIL, "missing": 0, "duplicates": 0, "extra": 0}


def _broken_replica(scenario: Scenario, backup) -> tuple[Path, int]:  # type: ignore[no-untyped-def]
    """A copy of the replica, by hand: one record lost, one twice, a foreign one, one tail record early."""
    handmade = f"{scenario.topic}.handmade"
    create_topics(backup.bootstrap_servers, {handmade: PARTITIONS})
    copy = read_all(backup.bootstrap_servers, scenario.replica, PARTITIONS)
    by_key = {p: [r.key for r in recs] for p, recs in copy.items()}
    lost = copy[0].pop(by_key[0].index(b"k0-10"))
    twice = copy[1][by_key[1].index(b"k1-20")]
    copy[1].insert(by_key[1].index(b"k1-20") + 1, twice)
    extra_at = by_key[2].index(b"k2-30") + 1
    copy[2].insert(extra_at, Rec(2, b"intruder", b"x", (), _record(2, 30).timestamp + 1))
    tail = scenario.records[(0, OLD + IN_WINDOW)]  # acknowledged by the target, not yet committed
    copy[0].append(replace(tail, headers=(*tail.headers, ("mirrorflow.origin", b"primary"))))
    assert lost.key == b"k0-10"
    produce(backup.bootstrap_servers, handmade, [r for p in range(PARTITIONS) for r in copy[p]])
    broken = scenario.work / "broken"
    broken.mkdir(exist_ok=True)
    settings = json.loads(scenario.config.read_text())
    settings["routes"][0]["policy"] = {"mapping": {scenario.topic: handmade}}
    settings["state"]["url"] = f"sqlite:///{broken / 'state.db'}"
    (broken / "m.yaml").write_text(json.dumps(settings))
    return broken / "m.yaml", extra_at


@pytest.fixture(scope="module")
def broken(scenario: Scenario, backup) -> tuple[Path, int]:  # type: ignore[no-untyped-def]
    """The config of route p2b pointed at the hand-broken replica, and the foreign record's offset."""
    return _broken_replica(scenario, backup)


def test_lost_duplicated_and_foreign_records_are_named_by_offset(spark, scenario: Scenario, broken) -> None:  # type: ignore[no-untyped-def]
    config, extra_at = broken
    with pytest.raises(AuditFailed) as caught:
        run_audit(config, "p2b", _iso(START), _iso(END), [scenario.topic], run_key="broken-1", spark=spark)
    summary = caught.value.summary
    assert summary["counts"] == {"source": PARTITIONS * (IN_WINDOW + TAIL) - 1, "target": PARTITIONS * IN_WINDOW + 1,
                                 "pending": PARTITIONS * TAIL - 1, "missing": 1, "duplicates": 1, "extra": 1}
    found = {(f["partition"], f["status"]): f for f in summary["findings"]}
    assert sorted(found) == [(0, "missing"), (1, "duplicates"), (2, "extra")]
    assert found[(0, "missing")]["missing"] == [[OLD + 10, OLD + 10]]
    assert found[(1, "duplicates")]["duplicated"] == [[OLD + 20, OLD + 20]]
    assert found[(2, "extra")]["extra"] == [[extra_at, extra_at]]
    assert found[(0, "missing")]["bucket_start"] == _iso(_record(0, 10).timestamp // 60_000 * 60_000)
    assert f"offsets {OLD + 10} (audit broken-1)" in str(caught.value)
    with StateStore(f"sqlite:///{config.parent / 'state.db'}") as store:
        with store.session() as session:
            report = audits.audit_report(session, "broken-1")
    assert report is not None and report.status.value == "missing"
    assert next((r.key.partition, r.status.value, str(r.missing[0]) if r.missing else None)
                for r in report.findings()) == (0, "missing", str(OLD + 10))


def test_the_command_prints_findings_and_exits_1_on_loss(spark, scenario: Scenario, broken,  # type: ignore[no-untyped-def]
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    from replicator.cli.main import main

    config, extra_at = broken
    window = ["--from", _iso(START), "--to", _iso(END)]
    assert main(["audit", "--config", str(config), "--route", "p2b", *window, "--topic", "nope"]) == 2
    assert "route p2b does not replicate 'nope'" in capsys.readouterr().err
    assert main(["audit", "--config", str(config), "--route", "p2b", *window]) == 1
    out, err = capsys.readouterr()
    assert "spark job started" in out and f"topic {scenario.topic} -> {scenario.topic}.handmade done" in out
    rows = {line.split()[1]: line for line in out.splitlines() if line.startswith(scenario.topic + "  ")}
    assert f"{OLD + 10} (1)" in rows["0"] and f"{OLD + 20} (1)" in rows["1"] and f"{extra_at} (1)" in rows["2"]
    assert "1 source records missing on the target" in err
    assert main(["audit", "--config", str(scenario.config), "--route", "p2b", *window, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["status"] == "clean"


def test_a_route_that_started_late_audits_clean_without_what_it_never_meant_to_copy(  # type: ignore[no-untyped-def]
        spark, primary, backup, tmp_path: Path) -> None:
    topic, partitions = f"t-late-{uuid.uuid4().hex[:8]}", 2
    create_topics(primary.bootstrap_servers, {topic: partitions})
    produce(primary.bootstrap_servers, topic,  # before the route: it starts at the end (start: latest)
            [Rec(p, f"early-{p}-{n}".encode(), b"early", (), START + 1_000 * n + p) for n in range(10)
             for p in range(partitions)])
    config = write_config(tmp_path / "m.yaml", primary.bootstrap_servers, backup.bootstrap_servers, [
        {"name": "late", "source": "primary", "target": "backup", "topics": [topic], "start": "latest",
         "policy": "prefix"}])
    worker = Worker(config, log_dir=tmp_path)
    try:
        n = 0

        def copying() -> bool:  # a record a second until the route copies on every partition
            nonlocal n
            produce(primary.bootstrap_servers, topic, [Rec(p, f"late-{p}-{n}".encode(), b"late", (),
                                                           START + 60_000 + 1_000 * n + p) for p in range(partitions)])
            n += 1
            now = committed(primary.bootstrap_servers, "mirrorflow-late", topic, partitions)
            return len(now) == partitions and min(now.values()) >= 0

        wait_until(copying, 60, "route late to copy")
        ends = {p: 10 + n for p in range(partitions)}
        wait_until(lambda: committed(primary.bootstrap_servers, "mirrorflow-late", topic, partitions) == ends, 60,
                   f"route late to commit every late record ({ends}; now "
                   f"{committed(primary.bootstrap_servers, 'mirrorflow-late', topic, partitions)})")
    finally:
        assert worker.terminate()[0] == 0
    summary = run_audit(config, "late", _iso(START), _iso(END), run_key="late-1", spark=spark)  # type: ignore[arg-type]
    assert summary["status"] == "clean", summary
    counts = summary["counts"]
    assert counts["missing"] == counts["extra"] == counts["duplicates"] == counts["pending"] == 0
    assert 0 < counts["source"] == counts["target"] < partitions * (10 + n)  # the early records are left out
    assert any(f"{topic}-0: source offsets 0-" in note for note in summary["notes"]), summary["notes"]
