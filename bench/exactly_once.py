#!/usr/bin/env python
"""What exactly-once costs: MirrorFlow at-least-once, MirrorFlow exactly-once and MirrorMaker 2 with exactly-once.

Run from the repository root::

    .venv/bin/python bench/exactly_once.py [--records 1000000] [--sizes 100,1024] [--quick]

On two fresh single-node KRaft clusters, per record size: ``--records`` records in a
4-partition source topic (ProducerPerformance); then each peer copies the whole topic, one
after the other, into a target topic of its own (the copy is counted by a read_committed
consumer of the target: a transactional target has a marker after each transaction, which
end offsets would count); then each exactly-once peer's end-to-end latency at a fifth of
MirrorFlow exactly-once's copy rate, as a read_committed reader of the target sees it.
MirrorMaker 2 runs its dedicated driver with ``exactly.once.source.support = enabled`` on
the target and a read_committed source consumer (Kafka 3.5+). Figures only.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from measure import PARTITIONS, Env, measure_latency, raw_producer, watch_copy  # noqa: E402
from peers import start_mirrorflow, start_mm2  # noqa: E402
from procs import (  # noqa: E402
    Child,
    RecordCounter,
    StepFailed,
    bench_parser,
    create_topics,
    progress,
    run_bench,
    start_clusters,
    tear_down,
)
from scale import machine  # noqa: E402

LATENCY_SHARE = 0.2  # the latency runs' rate, as a share of MirrorFlow exactly-once's copy rate
MM2_EXACTLY_ONCE = {"target.exactly.once.source.support": "enabled",
                    "source.consumer.isolation.level": "read_committed"}
ALO, EOS, MM2 = "MirrorFlow at-least-once", "MirrorFlow exactly-once", "MirrorMaker 2 exactly-once"


def peers(intervals: list[int]) -> tuple[tuple[str, str, Any], ...]:
    """(label, alias = the target prefix, launch(env, size, topics, alias)) of each run; ``intervals``: more
    MirrorFlow exactly-once runs at these ``transactions.interval_ms`` (the latency floor against the commit
    rate), after the default one."""
    def eos(interval: int | None) -> Any:
        route = {"guarantee": "exactly-once", **({"transactions": {"interval_ms": interval}} if interval else {})}
        return lambda env, size, topics, alias: start_mirrorflow(env, f"{alias}-{size}", topics, alias=alias,
                                                                 route=route)
    return (
        (ALO, "alo", lambda env, size, topics, alias: start_mirrorflow(env, f"alo-{size}", topics, alias=alias)),
        (EOS, "eos", eos(None)),
        *((f"{EOS}, {ms} ms", f"eos{ms}", eos(ms)) for ms in intervals),
        (MM2, "source", lambda env, size, topics, alias: start_mm2(env, f"eos-{size}", topics, alias=alias,
                                                                   extra=MM2_EXACTLY_ONCE)),
    )


def run_peer(env: Env, label: str, alias: str, launch: Any, size: int, topic: str, latency_topic: str,
             rate: int | None) -> dict[str, Any]:
    """Start a peer on (topic, latency_topic), count its copy, then (``rate``) its latency; always stop it."""
    progress(f"{label}: starting, copying {topic} -> {alias}.{topic}")
    peer: Child = launch(env, size, [topic, latency_topic], alias)
    result: dict[str, Any] = {"label": label}
    counter = RecordCounter(env.target, f"{alias}.{topic}", PARTITIONS)
    try:
        result["copy"] = watch_copy(env, peer, label, f"{alias}.{topic}", size, counter=counter)
        if rate is not None or label.startswith(EOS):
            result["latency_rate"] = rate or max(1, int(result["copy"]["records_per_s"] * LATENCY_SHARE))
            result["latency"] = measure_latency(env, peer, label, latency_topic, f"{alias}.{latency_topic}", size,
                                                result["latency_rate"])
    except StepFailed as failure:
        progress(f"  FAILED: {failure}")
        result["error"] = str(failure)
    finally:
        counter.close()
        result["exit_code"] = peer.stop(60)
    return result


def bench_size(env: Env, size: int, runs: tuple[tuple[str, str, Any], ...]) -> dict[str, Any]:
    topic = f"bench-{size}"
    latency_topics = {alias: f"lat-{alias}-{size}" for _, alias, _ in runs}
    create_topics(env.source, {topic: PARTITIONS, **dict.fromkeys(latency_topics.values(), PARTITIONS)})
    out: dict[str, Any] = {"size": size, "records": env.records, "raw_producer": raw_producer(env, topic, size),
                           "runs": []}
    rate: int | None = None
    for label, alias, launch in runs:
        wanted = None if label.endswith("at-least-once") else rate
        run = run_peer(env, label, alias, launch, size, topic, latency_topics[alias], wanted)
        rate = rate or run.get("latency_rate")
        out["runs"].append(run)
    return out


def _ratio(a: Any, b: Any) -> str:
    return "-" if not a or not b else f"{a / b:.2f}x"


def table(report: dict[str, Any]) -> str:
    lines = []
    for res in report.get("sizes", []):
        lines.append(f"\n=== {res['records']:,} records x {res['size']} B ===")
        lines.append(f"{'':34}{'rec/s':>11}{'MB/s':>8}{'CPU s/GiB':>11}{'lat. rate':>11}{'p50 ms':>8}{'p99 ms':>8}")
        by_label = {}
        for run in res["runs"]:
            by_label[run["label"]] = run
            copy, lat = run.get("copy"), run.get("latency") or {}
            if copy is None:
                lines.append(f"{run['label']:34}  FAILED: {run.get('error', 'not run')[:80]}")
                continue
            lines.append(f"{run['label']:34}{copy['records_per_s']:>11,.0f}{copy['mb_per_s']:>8.1f}"
                         f"{copy['cpu_s_per_gib'] or 0:>11.1f}{run.get('latency_rate') or 0:>11,}"
                         f"{lat.get('p50_ms') or 0:>8.0f}{lat.get('p99_ms') or 0:>8.0f}")
        alo, eos, mm2 = (by_label.get(label, {}).get("copy") or {} for label in (ALO, EOS, MM2))
        rate = "records_per_s"
        lines.append(f"exactly-once / at-least-once {_ratio(eos.get(rate), alo.get(rate))}; "
                     f"MirrorFlow / MM2, both exactly-once {_ratio(eos.get(rate), mm2.get(rate))}")
    lines.append(f"(latency: a read_committed reader of the target, records written at the rate shown = "
                 f"{LATENCY_SHARE} x MirrorFlow exactly-once's copy rate)")
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = bench_parser(__doc__, quick="200,000 records, 10 s latency runs")
    parser.add_argument("--records", type=int, help="records per size (default 1,000,000; --quick: 200,000)")
    parser.add_argument("--sizes", default="100,1024", help="record sizes in bytes, comma-separated")
    parser.add_argument("--latency-seconds", type=float, help="length of each latency run (default 20; --quick 10)")
    parser.add_argument("--intervals", default="", help="more MirrorFlow exactly-once runs at these "
                        "transactions.interval_ms, comma-separated (the default run uses 100)")
    args = parser.parse_args(argv)
    args.records = args.records or (200_000 if args.quick else 1_000_000)
    args.latency_seconds = args.latency_seconds or (10.0 if args.quick else 20.0)
    try:
        args.sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    except ValueError:
        parser.error(f"--sizes: comma-separated integers, got {args.sizes!r}")
    try:
        args.intervals = [int(s) for s in args.intervals.split(",") if s.strip()]
    except ValueError:
        parser.error(f"--intervals: comma-separated integers (milliseconds), got {args.intervals!r}")
    if any(ms < 1 for ms in args.intervals):
        parser.error("--intervals: each at least 1 ms")
    if args.records < PARTITIONS or not args.sizes or min(args.sizes) < 1:
        parser.error("--records must be at least 4 and every size at least 1")
    return args


def bench(work: Path, args: argparse.Namespace, report: dict[str, Any]) -> None:
    env = Env(work, *start_clusters(work, report), records=args.records, latency_seconds=args.latency_seconds)
    for size in args.sizes:
        progress(f"--- record size {size} B ---")
        report["sizes"].append(bench_size(env, size, peers(args.intervals)))


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="mirrorflow-exactly-once-"))
    report: dict[str, Any] = {"settings": vars(args) | {"report": str(args.report), "work": str(work)},
                              "machine": machine(), "sizes": []}
    return run_bench(work, report, lambda: bench(work, args, report), lambda: tear_down(report),
                     lambda: any("error" in run for res in report["sizes"] for run in res["runs"]),
                     lambda: table(report), args.keep, args.report)


if __name__ == "__main__":
    sys.exit(main())
