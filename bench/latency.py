#!/usr/bin/env python
"""Latency at low rates: the floor (a plain consumer of the source) and what MirrorFlow and MirrorMaker 2 add.

Run from the repository root::

    .venv/bin/python bench/latency.py                        # 2,000 rec/s of 100 B for 30 s
    .venv/bin/python bench/latency.py --rate 500 --seconds 20 --report latency.json

On two fresh single-node KRaft clusters, one 4-partition source topic ``lat``: MirrorFlow (into
``mfsource.lat``) and MirrorMaker 2 (into ``source.lat``) are started together and copy it at the same
time; once probe records reached both targets, ProducerPerformance writes ``--rate`` records/s of 100 B
for ``--seconds`` while three readers note, per record, seen - CreateTime: the floor (a plain consumer of
the source topic), MirrorFlow's target topic and MirrorMaker 2's. The first 5 s of the load are left out.
MirrorFlow's own latency histogram (delivery report - CreateTime, one record in 64) is read from its
metrics over the same window.

Figures only: nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from confluent_kafka import Producer, TopicPartition  # noqa: E402
from fairness import parse_overrides  # noqa: E402
from fairness_probe import LatencyReader, window  # noqa: E402
from latency_figures import (  # noqa: E402
    added_over_floor,
    histogram_shares,
    load_start,
    paired_added,
    shares_within,
)
from measure import PARTITIONS, WARMUP_S, Env, load_figures, load_summary, start_load  # noqa: E402
from peers import MF_SOURCE_ALIAS, start_mirrorflow, start_mm2  # noqa: E402
from procs import (  # noqa: E402
    POLL_S,
    Child,
    Offsets,
    StepFailed,
    bench_parser,
    create_topics,
    percentile,
    progress,
    run_bench,
    start_clusters,
    tear_down,
)
from scale import machine  # noqa: E402
from scale_metrics import scrape, since  # noqa: E402

from tests.support import free_port  # noqa: E402

TOPIC, RECORD_SIZE, PROBES = "lat", 100, 20
ACK_HISTOGRAM = "mirrorflow_replication_latency_seconds"
STARTUP_TIMEOUT_S, CATCH_UP_TIMEOUT_S = 180.0, 60.0
READERS = {"floor": "floor (source)", "mirrorflow": "MirrorFlow", "mm2": "MirrorMaker 2"}


def start_peers(env: Env, args: argparse.Namespace, report: dict[str, Any]) -> dict[str, Child]:
    """Both peers launched together, then probes until each has copied them (start-up in the report)."""
    create_topics(env.target, {f"{MF_SOURCE_ALIAS}.{TOPIC}": PARTITIONS, f"source.{TOPIC}": PARTITIONS})
    report["metrics_port"] = free_port()
    progress(f"starting MirrorFlow and MirrorMaker 2 on {TOPIC}; MirrorFlow overrides {args.mf_route or 'none'}")
    peers = {"mirrorflow": start_mirrorflow(env, TOPIC, [TOPIC], metrics_port=report["metrics_port"],
                                            route=args.mf_route),
             "mm2": start_mm2(env, TOPIC, [TOPIC])}
    launched = time.monotonic()
    probe = Producer({"bootstrap.servers": env.source, "acks": "all", "enable.idempotence": "true"})
    for i in range(PROBES):
        probe.produce(TOPIC, b"probe", partition=i % PARTITIONS)
    if probe.flush(30) != 0:
        raise StepFailed("probe records not acknowledged by the source")
    pending, offsets = dict(target_topics()), Offsets(env.target)
    try:
        while pending:
            for name, topic in list(pending.items()):
                peers[name].check_alive(f"{READERS[name]} start-up")
                if offsets.total(topic) >= PROBES:
                    report.setdefault("startup_s", {})[name] = round(time.monotonic() - launched, 1)
                    progress(f"  {READERS[name]}: probes on {topic} after {report['startup_s'][name]} s")
                    del pending[name]
            if time.monotonic() - launched > STARTUP_TIMEOUT_S:
                raise StepFailed(f"no probes on {list(pending.values())} after {STARTUP_TIMEOUT_S:.0f} s")
            time.sleep(POLL_S)
    finally:
        offsets.close()
    return peers


def target_topics() -> dict[str, str]:
    return {"mirrorflow": f"{MF_SOURCE_ALIAS}.{TOPIC}", "mm2": f"source.{TOPIC}"}


def run_load(env: Env, args: argparse.Namespace, peers: dict[str, Child], report: dict[str, Any]) -> None:
    """The load under the three readers; the windows of each, the producer's summary, MirrorFlow's histogram."""
    topics = {"floor": (env.source, TOPIC)} | {name: (env.target, t) for name, t in target_topics().items()}
    readers = {name: LatencyReader(bootstrap, [TopicPartition(topic, p) for p in range(PARTITIONS)], name)
               for name, (bootstrap, topic) in topics.items()}
    try:
        count = args.rate * args.seconds
        progress(f"load: {count:,} records x {RECORD_SIZE} B at {args.rate:,} rec/s into {TOPIC}")
        launched_ms = time.time() * 1000
        load = start_load(env, TOPIC, count, RECORD_SIZE, args.rate)
        metrics = watch_load(args, peers, readers, load, launched_ms, report["metrics_port"])
        catch_up(env, peers, readers)
        report["load"] = {"summary": load_summary(load)} | load_figures(load_summary(load))
        first = load_start(readers["floor"].samples, launched_ms)
        if first is None:
            raise StepFailed("the floor reader saw no record of the load")
        start_ms, end_ms = first + args.warmup * 1000, first + args.seconds * 1000 * 2  # to the load's end
        report["windows"] = {name: window(r.samples, start_ms, end_ms) for name, r in readers.items()}
        report["within"] = {name: shares_within([lat for created, lat in r.samples if start_ms <= created < end_ms])
                            for name, r in readers.items()}
        floor = dict(zip(readers["floor"].positions, readers["floor"].samples, strict=True))
        report["paired"] = {name: paired_summary(paired_added(floor, dict(zip(r.positions, r.samples, strict=True)),
                                                              start_ms, end_ms))
                            for name, r in readers.items() if name != "floor"}
        hist = since(metrics[1][ACK_HISTOGRAM], metrics[0][ACK_HISTOGRAM]) if metrics[0] else None
        report["mf_ack_histogram"] = hist
        report["within"]["mf_ack"] = histogram_shares(hist) if hist else None
    finally:
        for reader in readers.values():
            reader.stop()


def watch_load(args: argparse.Namespace, peers: dict[str, Child], readers: dict[str, LatencyReader],
               load: Child, launched_ms: float, metrics_port: int) -> tuple[Any, Any]:
    """Until the load ends: progress every 5 s; MirrorFlow's histogram scraped when the warm-up ends and at
    the end (the first is None when the load ended before)."""
    deadline = time.monotonic() + args.seconds + 120
    last_report, first, warm = time.monotonic(), None, None
    while load.alive():
        for name, peer in peers.items():
            peer.check_alive(f"{READERS[name]} under the load")
        if time.monotonic() > deadline:
            raise StepFailed(f"the load did not end in {args.seconds + 120} s; see {load.log}")
        first = first or load_start(readers["floor"].samples, launched_ms)
        if warm is None and first is not None and time.time() * 1000 >= first + args.warmup * 1000:
            warm = scrape(metrics_port, (ACK_HISTOGRAM,))
        if time.monotonic() - last_report >= 5:
            progress("  " + "; ".join(f"{READERS[n]} {r.seen:,} seen, p50 of the last 5 s {recent_p50(r)} ms"
                                      for n, r in readers.items()))
            last_report = time.monotonic()
        time.sleep(POLL_S)
    return warm, scrape(metrics_port, (ACK_HISTOGRAM,))


def paired_summary(added: list[float]) -> dict[str, Any]:
    """Percentiles of what a peer added to each record over the floor (ms)."""
    return {"records": len(added)} | {f"p{q}_ms": percentile(added, q) for q in (50, 90, 99)}


def recent_p50(reader: LatencyReader, seconds: float = 5) -> str:
    since_ms = time.time() * 1000 - seconds * 1000
    recent = sorted(lat for created, lat in reader.samples[-20000:] if created >= since_ms)
    value = percentile(recent, 50)
    return "-" if value is None else f"{value:.0f}"


def catch_up(env: Env, peers: dict[str, Child], readers: dict[str, LatencyReader]) -> None:
    """Until every reader has seen as many records as the source topic holds."""
    offsets = Offsets(env.source)
    try:
        wanted = offsets.total(TOPIC)
    finally:
        offsets.close()
    deadline = time.monotonic() + CATCH_UP_TIMEOUT_S
    while any(r.seen < wanted for r in readers.values()):
        for name, peer in peers.items():
            peer.check_alive(f"{READERS[name]} catch-up")
        if time.monotonic() > deadline:
            behind = {n: f"{r.seen:,}/{wanted:,}" for n, r in readers.items() if r.seen < wanted}
            raise StepFailed(f"readers behind after {CATCH_UP_TIMEOUT_S:.0f} s: {behind}")
        time.sleep(POLL_S)


# -- report ------------------------------------------------------------------------------

def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


def _share(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.0f}%"


def table(report: dict[str, Any]) -> str | None:
    windows = report.get("windows")
    if not windows:
        return None
    s, floor = report["settings"], windows["floor"]
    lines = [f"\n=== {s['rate']:,} rec/s x {RECORD_SIZE} B into {PARTITIONS} partitions for {s['seconds']} s "
             f"(first {s['warmup']} s left out); MirrorFlow overrides {s['mf_route'] or 'none'}; "
             f"{report['machine']['cpus']} CPUs ===",
             f"{'reader':18}{'records':>9}{'p50 ms':>9}{'p90 ms':>9}{'p99 ms':>9}{'max ms':>9}"
             f"{'added p50':>11}{'added p99':>11}{'per record: p50':>17}{'p90':>6}{'p99':>6}"]
    for name, label in READERS.items():
        w = windows[name]
        added = added_over_floor(w, floor) if name != "floor" else {}
        paired = (report.get("paired") or {}).get(name) or {}
        lines.append(f"{label:18}{_ms(w['records']):>9}"
                     + "".join(f"{_ms(w[k]):>9}" for k in ("p50_ms", "p90_ms", "p99_ms", "max_ms"))
                     + f"{_ms(added.get('p50_ms')):>11}{_ms(added.get('p99_ms')):>11}"
                     + f"{_ms(paired.get('p50_ms')):>17}{_ms(paired.get('p90_ms')):>6}{_ms(paired.get('p99_ms')):>6}")
    load = report.get("load") or {}
    lines.append(f"source producer (ProducerPerformance, whole run): {_ms(load.get('producer_rate'))} rec/s, "
                 f"send->ack p50 {_ms(load.get('producer_ack_p50_ms'))} ms, "
                 f"p99 {_ms(load.get('producer_ack_p99_ms'))} ms")
    within = report.get("within") or {}
    bounds = list((within.get("floor") or {}).keys())
    lines.append(f"{'share within':34}" + "".join(f"{'<=' + b + ' ms':>10}" for b in bounds))
    rows = {**READERS, "mf_ack": "MirrorFlow acked (its histogram)"}
    for name, label in rows.items():
        shares = within.get(name) or {}
        lines.append(f"{label:34}" + "".join(f"{_share(shares.get(b)):>10}" for b in bounds))
    startup = report.get("startup_s") or {}
    lines.append(f"(start-up to the probes: MirrorFlow {startup.get('mirrorflow')} s, MirrorMaker 2 "
                 f"{startup.get('mm2')} s; run wall time {report['wall_s'] / 60:.1f} min)")
    return "\n".join(lines)


# -- the run -----------------------------------------------------------------------------

def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = bench_parser(__doc__)
    parser.add_argument("--rate", type=int, default=2000, help="records/s of the load (default 2000)")
    parser.add_argument("--seconds", type=int, default=30, help="length of the load (default 30)")
    parser.add_argument("--warmup", type=float, default=WARMUP_S,
                        help=f"seconds at the load's start left out of the figures (default {WARMUP_S})")
    parser.add_argument("--mf-route", default="", metavar="consumer.KEY=V,producer.KEY=V",
                        help="MirrorFlow's route overrides (e.g. producer.linger.ms=0)")
    args = parser.parse_args(argv)
    args.mf_route = parse_overrides(args.mf_route, "--mf-route: expected ")
    return args


def bench(work: Path, args: argparse.Namespace, report: dict[str, Any]) -> None:
    """Clusters, the topic, both peers, the load; the caller stops what is left running."""
    env = Env(work, *start_clusters(work, report), records=0, latency_seconds=args.seconds)
    create_topics(env.source, {TOPIC: PARTITIONS})
    peers = start_peers(env, args, report)
    run_load(env, args, peers, report)
    report["exit_codes"] = {name: peer.stop(60) for name, peer in peers.items()}


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="mirrorflow-latency-"))
    report: dict[str, Any] = {"settings": {"rate": args.rate, "seconds": args.seconds, "warmup": args.warmup,
                                           "mf_route": args.mf_route, "work": str(work)}, "machine": machine()}
    progress(f"work dir {work}; {args.rate:,} rec/s x {RECORD_SIZE} B for {args.seconds} s")
    return run_bench(work, report, lambda: bench(work, args, report), lambda: tear_down(report),
                     lambda: False, lambda: table(report), args.keep, args.report)


if __name__ == "__main__":
    sys.exit(main())
