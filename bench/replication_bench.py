#!/usr/bin/env python
"""MirrorFlow vs MirrorMaker 2 vs Kafka's raw limits, on two fresh local clusters.

Run from the repository root::

    .venv/bin/python bench/replication_bench.py [--records N] [--sizes 100,1024] [--quick]

Per record size it measures, one after the other (nothing else runs meanwhile):

1. raw limit: ``ProducerPerformance`` (acks=all, idempotent, unthrottled) into a fresh
   4-partition source topic ``bench-<size>``, then ``ConsumerPerformance`` reading it back;
2. MirrorFlow (``mirrorflow run``) copying ``bench-<size>`` into an empty target topic
   ``mfsource.bench-<size>``: start-up time, copy time, records/s, MB/s, CPU s per GiB;
   then, still running, end-to-end latency at a fixed rate of half its copy rate
   (capped at half the raw producer rate, see bench_size);
3. MirrorMaker 2 (``org.apache.kafka.connect.mirror.MirrorMaker``) copying the very same
   ``bench-<size>`` into an empty ``source.bench-<size>``: the same figures, and the
   latency at the same fixed rate.

Both peers read the *same* source topic (byte-identical input, produced once); they
write to different, empty target topics because their source-cluster aliases differ
(MM2's ``source`` vs MirrorFlow's ``mfsource``). MirrorFlow runs first because the rate
of the latency phase is derived from its copy rate.

MB = 2^20 bytes and GiB = 2^30 bytes (as Kafka's perf tools count); bytes = record values
(ProducerPerformance writes no keys).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


from measure import PARTITIONS, Env, measure_latency, raw_consumer, raw_producer, watch_copy  # noqa: E402
from peers import MF_SOURCE_ALIAS, start_mirrorflow, start_mm2  # noqa: E402
from procs import Child, StepFailed, exit_code, progress  # noqa: E402

from replicator.kafka.admin import create_topics  # noqa: E402
from tests.support import free_port, start_pair  # noqa: E402


def run_peer(env: Env, label: str, start: Any, size: int, topic: str, latency_topic: str,
             target_prefix: str, rate_of: Any) -> dict[str, Any]:
    """Start a peer on (topic, latency_topic), measure the copy, then latency; always stop it."""
    progress(f"{label}: starting, copying {topic} -> {target_prefix}.{topic}")
    peer = start(env, size, [topic, latency_topic])
    result: dict[str, Any] = {}
    try:
        result["copy"] = watch_copy(env, peer, label, f"{target_prefix}.{topic}", size)
        rate = rate_of(result["copy"])
        if rate:
            result["latency"] = measure_latency(env, peer, label, latency_topic, f"{target_prefix}.{latency_topic}",
                                                size, rate)
    except StepFailed as failure:
        progress(f"  FAILED: {failure}")
        result["error"] = str(failure)
    finally:
        code = peer.stop(60)
        result["exit_code"] = code
        progress(f"{label}: stopped (exit code {code})")
    return result


def bench_size(env: Env, size: int) -> dict[str, Any]:
    topic, lat_mf, lat_mm2 = f"bench-{size}", f"lat-mf-{size}", f"lat-mm2-{size}"
    create_topics(env.source, {topic: PARTITIONS, lat_mf: PARTITIONS, lat_mm2: PARTITIONS})
    out: dict[str, Any] = {"size": size, "records": env.records, "latency_fraction": env.latency_fraction}
    steps: list[tuple[str, Callable[[], dict[str, Any]]]] = [("raw_producer", lambda: raw_producer(env, topic, size)),
                                                             ("raw_consumer", lambda: raw_consumer(env, topic))]
    for name, step in steps:
        try:
            out[name] = step()
        except StepFailed as failure:
            progress(f"  FAILED: {failure}")
            out[name] = {"error": str(failure)}
            if name == "raw_producer":
                return out  # nothing to copy
    rate: dict[str, int] = {}
    # The latency rate is half MirrorFlow's copy rate, capped at half of what the raw producer
    # reached: on a small machine (2 cores for 2 brokers, the producer, the peer and the latency
    # reader) a faster rate saturates the *producer*, whose queueing then dominates the figures.
    share = env.latency_fraction
    raw_cap = int(out["raw_producer"].get("records_per_s", 0) * share) or None

    def capped(copy_rate: float) -> int:
        return max(1, min(int(copy_rate * share), raw_cap or int(copy_rate * share)))

    def mf_rate(copy: dict[str, Any]) -> int:
        rate["r"] = capped(copy["records_per_s"])
        return rate["r"]

    out["mirrorflow"] = run_peer(env, "MirrorFlow", start_mirrorflow, size, topic, lat_mf, MF_SOURCE_ALIAS, mf_rate)
    # MM2 gets the same latency rate; if MirrorFlow failed, half of MM2's own copy rate.
    out["mm2"] = run_peer(env, "MirrorMaker 2", start_mm2, size, topic, lat_mm2, "source",
                          lambda copy: rate.get("r") or capped(copy["records_per_s"]))
    return out


# -- report ------------------------------------------------------------------------------

def _fmt(value: Any, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def _ratio(a: Any, b: Any) -> str:
    return "-" if not a or not b else f"{a / b:.2f}x"


def table(results: list[dict[str, Any]]) -> str:
    lines = []
    for res in results:
        lines.append(f"\n=== {res['records']:,} records x {res['size']} B ===")
        lines.append(f"{'':16}{'rec/s':>12}{'MB/s':>9}{'start-up s':>12}{'copy s':>9}"
                     f"{'CPU s/GiB':>11}{'p50 ms':>9}{'p99 ms':>9}{'steady p99':>11}")
        for key, label in (("raw_producer", "raw producer"), ("raw_consumer", "raw consumer")):
            row = res.get(key, {})
            if "error" in row or not row:
                lines.append(f"{label:16}  FAILED: {row.get('error', 'not run')[:80]}")
                continue
            lines.append(f"{label:16}{row['records_per_s']:>12,.0f}{row['mb_per_s']:>9.1f}")
        for key, label in (("mm2", "MirrorMaker 2"), ("mirrorflow", "MirrorFlow")):
            row = res.get(key, {})
            copy, lat = row.get("copy"), row.get("latency") or {}
            if copy is None:
                lines.append(f"{label:16}  FAILED: {row.get('error', 'not run')[:80]}")
                continue
            lines.append(f"{label:16}{copy['records_per_s']:>12,.0f}{copy['mb_per_s']:>9.1f}"
                         f"{copy['startup_s']:>12.1f}{copy['copy_s']:>9.2f}{_fmt(copy['cpu_s_per_gib'], '.1f'):>11}"
                         f"{_fmt(lat.get('p50_ms'), '.0f'):>9}{_fmt(lat.get('p99_ms'), '.0f'):>9}"
                         f"{_fmt(lat.get('steady_p99_ms'), '.0f'):>11}")
            if "error" in row:
                lines.append(f"{'':16}  (then FAILED: {row['error'][:80]})")
        mf, mm = res.get("mirrorflow", {}), res.get("mm2", {})
        mfc, mmc = mf.get("copy") or {}, mm.get("copy") or {}
        mfl, mml = mf.get("latency") or {}, mm.get("latency") or {}
        lines.append(f"{'MF / MM2':16}{_ratio(mfc.get('records_per_s'), mmc.get('records_per_s')):>12}"
                     f"{_ratio(mfc.get('mb_per_s'), mmc.get('mb_per_s')):>9}"
                     f"{_ratio(mfc.get('startup_s'), mmc.get('startup_s')):>12}"
                     f"{_ratio(mfc.get('copy_s'), mmc.get('copy_s')):>9}"
                     f"{_ratio(mfc.get('cpu_s_per_gib'), mmc.get('cpu_s_per_gib')):>11}"
                     f"{_ratio(mfl.get('p50_ms'), mml.get('p50_ms')):>9}"
                     f"{_ratio(mfl.get('p99_ms'), mml.get('p99_ms')):>9}"
                     f"{_ratio(mfl.get('steady_p99_ms'), mml.get('steady_p99_ms')):>11}")
        if mfl.get("rate"):
            lines.append(f"(latency at {mfl['rate']:,} rec/s = {res.get('latency_fraction', 0.5)} x MirrorFlow's "
                         f"copy rate, at most that x the raw "
                         f"producer's; source-side send->ack p50/p99 during it: MF run "
                         f"{mfl.get('producer_ack_p50_ms')}/{mfl.get('producer_ack_p99_ms')} ms, MM2 run "
                         f"{mml.get('producer_ack_p50_ms')}/{mml.get('producer_ack_p99_ms')} ms;\n "
                         f"CPU s/GiB = peer CPU during the copy / GiB of values copied; steady p99 leaves out the "
                         f"first 5 s of the latency run)")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, help="records per size (default 1,000,000; --quick: 200,000)")
    parser.add_argument("--sizes", default="100,1024", help="record sizes in bytes, comma-separated")
    parser.add_argument("--quick", action="store_true", help="a smoke run: 200,000 records, 10 s latency runs")
    parser.add_argument("--latency-seconds", type=float, help="length of each latency run (default 20; --quick 10)")
    parser.add_argument("--latency-fraction", type=float, default=0.5,
                        help="latency-run rate as a fraction of MirrorFlow's copy rate (and at most that "
                             "fraction of the raw producer's); default 0.5")
    parser.add_argument("--keep", action="store_true", help="keep the temp dir (logs, cluster data)")
    args = parser.parse_args()
    records = args.records or (200_000 if args.quick else 1_000_000)
    latency_seconds = args.latency_seconds or (10.0 if args.quick else 20.0)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]

    def on_sigterm(*_: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_sigterm)
    work = Path(tempfile.mkdtemp(prefix="mirrorflow-bench-"))
    progress(f"work dir {work}; {records:,} records per size, sizes {sizes}")
    clusters: list[Any] = []
    results: list[dict[str, Any]] = []
    failed = False
    try:
        ports = {"source": free_port(), "target": free_port()}
        while ports["target"] in (ports["source"], ports["source"] + 1) or ports["source"] == ports["target"] + 1:
            ports["target"] = free_port()
        progress(f"starting clusters source=127.0.0.1:{ports['source']} target=127.0.0.1:{ports['target']} (heap 1g)")
        clusters = start_pair(work / "clusters", ports, heap="1g")
        env = Env(work, clusters[0].spec.bootstrap_servers, clusters[1].spec.bootstrap_servers,
                  records, latency_seconds, args.latency_fraction)
        for size in sizes:
            progress(f"--- record size {size} B ---")
            results.append(bench_size(env, size))
            failed |= any("error" in (results[-1].get(k) or {}) for k in ("raw_producer", "raw_consumer",
                                                                       "mirrorflow", "mm2"))
    except KeyboardInterrupt:
        progress("interrupted: cleaning up")
        failed = True
    except Exception as exc:  # noqa: BLE001 - reported, then cleaned up
        progress(f"FAILED: {type(exc).__name__}: {exc}")
        failed = True
    finally:
        for child in list(Child.running):
            child.stop(20)
        for cluster in clusters:
            try:
                cluster.stop()
            except Exception as exc:  # noqa: BLE001
                progress(f"could not stop cluster {cluster.spec.name}: {exc}")
        progress("clusters stopped")
    if results:
        print(table(results))
        out_dir = Path(__file__).resolve().parent / "results"
        out_dir.mkdir(exist_ok=True)
        path = out_dir / f"{time.strftime('%Y%m%dT%H%M%S')}.json"
        path.write_text(json.dumps({"records": records, "sizes": sizes, "latency_seconds": latency_seconds,
                                    "machine": {"cpus": os.cpu_count()}, "results": results}, indent=2))
        print(f"\nresults: {path}")
    return exit_code(work, failed, args.keep)


if __name__ == "__main__":
    sys.exit(main())
