#!/usr/bin/env python
"""Throughput over TLS: MirrorFlow and MirrorMaker 2, each over plaintext and over SASL_SSL (SCRAM-SHA-512)
on both sides, in the same run.

Run from the repository root::

    .venv/bin/python bench/tls.py --quick                 # 100,000 records of 1 KiB
    .venv/bin/python bench/tls.py --report tls.json       # 500,000 records of 1 KiB

Two fresh single-node KRaft clusters each get a SASL_SSL listener beside their plaintext one (a
throwaway CA, a SCRAM user; `replicator.dev.tls`, as `mirrorflow dev up --secure`). A backlog of
``--records`` records of ``--size`` B is written once to a 4-partition source topic over plaintext;
then, one after the other with nothing else running, each peer copies it into a fresh target topic
of its own, once through the plaintext listeners and once through the TLS ones (both sides). Copy
rate = records / (first -> last record on the target), target end offsets read over plaintext every
0.2 s; CPU = the peer process's CPU seconds per GiB copied. Figures only: nothing asserts a time.
"""

from __future__ import annotations

import argparse
import secrets
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from measure import MB, PARTITIONS, Env, copy_once, raw_producer  # noqa: E402
from peers import start_mirrorflow, start_mm2  # noqa: E402
from procs import bench_parser, create_topics, progress, run_bench, tear_down  # noqa: E402
from scale import machine  # noqa: E402

from replicator.dev.localcluster import LocalCluster, LocalClusterSpec, TlsListener  # noqa: E402
from replicator.dev.tls import LocalCA  # noqa: E402
from tests.support import free_port  # noqa: E402

TOPIC = "tls"
USER = "bench"
PEERS = ("mirrorflow", "mm2")
MODES = ("plaintext", "tls")


def start_clusters(work: Path, report: dict[str, Any], password: str) -> dict[str, LocalCluster]:
    """Source and target (1 GiB heap each), each with a SASL_SSL listener for the SCRAM user ``bench``."""
    ca = LocalCA(work / "tls")
    keystore = ca.ensure("broker").keystore
    clusters = {}
    for name in ("source", "target"):
        port = free_port()
        listener = TlsListener("SECURE", free_port(), "SASL_SSL", keystore, ca.pem)
        clusters[name] = LocalCluster(LocalClusterSpec(name, work / "clusters" / name, port, free_port(), heap="1g",
                                                       tls_listeners=(listener,), scram_users={USER: password}))
    report["_clusters"] = list(clusters.values())
    progress("starting clusters " + ", ".join(f"{n}={c.spec.bootstrap_servers} (TLS {_tls(c)})"
                                              for n, c in clusters.items()))
    with ThreadPoolExecutor(2) as pool:
        list(pool.map(LocalCluster.start, clusters.values()))
    report["_ca"] = str(ca.pem)
    return clusters


def _tls(cluster: LocalCluster) -> str:
    return cluster.spec.tls_listeners[0].bootstrap_servers(cluster.spec.host)


def librdkafka_props(cluster: LocalCluster, mode: str, password: str, ca: str) -> dict[str, str]:
    """MirrorFlow's cluster properties for ``mode``."""
    if mode == "plaintext":
        return {"bootstrap.servers": cluster.spec.bootstrap_servers}
    return {"bootstrap.servers": _tls(cluster), "security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.username": USER, "sasl.password": password, "ssl.ca.location": ca}


def mm2_props(alias: str, cluster: LocalCluster, mode: str, password: str, ca: str) -> dict[str, str]:
    """MirrorMaker 2's properties of cluster ``alias`` for ``mode`` (the Java client's names)."""
    if mode == "plaintext":
        return {f"{alias}.bootstrap.servers": cluster.spec.bootstrap_servers}
    jaas = (f'org.apache.kafka.common.security.scram.ScramLoginModule required username="{USER}" '
            f'password="{password}";')
    return {f"{alias}.bootstrap.servers": _tls(cluster), f"{alias}.security.protocol": "SASL_SSL",
            f"{alias}.sasl.mechanism": "SCRAM-SHA-512", f"{alias}.sasl.jaas.config": jaas,
            f"{alias}.ssl.truststore.type": "PEM", f"{alias}.ssl.truststore.location": ca}


