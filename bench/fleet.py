#!/usr/bin/env python
"""A route's throughput with 1, 2 and 3 workers, each on a host of its own, beside MirrorMaker 2 with as many tasks.

Run from the repository root, as root (network namespaces)::

    .venv/bin/python bench/fleet.py --quick                   # 200,000 records of 1 KiB
    .venv/bin/python bench/fleet.py --report fleet.json       # 600,000 records of 1 KiB

Hosts are network namespaces with addresses of their own on a bridge (``replicator.dev.hosts``);
both clusters listen on the bridge's address. A backlog of ``--records`` records of ``--size`` B
is written once to a ``--partitions``-partition source topic; then for each fleet size k
(``--workers``), one after the other with nothing else running: k `mirrorflow run` processes of
one route, on hosts h1..hk with ``--worker-id`` hN, copy the backlog into a fresh target topic;
then MirrorMaker 2 (its dedicated driver, in the root namespace) with ``tasks.max`` = k copies it
into another. Copy rate = records / (first -> last record on the target), end offsets polled every
0.2 s; CPU = the peers' processes' utime+stime during the copy.

Everything shares one machine: on 2 cores, three workers and two brokers compete for the same
CPUs, so this shows what a fleet costs and how the group spreads the work, not how it scales on
hosts of their own. Figures only: nothing here asserts a time.
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

from measure import GIB, MB, Env, raw_producer  # noqa: E402
from peers import mirrorflow_cli, mirrorflow_config, start_mm2  # noqa: E402
from procs import (  # noqa: E402
    POLL_S,
    Child,
    Offsets,
    StepFailed,
    bench_parser,
    cpu_seconds,
    create_topics,
    progress,
    run_bench,
    tear_down,
)
from scale import machine  # noqa: E402

from replicator.dev.hosts import HostNetwork  # noqa: E402
from tests.support import free_port, start_pair  # noqa: E402

TOPIC = "fleet"
STARTUP_TIMEOUT_S, STALL_TIMEOUT_S = 180.0, 60.0


def start_fleet(env: Env, net: HostNetwork, k: int, alias: str) -> list[Child]:
    """k workers of one route (source cluster named ``alias``: the target prefix), worker i on host hi."""
    config = mirrorflow_config(env, f"fleet{k}", [TOPIC], alias=alias)
    hosts = [net.hosts.get(f"h{i}") or net.add(f"h{i}") for i in range(1, k + 1)]
    return [Child(f"mirrorflow run on {host.name}",
                  host.command([*mirrorflow_cli(), "--log-level", "info", "run", "--config", str(config),
                                "--route", f"bench-fleet{k}", "--worker-id", host.name]),
                  env.work / f"mirrorflow-fleet{k}-{host.name}.log", cwd=env.work, env={"PYTHONPATH": str(REPO)})
            for host in hosts]


def watch(env: Env, peers: list[Child], label: str, target_topic: str, size: int) -> dict[str, Any]:
    """From the launch until ``target_topic`` holds the backlog: start-up, copy rate, CPU of all ``peers``."""
    offsets = Offsets(env.target)
    launched = time.monotonic()
    first_at = first_cpu = None
    last, last_progress, last_report = 0, launched, launched
    try:
        while True:
            for peer in peers:
                peer.check_alive(f"{label} copy")
            now, count = time.monotonic(), offsets.total(target_topic)
            cpu = sum(cpu_seconds(p.pid) or 0.0 for p in peers)
            if count and first_at is None:
                first_at, first_cpu = now, cpu
            if count >= env.records:
                break
            if count > last:
                last, last_progress = count, now
            if first_at is None and now - launched > STARTUP_TIMEOUT_S:
                raise StepFailed(f"{label}: no record on {target_topic} after {STARTUP_TIMEOUT_S:.0f} s")
            if first_at is not None and now - last_progress > STALL_TIMEOUT_S:
                raise StepFailed(f"{label}: stalled at {count:,}/{env.records:,} records")
            if now - last_report > 5:
                progress(f"  {label}: {count:,}/{env.records:,} records on {target_topic}")
                last_report = now
            time.sleep(max(0.0, POLL_S - (time.monotonic() - now)))
    finally:
        offsets.close()
    copy_s = max(now - first_at, 1e-9)  # type: ignore[operator]
    result = {"startup_s": round(first_at - launched, 2), "copy_s": round(copy_s, 2),  # type: ignore[operator]
              "records_per_s": env.records / copy_s, "mb_per_s": env.records * size / MB / copy_s,
              "cpu_s_per_gib": (cpu - first_cpu) / (env.records * size / GIB)}  # type: ignore[operator]
    progress(f"  {label}: start-up {result['startup_s']:.1f} s, {result['records_per_s']:,.0f} rec/s, "
             f"{result['mb_per_s']:.1f} MB/s, CPU {result['cpu_s_per_gib']:.1f} s/GiB")
    return result


def run_peer(env: Env, label: str, launch: Any, target_topic: str, size: int) -> dict[str, Any]:
    progress(f"{label}: starting, copying into {target_topic}")
    peers: list[Child] = launch()
    result: dict[str, Any] = {"label": label}
    try:
        result.update(watch(env, peers, label, target_topic, size))
    except StepFailed as failure:
        progress(f"  FAILED: {failure}")
        result["error"] = str(failure)
    finally:
        result["exit_codes"] = [peer.stop(90) for peer in peers]
    return result


def bench(work: Path, args: argparse.Namespace, report: dict[str, Any]) -> None:
    net = report["_network"] = HostNetwork()
    progress(f"host network {net.gateway}/24; starting clusters on it (heap 1g)")
    report["_clusters"] = start_pair(work / "clusters", {"source": free_port(), "target": free_port()},
                                     host=net.gateway, heap="1g")
    source, target = (c.spec.bootstrap_servers for c in report["_clusters"])
    env = Env(work, source, target, records=args.records, latency_seconds=0)
    create_topics(source, {TOPIC: args.partitions})
    report["backlog"] = raw_producer(env, TOPIC, args.size)
    for k in args.workers:
        run: dict[str, Any] = {"workers": k}
        run["mirrorflow"] = run_peer(env, f"MirrorFlow x{k}", lambda k=k: start_fleet(env, net, k, f"mf{k}"),
                                     f"mf{k}.{TOPIC}", args.size)
        if not args.no_mm2:
            run["mm2"] = run_peer(env, f"MirrorMaker 2 tasks.max={k}",
                                  lambda k=k: [start_mm2(env, f"fleet{k}", [TOPIC], alias=f"mm{k}",
                                                         extra={"tasks.max": str(k)})],
                                  f"mm{k}.{TOPIC}", args.size)
        report["runs"].append(run)


def _f(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def table(report: dict[str, Any]) -> str:
    s, runs = report["settings"], report["runs"]
    one = (runs[0].get("mirrorflow") or {}).get("records_per_s") if runs else None
    lines = [f"\n=== {s['records']:,} records x {s['size']} B on {s['partitions']} partitions; workers on hosts of "
             f"their own (network namespaces) of one machine with {report['machine']['cpus']} CPUs ===",
             f"{'workers':>8}{'MF rec/s':>12}{'MF MB/s':>9}{'x one':>7}{'MF start s':>11}{'MF CPU s/GiB':>13}"
             f"{'MM2 rec/s':>12}{'MM2 MB/s':>9}{'MM2 CPU s/GiB':>14}{'MF / MM2':>9}"]
    for run in runs:
        mf, mm = run.get("mirrorflow") or {}, run.get("mm2") or {}
        rate, peer = mf.get("records_per_s"), mm.get("records_per_s")
        lines.append(f"{run['workers']:>8}{_f(rate, ',.0f'):>12}{_f(mf.get('mb_per_s'), '.1f'):>9}"
                     f"{_f(rate / one if rate and one else None, '.2f'):>7}{_f(mf.get('startup_s'), '.1f'):>11}"
                     f"{_f(mf.get('cpu_s_per_gib'), '.1f'):>13}{_f(peer, ',.0f'):>12}{_f(mm.get('mb_per_s'), '.1f'):>9}"
                     f"{_f(mm.get('cpu_s_per_gib'), '.1f'):>14}{_f(rate / peer if rate and peer else None, '.2f'):>9}")
        for name in ("mirrorflow", "mm2"):
            if "error" in (run.get(name) or {}):
                lines.append(f"{'':8}{run[name]['label']} FAILED: {run[name]['error'][:150]}")
    lines.append(f"(run wall time {report['wall_s'] / 60:.1f} min; backlog written at "
                 f"{_f((report.get('backlog') or {}).get('records_per_s'), ',.0f')} rec/s)")
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = bench_parser(__doc__, quick="a backlog of 200,000 records")
    parser.add_argument("--records", type=int, help="records in the backlog (default 600,000; --quick 200,000)")
    parser.add_argument("--size", type=int, default=1024, help="record size in bytes (default 1024)")
    parser.add_argument("--partitions", type=int, default=12, help="partitions of the source topic (default 12)")
    parser.add_argument("--workers", default="1,2,3", help="fleet sizes, comma-separated (default 1,2,3)")
    parser.add_argument("--no-mm2", action="store_true", help="skip MirrorMaker 2")
    args = parser.parse_args(argv)
    args.records = args.records or (200_000 if args.quick else 600_000)
    try:
        args.workers = [int(v) for v in args.workers.split(",") if v]
    except ValueError as exc:
        parser.error(f"--workers: {exc}")
    if not args.workers or min(args.workers) < 1:
        parser.error("--workers: fleet sizes of 1 or more")
    return args


def stop_all(report: dict[str, Any]) -> None:
    tear_down(report)
    network = report.pop("_network", None)
    if network is not None:
        network.remove()


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="mirrorflow-fleet-"))
    report: dict[str, Any] = {"settings": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()}
                              | {"work": str(work)}, "machine": machine(), "runs": []}
    progress(f"work dir {work}; {args.records:,} records x {args.size} B on {args.partitions} partitions; "
             f"fleets of {args.workers} workers")
    return run_bench(work, report, lambda: bench(work, args, report), lambda: stop_all(report),
                     lambda: any("error" in (r.get(p) or {}) for r in report["runs"] for p in ("mirrorflow", "mm2")),
                     lambda: table(report), args.keep, args.report)


if __name__ == "__main__":
    sys.exit(main())
