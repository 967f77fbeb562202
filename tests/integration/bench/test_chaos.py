"""The fault harness's short form: every fault kind once, and every partition mover once in a pair with another
fault, on clusters of its own.

bench/chaos.py runs the long form (100 faults); this one injects each kind once, in an
order drawn from the seed (env MIRRORFLOW_CHAOS_SEED, default 11), with short holds, and
holds the route to its promise: nothing lost (except ranges it reported lost to retention,
exactly those), every record byte for byte, first copies in order per partition, no
traceback, no worker exit the harness did not cause. It starts its own two clusters
behind Toxiproxy (it freezes and kills brokers) and stops every process it started, also
when it fails; logs and the JSON report stay under the test's tmp_path.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest

from bench.chaoslib.context import Settings
from bench.chaoslib.faults import MOVERS, TROUBLES, choose_kinds
from bench.chaoslib.faults_workload import GAP_DELETED
from bench.chaoslib.run import RunResult, run
from replicator.dev.localpostgres import pg_bin

REPO = Path(__file__).resolve().parents[3]
TOXIPROXY = REPO / ".cache" / "bin" / "toxiproxy-server"

pytestmark = [pytest.mark.chaos, pytest.mark.kafka]


def test_every_record_survives_every_fault_kind(tmp_path: Path) -> None:
    """With records two days old (``--records-age 48``): the target's brokers forget the workers' producers on a
    partition within a second of each write (a backfill's case), so every batch meets the race of a producer's
    first through every fault. The other runs here copy records of now. And written in transactions
    (``--source-transactions``), as exactly-once applications write: one in five aborted, its records never to
    arrive (foreign if they did), and a producer that hangs with a transaction open (``source-txn-hang``)."""
    assert TOXIPROXY.exists(), f"{TOXIPROXY} is missing: `make toxiproxy` builds it (`make test` does)"
    state = "postgres" if pg_bin() else "sqlite"  # statedb-stop needs PostgreSQL
    kinds = choose_kinds([], state, transactions=True)
    result = run(dataclasses.replace(_settings(tmp_path, kinds, state), records_age_h=48.0,
                                     source_transactions=True), print)
    problems = _problems(result)
    assert not problems, f"logs in {result.work_dir}:\n" + "\n".join(problems)
    assert {o.kind for o in result.outcomes} >= set(kinds)
    assert result.final.reported_lost == GAP_DELETED  # the one retention gap, reported exactly
    assert result.final.produced > 1000
    assert result.final.transactions is not None and result.final.transactions[2] > 0  # records aborted


# The faults an exactly-once route answers with its own machinery (fencing, aborts, a new producer); the long
# form (bench/chaos.py --guarantee exactly-once) runs every kind.
EXACTLY_ONCE_KINDS = ("worker-kill", "worker-freeze", "worker-join", "workers-start-together", "target-kill",
                      "target-freeze", "net-partition", "source-txn-hang")


def test_an_exactly_once_route_shows_every_record_once_through_its_faults(tmp_path: Path) -> None:
    """A source written in transactions (one in five aborted), as the application an exactly-once route mirrors
    writes it: the route's own transactions on the target over the source's."""
    assert TOXIPROXY.exists(), f"{TOXIPROXY} is missing: `make toxiproxy` builds it (`make test` does)"
    result = run(dataclasses.replace(_settings(tmp_path, EXACTLY_ONCE_KINDS, "sqlite", guarantee="exactly-once"),
                                     source_transactions=True), print)
    problems = _problems(result)
    problems += [f"{result.final.duplicates} duplicates seen by a read_committed reader"] \
        if result.final.duplicates else []
    assert not problems, f"logs in {result.work_dir}:\n" + "\n".join(problems)
    assert {o.kind for o in result.outcomes} >= set(EXACTLY_ONCE_KINDS)
    assert result.final.produced > 1000


def test_every_record_survives_rebalances_in_the_middle_of_other_trouble(tmp_path: Path) -> None:
    """Every fault a pair (``--overlap``): each kind that moves partitions once, during a broker, network or
    state-DB fault drawn from the seed, healed inside it (a killed worker starts again into a frozen source)."""
    assert TOXIPROXY.exists(), f"{TOXIPROXY} is missing: `make toxiproxy` builds it (`make test` does)"
    kinds = choose_kinds([], "sqlite")
    result = run(_settings(tmp_path, kinds, "sqlite", cycles=len(MOVERS), overlap=True), print)
    problems = _problems(result)
    assert not problems, f"logs in {result.work_dir}:\n" + "\n".join(problems)
    pairs = [o.kind.split("+") for o in result.outcomes if o.kind != "start"]
    assert sorted(mover for mover, _ in pairs) == sorted(MOVERS) and {t for _, t in pairs} <= set(TROUBLES)
    assert result.final.produced > 1000


def _settings(tmp_path: Path, kinds: tuple[str, ...], state: str, guarantee: str = "at-least-once",
              cycles: int | None = None, overlap: bool = False) -> Settings:
    return Settings(cycles=cycles or len(kinds), seed=int(os.environ.get("MIRRORFLOW_CHAOS_SEED", "11")),
                    kinds=kinds, workers=2, topics=2, partitions=2, rate=100.0, fault_seconds=4.0, state=state,
                    toxiproxy=TOXIPROXY, report=tmp_path / "chaos.json", work_dir=tmp_path / "run",
                    settle_timeout=60.0, guarantee=guarantee, overlap=overlap)


def _problems(result: RunResult) -> list[str]:
    """What broke the route's promise: a loss, a change, a crash, an exit, a fault it did not recover from."""
    final = result.final
    problems = [f"worker {e.worker} exited on its own at {e.at_s:.0f}s, code {e.code}: {e.reason}"
                for e in final.exits if not e.expected]
    problems += [f"{final.lost} records lost, e.g. {', '.join(final.lost_examples[:3])}; the workers logged of their "
                 "partitions:", *final.lost_evidence] if final.lost else []
    problems += [f"traceback in {log}" for log in final.traceback_logs]
    problems += [f"harness: {error}" for error in final.harness_errors]
    problems += [f"retention report: {line}" for line in final.retention_differences]
    problems += [f"{name} {getattr(final, name)}" for name in ("mismatched", "out_of_order", "unexpected", "foreign")
                 if getattr(final, name)]
    problems += [f"#{o.index} {o.kind}: records did not flow again within the bound ({o.detail})"
                 for o in result.outcomes if o.flow_s is None]
    return problems
