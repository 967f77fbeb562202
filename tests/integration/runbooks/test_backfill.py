"""Backfills on the real clusters with a real local Spark: records written before a `start: latest` route
began arrive on the replica exactly once, byte-exact, after the route's own copies, and audit clean; a
backfill reaching into what the route copied is refused unless allowed, and so is the same backfill
again (nothing more is copied; the first run is in the state DB, done, with its count).

One Spark session for the module (its start-up is the cost).
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Iterator

import pytest

from replicator.cli.main import main
from replicator.config import load_config
from replicator.domain.backfill_run import BackfillMode, BackfillStatus, PartitionRange
from replicator.errors import UsageError
from replicator.runbooks.backfill import run_backfill
from replicator.runbooks.backfill.run import backfill_spec
from replicator.state.backfills import runs
from replicator.state.store import StateStore
from tests.kafka_io import Rec, read_all
from tests.late_route import LateRoute, started_late
from tests.support import module_spark

pytestmark = pytest.mark.spark

PARTITIONS, OLD, NEW = 2, 12, 5
NOW = int(time.time() * 1000)
OLD_START = NOW - 2 * 3_600_000


def _iso(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC).isoformat()


def _record(p: int, n: int, first_ms: int, tag: str) -> Rec:
    """Null keys, tombstones, empty values, binary and repeated and null headers, a non-ASCII header name."""
    headers: tuple[tuple[str, bytes | None], ...] = (
        (), (("h", b"1"), ("ключ", None), ("h", b"")), (("bin", b"\x00\xff"),))[n % 3]
    value = None if n % 7 == 3 else b"" if n % 5 == 4 else f"{tag}{p}-{n}".encode() + b"\x00\xff"
    return Rec(p, None if n % 4 == 1 else f"k{p}-{n}".encode(), value, headers, first_ms + 1_000 * n + 7 * p)


@pytest.fixture(scope="module")
def spark() -> Iterator[object]:
    """The module's one local Spark session, its JVM stopped at the end."""
    with module_spark("mirrorflow-backfill-tests") as session:
        yield session


@pytest.fixture(scope="module")
def scenario(primary, backup, tmp_path_factory: pytest.TempPathFactory) -> LateRoute:  # type: ignore[no-untyped-def]
    work = tmp_path_factory.mktemp("backfill")
    topic, route = f"t-backfill-{work.name[-6:]}-{int(time.time())}", "bf"
    old = {p: [_record(p, n, OLD_START, "old") for n in range(OLD)] for p in range(PARTITIONS)}
    new = {p: [_record(p, n, NOW, "new") for n in range(NEW)] for p in range(PARTITIONS)}
    late = started_late(primary.bootstrap_servers, backup.bootstrap_servers, work, topic, route, old, new)
    assert read_all(backup.bootstrap_servers, late.replica, PARTITIONS) == new  # the old ones are not there
    return late


def test_a_range_reaching_into_the_routes_copies_is_refused_unless_allowed(scenario: LateRoute) -> None:
    with pytest.raises(UsageError) as refused:
        backfill_spec(scenario.config, scenario.route, scenario.topic, offsets={0: (0, OLD + 2), 1: (0, OLD)})
    message = str(refused.value)
    assert f"backfill of {scenario.topic} refused: partition 0: offsets 0-{OLD + 2}" in message
    assert f"from offset {OLD} on" in message and "--overlap-ok" in message and "partition 1" not in message
    allowed = backfill_spec(scenario.config, scenario.route, scenario.topic, offsets={0: (0, OLD + 2)},
                            overlap_ok=True)
    assert [(r.partition, r.start, r.end) for r in allowed.ranges] == [(0, 0, OLD + 2)]
    with pytest.raises(UsageError, match=r"partition 1: offsets 0-99 are not within 0-17"):
        backfill_spec(scenario.config, scenario.route, scenario.topic, offsets={1: (0, 99)})
    by_time = backfill_spec(scenario.config, scenario.route, scenario.topic, _iso(OLD_START - 60_000), "now")
    assert [(r.partition, r.start, r.end, r.clamped) for r in by_time.ranges] == [
        (p, 0, OLD, True) for p in range(PARTITIONS)]  # cut where the route began, not refused