def bench(work: Path, args: argparse.Namespace, report: dict[str, Any]) -> None:
    password = secrets.token_urlsafe(16)
    clusters = start_clusters(work, report, password)
    source, target = clusters["source"], clusters["target"]
    ca = report.pop("_ca")
    watch = Env(work, source.spec.bootstrap_servers, target.spec.bootstrap_servers, records=args.records,
                latency_seconds=0)
    create_topics(source.spec.bootstrap_servers, {TOPIC: PARTITIONS})
    report["backlog"] = raw_producer(watch, TOPIC, args.size)
    for mode in MODES:
        run: dict[str, Any] = {"mode": mode}
        alias = f"mf{mode[0]}"
        props = (librdkafka_props(source, mode, password, ca), librdkafka_props(target, mode, password, ca))
        run["mirrorflow"] = copy_once(watch, f"MirrorFlow ({mode})", partial(
            start_mirrorflow, watch, f"tls-{mode}", [TOPIC], alias=alias, clusters=props), f"{alias}.{TOPIC}",
            args.size)
        if not args.no_mm2:
            alias = f"mm{mode[0]}"
            extra = mm2_props(alias, source, mode, password, ca) | mm2_props("target", target, mode, password, ca)
            run["mm2"] = copy_once(watch, f"MirrorMaker 2 ({mode})", partial(
                start_mm2, watch, f"tls-{mode}", [TOPIC], alias=alias, extra=extra), f"{alias}.{TOPIC}", args.size)
        report["runs"].append(run)


def _rate(result: dict[str, Any] | None) -> float | None:
    return None if not result or "error" in result else result.get("records_per_s")


def _f(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def table(report: dict[str, Any]) -> str:
    s, runs = report["settings"], report["runs"]
    rates = {(run["mode"], peer): _rate(run.get(peer)) for run in runs for peer in PEERS}
    lines = [f"\n=== {s['records']:,} records x {s['size']} B on {PARTITIONS} partitions; {report['machine']['cpus']} "
             "CPUs; TLS = SASL_SSL with SCRAM-SHA-512 on both sides ===",
             f"{'peer':22}{'plaintext MB/s':>15}{'TLS MB/s':>10}{'TLS / plain':>12}{'CPU s/GiB plain':>16}"
             f"{'CPU s/GiB TLS':>14}"]
    for peer, name in (("mirrorflow", "MirrorFlow"), ("mm2", "MirrorMaker 2")):
        mb = {mode: None if rates.get((mode, peer)) is None else rates[(mode, peer)] * s["size"] / MB
              for mode in MODES}
        cpu = {run["mode"]: (run.get(peer) or {}).get("cpu_s_per_gib") for run in runs}
        ratio = None if mb["plaintext"] is None or mb["tls"] is None else mb["tls"] / mb["plaintext"]
        lines.append(f"{name:22}{_f(mb['plaintext'], '.1f'):>15}{_f(mb['tls'], '.1f'):>10}{_f(ratio, '.2f'):>12}"
                     f"{_f(cpu.get('plaintext'), '.1f'):>16}{_f(cpu.get('tls'), '.1f'):>14}")
    for mode in MODES:
        mf, mm = rates.get((mode, "mirrorflow")), rates.get((mode, "mm2"))
        if mf and mm:
            lines.append(f"MirrorFlow / MirrorMaker 2 over {mode}: {mf / mm:.2f}")
    for run in runs:
        for peer in PEERS:
            if "error" in (run.get(peer) or {}):
                lines.append(f"{run[peer]['label']} FAILED: {run[peer]['error'][:200]}")
    lines.append(f"(run wall time {report['wall_s'] / 60:.1f} min; backlog written at "
                 f"{_f((report.get('backlog') or {}).get('records_per_s'), ',.0f')} rec/s over plaintext)")
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = bench_parser(__doc__, quick="a backlog of 100,000 records")
    parser.add_argument("--records", type=int, help="records in the backlog (default 500,000; --quick 100,000)")
    parser.add_argument("--size", type=int, default=1024, help="record size in bytes (default 1024)")
    parser.add_argument("--no-mm2", action="store_true", help="skip MirrorMaker 2")
    args = parser.parse_args(argv)
    args.records = args.records or (100_000 if args.quick else 500_000)
    return args


def failed(report: dict[str, Any]) -> bool:
    return any("error" in (run.get(peer) or {}) for run in report["runs"] for peer in PEERS)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="mirrorflow-tls-"))
    report: dict[str, Any] = {"settings": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()}
                              | {"work": str(work)}, "machine": machine(), "runs": []}
    progress(f"work dir {work}; {args.records:,} records x {args.size} B, plaintext then TLS")
    return run_bench(work, report, lambda: bench(work, args, report), lambda: tear_down(report),
                     lambda: failed(report), lambda: table(report), args.keep, args.report)


if __name__ == "__main__":
    sys.exit(main())
