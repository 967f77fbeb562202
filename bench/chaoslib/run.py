"""One fault run: set everything up, inject the faults one after another, account, tear down."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bench.chaoslib.check import Checker, healed
from bench.chaoslib.cluster import CLUSTER_NAMES, ProxiedCluster, start_clusters
from bench.chaoslib.context import ROUTE, TOPIC_PREFIX, Chaos, Injected, Settings
from bench.chaoslib.faults import Deck, PairDeck, fault_of
from bench.chaoslib.producer import Verifier
from bench.chaoslib.reader import TargetReader
from bench.chaoslib.report import FaultOutcome, Final, as_json, keeps_logs, summary
from bench.chaoslib.statedb import StateDb
from bench.chaoslib.supervisor import Supervisor
from bench.chaoslib.toxiproxy import ToxiproxyServer

REPO = Path(__file__).resolve().parents[2]
Progress = Callable[[str], None]


@dataclass(frozen=True)
class RunResult:
    """What a run found, and where its logs are (gone unless kept)."""

    outcomes: list[FaultOutcome]
    final: Final
    work_dir: Path
    kept: bool


def _worker_env() -> dict[str, str]:
    """The workers run this checkout's code, whatever the venv's editable install points at."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    return env


def _config(work: Path, sides: dict[str, ProxiedCluster], state_url: str, settings: Settings) -> Path:
    """The workers' mirrorflow.yaml: both clusters through their proxies, one route."""
    path = work / "mirrorflow.yaml"
    route: dict[str, Any] = {"name": ROUTE, "source": CLUSTER_NAMES["source"], "target": CLUSTER_NAMES["target"],
             "topics": [f"{TOPIC_PREFIX}.*"], "guarantee": settings.guarantee}
    if settings.producer_queue is not None:
        route["producer"] = {"queue.buffering.max.messages": str(settings.producer_queue)}
    path.write_text(json.dumps({  # JSON is YAML
        "clusters": {CLUSTER_NAMES[side]: {"bootstrap.servers": cluster.proxied} for side, cluster in sides.items()},
        "routes": [route],
        "state": {"url": state_url},
    }, indent=2))
    return path


def _setup(settings: Settings, work: Path, stack: contextlib.ExitStack, began: float) -> Chaos:
    toxiproxy = ToxiproxyServer(settings.toxiproxy, work / "toxiproxy.log")
    stack.callback(toxiproxy.stop)
    sides = start_clusters(work / "clusters", toxiproxy.client, settings.brokers,
                           forgetful=settings.records_age_h > 0)
    for cluster in sides.values():
        stack.callback(cluster.close)
    statedb = StateDb(settings.state, work / "state")
    stack.callback(lambda: statedb.close(keep=settings.keep))
    config = _config(work, sides, statedb.url, settings)
    verifier = Verifier(sides["source"].direct, settings.rate, settings.padding,
                        round(settings.records_age_h * 3_600_000), settings.source_transactions, settings.seed)
    stack.callback(verifier.stop)
    reader = TargetReader(sides["target"].direct)
    stack.callback(reader.stop)
    command = lambda worker: [sys.executable, "-m", "replicator.cli.main", "--log-level", "info", "run",  # noqa: E731
                              "--config", str(config), "--route", ROUTE, "--worker-id", worker]
    supervisor = Supervisor(command, _worker_env(), work, began)
    stack.callback(supervisor.shutdown)
    chaos = Chaos(settings, random.Random(settings.seed), sides, toxiproxy.client, supervisor, verifier, reader,
                  statedb, [f"w{n}" for n in range(1, settings.workers + 1)])
    for n in range(settings.topics):
        chaos.create_topic(f"{TOPIC_PREFIX}t{n}", settings.partitions)
    verifier.start()
    reader.start()
    return chaos


LARGE_DUPLICATES = 100  # a fault that repeated more names the partitions (the JSON report always does)