def test_backfill_of_the_earlier_range_arrives_once_and_is_not_repeated(spark, scenario: LateRoute, backup,  # type: ignore[no-untyped-def]
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    lines: list[str] = []
    began = time.monotonic()
    summary = run_backfill(scenario.config, scenario.route, scenario.topic, _iso(OLD_START - 60_000), "now",
                           spark=spark, progress=lines.append)  # type: ignore[arg-type]
    print(f"backfill and its check took {time.monotonic() - began:.1f} s")
    assert summary["written"] == {str(p): OLD for p in range(PARTITIONS)} and summary["total"] == PARTITIONS * OLD
    assert (summary["first_ms"], summary["last_ms"]) == (OLD_START, OLD_START + 1_000 * (OLD - 1) + 7)
    assert any(f"{PARTITIONS * OLD} records, Spark UI http" in line for line in lines), lines
    assert f"backfill {scenario.topic}: {PARTITIONS * OLD} / {PARTITIONS * OLD} records written" in lines
    check = summary["check"]
    assert (check["missing"], check["duplicates"]) == (0, 0), check
    assert check["partitions"] == {str(p): {"source": OLD, "missing": 0, "duplicates": 0, "first_missing": []}
                                   for p in range(PARTITIONS)}
    assert summary["landed"] == {str(p): [NEW, NEW + OLD] for p in range(PARTITIONS)}
    replica = read_all(backup.bootstrap_servers, f"primary.{scenario.topic}", PARTITIONS)
    for p in range(PARTITIONS):  # the route's copies first, then the backfilled older records, each once
        assert replica[p] == scenario.new[p] + scenario.old[p], f"partition {p}"
    _the_same_backfill_again_is_refused_and_the_first_is_recorded(scenario, backup, summary["run_key"], capsys)


def _the_same_backfill_again_is_refused_and_the_first_is_recorded(scenario: LateRoute, backup, key: str,  # type: ignore[no-untyped-def]
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """Run again (the CLI), the backfill is refused before any Spark job, naming the first run; nothing more
    reaches the replica; the first run is in mf_backfill_run, done, with its count."""
    code = main(["backfill", "--config", str(scenario.config), "--route", scenario.route, "--topic", scenario.topic,
                 "--from", _iso(OLD_START - 60_000), "--to", "now"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert (f"backfill of {scenario.topic} refused: partition 0: offsets 0-{OLD} were copied by backfill run {key}"
            f" (done, started ") in err and f"its offsets 0-{OLD}); partition 1: offsets 0-{OLD}" in err, err
    assert "pass overlap_ok (--overlap-ok) to copy them again anyway" in err
    replica = read_all(backup.bootstrap_servers, f"primary.{scenario.topic}", PARTITIONS)
    assert {p: len(replica[p]) for p in range(PARTITIONS)} == {p: NEW + OLD for p in range(PARTITIONS)}
    with StateStore(load_config(scenario.config, {}).state.url) as store:
        stored = store.run(lambda s: runs(s, scenario.route, scenario.topic))
    assert [(r.run_key, r.status, r.mode, r.written, r.total, r.overlap_ok, r.error) for r in stored] == [
        (key, BackfillStatus.DONE, BackfillMode.TIME, PARTITIONS * OLD, PARTITIONS * OLD, False, None)]
    assert stored[0].ranges == tuple(PartitionRange(p, 0, OLD, True) for p in range(PARTITIONS))
    assert stored[0].finished_at is not None and stored[0].finished_at >= stored[0].started_at


def test_the_check_names_records_not_where_the_copy_landed(spark, scenario: LateRoute, primary, backup) -> None:  # type: ignore[no-untyped-def]
    """Pointed at the route's own copies instead of the backfilled ones, the check finds every record missing."""
    from replicator.runbooks.backfill.run import BackfillIncomplete, judge
    from spark_jobs.backfill_check import check

    spec = backfill_spec(scenario.config, scenario.route, scenario.topic, offsets={0: (0, 4), 1: (2, 3)},
                         overlap_ok=True)
    options = [{"kafka.bootstrap.servers": c.bootstrap_servers} for c in (primary, backup)]
    found = check(spark, spec, {"0": [0, NEW], "1": [0, NEW]}, *options)  # type: ignore[arg-type]
    assert found["missing"] == 5 and found["partitions"]["0"]["first_missing"] == [0, 1, 2, 3]
    assert found["partitions"]["1"] == {"source": 1, "missing": 1, "duplicates": 0, "first_missing": [2]}
    with pytest.raises(BackfillIncomplete, match=rf"backfill of {scenario.topic}: 5 records missing on primary\."):
        judge({"run_key": "k", "route": scenario.route, "topic": scenario.topic, "check": found,
               "target_topic": f"primary.{scenario.topic}", "written": {}})
