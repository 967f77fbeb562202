#!/usr/bin/env python
"""The audit of one window on local[2] and on a Spark standalone cluster, same data, same run.

Run from the repository root::

    .venv/bin/python bench/spark_audit.py --quick                    # 200,000 records
    .venv/bin/python bench/spark_audit.py --report spark-audit.json  # 1,000,000 records

On two fresh single-node KRaft clusters: ``--records`` records of ``--size`` B are written to a
4-partition source topic (ProducerPerformance, stamped now), MirrorFlow copies them to the target,
then ``mirrorflow audit`` of the route over the window that holds them runs with ``--master
local[2]`` and with ``--master spark://...``: a master and ``--spark-workers`` workers of
``--worker-cores`` cores each on loopback (``replicator.dev.localspark``, PySpark's own classes),
once each in turn, ``--repeat`` times. Wall time = the whole command (interpreter, JVM, Spark
session, the job); records/s = the source's and the target's records read per second of it. The
verdicts must agree (the table says so); the cluster's figures include its executors' start.

Figures only: nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from measure import PARTITIONS, Env, copy_once, raw_producer  # noqa: E402
from peers import MF_SOURCE_ALIAS, mirrorflow_cli, mirrorflow_config, start_mirrorflow  # noqa: E402
from procs import bench_parser, create_topics, progress, run_bench, start_clusters, tear_down  # noqa: E402
from scale import machine  # noqa: E402

from replicator.dev.localspark import LocalSpark, LocalSparkSpec  # noqa: E402
from tests.support import free_port  # noqa: E402

TOPIC = "audited"
SIZE_TAG = "audit"


def audit(config: Path, start: dt.datetime, end: dt.datetime, master: str, key: str, log: Path) -> dict[str, Any]:
    """One ``mirrorflow audit`` run: its wall time and verdict."""
    began = time.monotonic()
    done = subprocess.run([*mirrorflow_cli(), "audit", "--config", str(config), "--route", f"bench-{SIZE_TAG}",
                           "--from", start.isoformat(), "--to", end.isoformat(), "--master", master,
                           "--run-key", key, "--json"], capture_output=True, text=True, cwd=config.parent,
                          env=None, timeout=3600, check=False)
    wall = time.monotonic() - began
    log.write_text(done.stderr)
    if done.returncode not in (0, 1):
        return {"master": master, "error": done.stderr.strip().splitlines()[-1:] or [f"exit {done.returncode}"]}
    summary = json.loads(done.stdout)
    read = summary["counts"]["source"] + summary["counts"]["target"]
    result = {"master": master, "wall_s": round(wall, 1), "records_read": read, "records_per_s": read / wall,
              "status": summary["status"], "counts": summary["counts"]}
    progress(f"  audit on {master}: {wall:.1f} s, {read / wall:,.0f} records read/s, {summary['status']} "
             f"{summary['counts']}")
    return result


def bench(work: Path, args: argparse.Namespace, report: dict[str, Any]) -> None:
    env = Env(work, *start_clusters(work, report), records=args.records, latency_seconds=0)
    create_topics(env.source, {TOPIC: PARTITIONS})
    start = dt.datetime.now(dt.UTC).replace(second=0, microsecond=0)
    report["backlog"] = raw_producer(env, TOPIC, args.size)
    end = dt.datetime.now(dt.UTC).replace(second=0, microsecond=0) + dt.timedelta(minutes=1)
    report["copy"] = copy_once(env, "MirrorFlow", lambda: start_mirrorflow(env, SIZE_TAG, [TOPIC]),
                               f"{MF_SOURCE_ALIAS}.{TOPIC}", args.size)
    config = mirrorflow_config(env, SIZE_TAG, [TOPIC])
    spark = LocalSpark(LocalSparkSpec(home=work / "spark", port=free_port(), webui_port=free_port(),
                                      workers=args.spark_workers, worker_cores=args.worker_cores,
                                      worker_memory=args.worker_memory))
    report["_spark"] = spark
    progress(f"starting a Spark standalone cluster: {args.spark_workers} worker(s) x {args.worker_cores} cores")
    spark.start()
    for n in range(args.repeat):
        for master in ("local[2]", spark.spec.master_url):
            name = "local" if master.startswith("local") else "standalone"
            report["runs"].append(audit(config, start, end, master, f"{name}-{n}", work / f"audit-{name}-{n}.log"))


def table(report: dict[str, Any]) -> str:
    s = report["settings"]
    lines = [f"\n=== audit of {s['records']:,} records x {s['size']} B (and their {s['records']:,} copies) on "
             f"{PARTITIONS} partitions; {report['machine']['cpus']} CPUs; standalone: {s['spark_workers']} worker(s) "
             f"x {s['worker_cores']} cores ===",
             f"{'master':>28}{'wall s':>9}{'records read/s':>16}  verdict"]
    for run in report["runs"]:
        if "error" in run:
            lines.append(f"{run['master']:>28}  FAILED: {run['error']}")
            continue
        lines.append(f"{run['master']:>28}{run['wall_s']:>9.1f}{run['records_per_s']:>16,.0f}  {run['status']} "
                     f"(source {run['counts']['source']:,}, target {run['counts']['target']:,}, "
                     f"missing {run['counts']['missing']})")
    verdicts = {json.dumps(r["counts"], sort_keys=True) for r in report["runs"] if "error" not in r}
    lines.append("verdicts: " + ("the same on every run" if len(verdicts) == 1 else f"DIFFER: {verdicts}"))
    lines.append(f"(run wall time {report['wall_s'] / 60:.1f} min)")
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = bench_parser(__doc__, quick="200,000 records")
    parser.add_argument("--records", type=int, help="records in the window (default 1,000,000; --quick 200,000)")
    parser.add_argument("--size", type=int, default=100, help="record size in bytes (default 100)")
    parser.add_argument("--spark-workers", type=int, default=1, help="standalone workers (default 1)")
    parser.add_argument("--worker-cores", type=int, default=2, help="cores each worker offers (default 2)")
    parser.add_argument("--worker-memory", default="2g", help="memory each worker offers (default 2g)")
    parser.add_argument("--repeat", type=int, default=2, help="audits per master, alternating (default 2)")
    args = parser.parse_args(argv)
    args.records = args.records or (200_000 if args.quick else 1_000_000)
    return args


def stop_all(report: dict[str, Any]) -> None:
    spark = report.pop("_spark", None)
    if spark is not None:
        spark.stop()
    tear_down(report)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="mirrorflow-spark-audit-"))
    report: dict[str, Any] = {"settings": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()}
                              | {"work": str(work)}, "machine": machine(), "runs": []}
    progress(f"work dir {work}; {args.records:,} records x {args.size} B")
    return run_bench(work, report, lambda: bench(work, args, report), lambda: stop_all(report),
                     lambda: any("error" in r for r in report["runs"]) or "error" in report.get("copy", {}),
                     lambda: table(report), args.keep, args.report)


if __name__ == "__main__":
    sys.exit(main())