def _line(outcome: FaultOutcome, checker: Checker, cycles: int) -> str:
    exits = [f"{e.worker} exit {e.code}: {e.reason}" for e in outcome.exits if not e.expected]
    flow = "-" if outcome.flow_s is None else f"{outcome.flow_s:.1f}s"
    pause = "" if outcome.pause_s is None else f", pause {outcome.pause_s:.1f}s"
    pause += "" if outcome.wait_s is None else f", wait {outcome.wait_s:.1f}s"
    pause += "" if outcome.pause_others_s is None else f", others' pause {outcome.pause_others_s:.1f}s"
    settle = "NOT SETTLED" if outcome.settle_s is None else f"{outcome.settle_s:.1f}s"
    return (f"#{outcome.index}/{cycles} {outcome.kind} side={outcome.side or '-'} {outcome.duration_s:.1f}s "
            f"({outcome.detail}): settled {settle}, flow {flow}{pause}, "
            f"missing {outcome.missing} (total {len(checker.lost)}), "
            f"dups +{outcome.duplicates} (total {checker.duplicates})"
            + (f" [{', '.join(f'{s} +{n}' for s, n in outcome.duplicates_by_partition)}]"
               if outcome.duplicates >= LARGE_DUPLICATES else "")
            + (f" (the harness's reader stood still and was made anew {outcome.reader_renewed}x)"
               if outcome.reader_renewed else "")
            + (" TRACEBACK" if outcome.traceback else "") + "".join(f"\n    {e}" for e in exits))


def _one_fault(chaos: Chaos, checker: Checker, index: int, kind: str) -> FaultOutcome:
    exits_before, began = len(chaos.supervisor.exits), time.monotonic()
    try:
        injected = fault_of(kind)(chaos)
    except Exception as exc:  # noqa: BLE001 - a fault that could not be injected is reported, the run goes on
        checker.errors.append(f"#{index} {kind}: inject: {type(exc).__name__}: {exc}")
        chaos.proxies.reset()
        injected = Injected(None, f"ERROR: {exc}", 0.0)
    chaos.stand(injected.hold_s)
    try:
        injected.heal()
    except Exception as exc:  # noqa: BLE001
        checker.errors.append(f"#{index} {kind}: heal: {type(exc).__name__}: {exc}")
    heal = healed(chaos)
    return checker.outcome(index, kind, injected, heal.at - began, heal, exits_before, began)


def run(settings: Settings, progress: Progress) -> RunResult:
    """The whole run; every process it started is stopped before it returns or raises."""
    work = settings.work_dir or Path(tempfile.mkdtemp(prefix="mirrorflow-chaos-"))
    work.mkdir(parents=True, exist_ok=True)
    began, outcomes, final = time.monotonic(), list[FaultOutcome](), None
    progress(f"seed {settings.seed}: {settings.cycles} faults of {', '.join(settings.kinds)}; logs in {work}")
    try:
        with contextlib.ExitStack() as stack:
            chaos = _setup(settings, work, stack, began)
            checker = Checker(chaos, began)
            chaos.supervisor.start(*chaos.workers)  # together, on a fresh state DB
            start = Injected(None, f"{settings.workers} workers started together on a fresh state DB", 0.0)
            outcomes.append(checker.outcome(0, "start", start, 0.0, healed(chaos), 0, time.monotonic()))
            progress(_line(outcomes[-1], checker, settings.cycles))
            deck = PairDeck(settings.kinds, chaos.rng) if settings.overlap else Deck(settings.kinds, chaos.rng)
            for index in range(1, settings.cycles + 1):
                outcomes.append(_one_fault(chaos, checker, index, deck.draw()))
                progress(_line(outcomes[-1], checker, settings.cycles))
            chaos.verifier.stop()
            final = checker.final(settings.seed)
            still = checker.still_lost(checker.final_lost)
            outcomes = [dataclasses.replace(o, lost=still.get(o.index, 0)) for o in outcomes]
    finally:
        kept = keeps_logs(final, settings.keep)
        if not kept and settings.work_dir is None:
            shutil.rmtree(work, ignore_errors=True)
    result = RunResult(outcomes, final, work, kept)
    if settings.report is not None:
        document = as_json({**asdict(settings), "toxiproxy": str(settings.toxiproxy),
                            "report": str(settings.report), "work_dir": str(work)}, outcomes, final)
        settings.report.write_text(json.dumps(document, indent=2, default=str))
    progress("\n" + summary(final, outcomes) + (f"\nlogs kept in {work}" if kept else ""))
    return result
