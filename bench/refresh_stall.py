#!/usr/bin/env python
"""Refresh stall: how long the worker's topic refresh keeps the copy loop's thread from running, told apart
from the machine being busy.

Run from the repository root::

    .venv/bin/python bench/refresh_stall.py --topics 2000 --partitions 1 [--looks 20] [--report stall.json]
    .venv/bin/python bench/refresh_stall.py --quick        # 200 topics x 4, 10 looks

The refresh runs in a thread of its own beside the copy loop, and shares the interpreter's lock (the GIL)
with it. A loop turn measured inside a busy worker mixes three causes: the GIL held by the refresh, the two
brokers and the load taking the cores, and the loop's own work. This bench separates them. On two fresh
single-node clusters with the shape's topics (and their replicas, made by a first look), it runs the
worker's own look at the topics (``Subscription.start_look``, as the loop starts it: the metadata, the
topic ids, the owned partitions' ends) one after the other, while two tickers sleep 1 ms in a loop and
record their longest gap per look:

- one **thread in the same process**: it waits for the GIL, as the copy loop does;
- one **other process**: it waits only for a core.

A gap the thread sees and the process does not is the GIL's. After each look, a window of the same length
without any gives the machine's own gaps. The interpreter is set up as ``mirrorflow run`` sets up its own
(``replicator.worker.interpreter``: the GIL's switch interval, start-up's heap frozen; ``--no-freeze`` leaves
the heap as it was before that), and the cycle collector's pauses are timed too. Figures only: nothing here
asserts a time.
"""

from __future__ import annotations

import gc
import json
import multiprocessing
import os
import sys
import tempfile
import threading
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from procs import bench_parser, create_topics, percentile, progress, run_bench, start_clusters, tear_down  # noqa: E402

TICK_S = 0.001


class _ThreadTicker:
    """Sleeps ``TICK_S`` in a loop in a thread of this process; ``worst()`` is its longest gap since the last call."""

    def __init__(self) -> None:
        self._worst, self._stop = 0.0, threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="ticker", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        last = time.perf_counter()
        while not self._stop.is_set():
            time.sleep(TICK_S)
            now = time.perf_counter()
            with self._lock:
                self._worst = max(self._worst, now - last)
            last = now

    def worst(self) -> float:
        with self._lock:
            worst, self._worst = self._worst, 0.0
        return worst

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)


def _tick_in_process(conn: Connection) -> None:
    """The other process's ticker: answers "worst" with its longest gap since the last ask, ends on "stop"."""
    worst, last = 0.0, time.perf_counter()
    while True:
        if conn.poll():
            if conn.recv() == "stop":
                return
            conn.send(worst)
            worst = 0.0
        time.sleep(TICK_S)
        now = time.perf_counter()
        worst, last = max(worst, now - last), now


class _ProcessTicker:
    def __init__(self) -> None:
        self._conn, child = multiprocessing.Pipe()
        self._process = multiprocessing.Process(target=_tick_in_process, args=(child,), daemon=True)
        self._process.start()

    def worst(self) -> float:
        self._conn.send("worst")
        return float(self._conn.recv())

    def stop(self) -> None:
        self._conn.send("stop")
        self._process.join(5)


def _subscription(work: Path, source: str, target: str, pattern: str) -> Any:
    """The worker's Subscription of a route over ``pattern``, its state DB ready, after a first look (which makes
    the replicas)."""
    from replicator.config import load_config
    from replicator.worker.startup import open_state
    from replicator.worker.subscription import Subscription

    config_path = work / "mirrorflow.yaml"
    config_path.write_text(json.dumps({
        "clusters": {"source": {"bootstrap.servers": source}, "target": {"bootstrap.servers": target}},
        "routes": [{"name": "stall", "source": "source", "target": "target", "topics": [pattern]}],
        "state": {"url": f"sqlite:///{work / 'state.db'}"},
    }))
    config = load_config(config_path, os.environ)
    route = config.route("stall")
    store = open_state(config, [route], threading.Event())
    subscription = Subscription(config, route, store)
    subscription.open()
    started = time.monotonic()
    subscription.refresh()
    progress(f"first look (makes {len(subscription.partitions):,} replicas): {time.monotonic() - started:.1f} s")
    return subscription


def _gaps(values: list[float]) -> dict[str, float | None]:
    ordered = sorted(values)
    return {"p50_ms": _ms(percentile(ordered, 50)), "p90_ms": _ms(percentile(ordered, 90)),
            "max_ms": _ms(ordered[-1] if ordered else None)}


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1000, 1)


class _CollectorPauses:
    """The cycle collector's pauses, per generation, while it is installed."""

    def __init__(self) -> None:
        self.pauses: dict[int, list[float]] = {0: [], 1: [], 2: []}
        self._began = 0.0
        gc.callbacks.append(self._note)

    def _note(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._began = time.perf_counter()
        else:
            self.pauses[info["generation"]].append(time.perf_counter() - self._began)

    def stop(self) -> dict[str, dict[str, float | int | None]]:
        gc.callbacks.remove(self._note)
        return {f"generation {g}": {"count": len(p), **_gaps(p)} for g, p in self.pauses.items()}


def measure(subscription: Any, looks: int, report: dict[str, Any], freeze: bool) -> None:
    """``looks`` looks one after the other, each followed by a window as long without any; each window's
    longest gap per ticker, and the collector's pauses."""
    from replicator.worker.interpreter import freeze_startup_heap, share_the_gil_finely

    owned = [(topic, p) for topic, count in subscription.partitions.items() for p in range(count)]
    share_the_gil_finely()
    if freeze:
        freeze_startup_heap()
    report["frozen_objects"] = gc.get_freeze_count()
    collector = _CollectorPauses()
    thread, process = _ThreadTicker(), _ProcessTicker()
    try:
        durations: list[float] = []
        rows: dict[str, dict[str, list[float]]] = {"no look": {"thread": [], "process": []},
                                                    "look": {"thread": [], "process": []}}
        thread.worst(), process.worst()
        for index in range(looks):
            started = time.monotonic()
            subscription.start_look(owned)
            while (finished := subscription.finished_look()) is None:
                time.sleep(0.005)
            subscription.apply(finished.result())
            durations.append(time.monotonic() - started)
            rows["look"]["thread"].append(thread.worst())
            rows["look"]["process"].append(process.worst())
            time.sleep(durations[-1])  # as long without a look
            rows["no look"]["thread"].append(thread.worst())
            rows["no look"]["process"].append(process.worst())
            in_thread, in_process = rows["look"]["thread"][-1], rows["look"]["process"][-1]
            progress(f"  look {index + 1}/{looks}: {durations[-1]:.2f} s, longest gap: thread "
                     f"{in_thread * 1000:.0f} ms, other process {in_process * 1000:.0f} ms")
        report["look_s"] = {"mean": round(sum(durations) / len(durations), 3), "max": round(max(durations), 3)}
        report["longest_gap_per_window"] = {window: {who: _gaps(values) for who, values in by.items()}
                                            for window, by in rows.items()}
    finally:
        report["collector_pauses"] = collector.stop()
        thread.stop()
        process.stop()


def table(report: dict[str, Any]) -> str | None:
    figures = report.get("longest_gap_per_window")
    if not figures:
        return None
    settings = report["settings"]
    lines = [f"\n=== {settings['topics']:,} topics x {settings['partitions']}; {report['looks']} looks, "
             f"each {report['look_s']['mean']:.2f} s on average (longest {report['look_s']['max']:.2f} s); "
             f"{os.cpu_count()} CPUs ===",
             "longest gap per window (ms): p50 / p90 / max over the windows",
             f"{'window':10s} {'thread in the worker process (GIL)':>36s} {'other process (cores)':>24s}"]
    for window, by in figures.items():
        cells = [" / ".join("-" if v is None else f"{v:.0f}" for v in by[who].values())
                 for who in ("thread", "process")]
        lines.append(f"{window:10s} {cells[0]:>36s} {cells[1]:>24s}")
    lines.append(f"cycle collector ({report['frozen_objects']:,} objects frozen), pauses: count, p50 / p90 / max ms")
    for generation, pauses in report.get("collector_pauses", {}).items():
        figures_ms = " / ".join("-" if pauses[k] is None else f"{pauses[k]:.1f}"
                                for k in ("p50_ms", "p90_ms", "max_ms"))
        lines.append(f"  {generation}: {pauses['count']:,}, {figures_ms}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = bench_parser(__doc__, "200 topics x 4, 10 looks")
    parser.add_argument("--topics", type=int, help="source topics (default 2000; --quick 200)")
    parser.add_argument("--partitions", type=int, help="partitions per topic (default 1; --quick 4)")
    parser.add_argument("--looks", type=int, help="looks to time (default 20; --quick 10)")
    parser.add_argument("--no-freeze", action="store_true",
                        help="leave start-up's heap to the cycle collector (as the worker did before)")
    args = parser.parse_args(argv)
    given = {"topics": args.topics, "partitions": args.partitions, "looks": args.looks}
    wrong = [f"--{name}" for name, value in given.items() if value is not None and value < 1]
    if wrong:
        parser.error(f"{', '.join(wrong)} must be at least 1")
    topics = args.topics or (200 if args.quick else 2000)
    partitions = args.partitions or (4 if args.quick else 1)
    looks = args.looks or (10 if args.quick else 20)
    work = Path(tempfile.mkdtemp(prefix="mirrorflow-stall-"))
    report: dict[str, Any] = {"settings": {"topics": topics, "partitions": partitions, "work": str(work),
                                           "freeze": not args.no_freeze}, "looks": looks}

    def body() -> None:
        source, target = start_clusters(work, report)
        names = {f"stall{topics}x{partitions}.t{i:05d}": partitions for i in range(topics)}
        progress(f"creating {topics:,} topics x {partitions}")
        create_topics(source, names)
        subscription = _subscription(work, source, target, rf"stall{topics}x{partitions}\..*")
        measure(subscription, looks, report, freeze=not args.no_freeze)

    return run_bench(work, report, body, lambda: tear_down(report), lambda: False,
                     lambda: table(report), args.keep, args.report)


if __name__ == "__main__":
    sys.exit(main())
