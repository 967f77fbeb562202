#!/usr/bin/env python
"""A slow link to the target: MirrorFlow vs MirrorMaker 2 at 0, 50 and 100 ms round trip, and under a bandwidth cap.

Run from the repository root (``make toxiproxy`` builds the proxy)::

    .venv/bin/python bench/slow_link.py --quick                  # 100,000 records of 1 KiB
    .venv/bin/python bench/slow_link.py --report slow-link.json  # 300,000 records of 1 KiB

On two fresh KRaft clusters (``--brokers`` nodes each), the target's brokers are reached through
Toxiproxy (a PROXIED listener advertising the proxy, so every connection of the peers to the
target, bootstrap and leader alike, crosses it) while the source is read directly: the
cross-region shape where the replicator runs beside the source and writes over the WAN
(``--far source``: the other way round, it runs beside the target and reads over the WAN, and
the link's capacity is a ``ConsumerPerformance`` reading through the proxy). A backlog of
``--records`` records of ``--size`` B is written once to a ``--partitions`` source topic; then per
link shape (``--rtts`` in ms, half each way, and ``--caps`` in MB/s at ``--cap-rtt`` ms), one
after the other with nothing else running:

1. the link's capacity: ``ProducerPerformance`` writes as many records through the proxy, with
   MirrorFlow's producer settings (what any client could get over this link);
2. MirrorFlow, 3. MirrorMaker 2 as it comes (acks=all, idempotent, like MirrorFlow), and
4. MirrorMaker 2 with MirrorFlow's producer settings as ``target.producer.*``: each copies the
   backlog into a fresh target topic of its own. Copy rate = records / (first -> last record on
   the target), target end offsets read over a direct connection every 0.2 s; a copy longer
   than ``--budget`` s is measured on what it copied by then.

Figures only: nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from measure import MB, Env, copy_once, raw_consumer, raw_producer  # noqa: E402
from peers import start_mirrorflow, start_mirrorflow_workers, start_mm2  # noqa: E402
from procs import Child, Children, StepFailed, bench_parser, create_topics, progress, run_bench, tear_down  # noqa: E402
from scale import machine  # noqa: E402

from bench.chaoslib.cluster import ProxiedCluster, start_clusters  # noqa: E402
from bench.chaoslib.toxiproxy import ToxiproxyClient, ToxiproxyServer  # noqa: E402
from replicator.kafka.clients import PRODUCER_DEFAULTS  # noqa: E402

TOPIC = "link"
TOXIPROXY = REPO / ".cache" / "bin" / "toxiproxy-server"


@dataclass(frozen=True)
class Link:
    """One shape of the link to the target: a round trip (half each way) and an optional cap each way."""

    rtt_ms: int
    cap_mb_s: float | None = None

    @property
    def name(self) -> str:
        return f"{self.rtt_ms} ms" + (f", {self.cap_mb_s:g} MB/s" if self.cap_mb_s else "")

    @property
    def tag(self) -> str:
        """A topic-name-safe label: ``r100``, ``r50c8``."""
        return f"r{self.rtt_ms}" + (f"c{self.cap_mb_s:g}".replace(".", "_") if self.cap_mb_s else "")

    def toxics(self) -> list[tuple[str, dict[str, int]]]:
        """Toxiproxy toxics (kind, attributes), each put on both directions."""
        out = []
        if self.rtt_ms:
            out.append(("latency", {"latency": self.rtt_ms // 2, "jitter": 0}))
        if self.cap_mb_s:
            out.append(("bandwidth", {"rate": int(self.cap_mb_s * 1024)}))  # KB/s
        return out


def links(rtts: list[int], caps: list[float], cap_rtt: int) -> list[Link]:
    """The link shapes of a run, in order: each round trip, then each cap."""
    return [Link(rtt) for rtt in rtts] + [Link(cap_rtt, cap) for cap in caps]


def share(value: float | None, of: float | None) -> float | None:
    """``value`` as a percentage of ``of`` (None when either is unknown)."""
    return None if value is None or not of else 100.0 * value / of


def shape_link(proxies: ToxiproxyClient, nodes: list[str], link: Link) -> list[str]:
    """Put ``link``'s toxics on the proxy of each of the far side's ``nodes`` (every earlier toxic removed);
    returns their names."""
    proxies.reset()
    names: list[str] = []
    for proxy in nodes:
        for kind, attributes in link.toxics():
            names += proxies.add_toxic(proxy, f"{kind}-{link.tag}", kind, attributes)
    return names


# MirrorFlow's producer defaults that matter on a long link, given to the link's raw producer and to the
# tuned MirrorMaker 2 run, so that each is measured at its best. A Java producer puts the batches of every
# partition a node leads in one request of at most max.request.size (1 MB by default: one full batch); its
# equivalent in librdkafka, message.max.bytes, is MirrorFlow's 100 MiB (librdkafka sends one partition per
# request, so it bounds only a single record there).
TUNED_PRODUCER = {key: PRODUCER_DEFAULTS[key] for key in ("batch.size", "linger.ms", "compression.type")} \
    | {"max.request.size": PRODUCER_DEFAULTS["message.max.bytes"]}


def run_link(env: Env, watch: Env, proxies: ToxiproxyClient, nodes: list[str], args: argparse.Namespace,
             link: Link) -> dict[str, Any]:
    """Both peers over one link shape (``nodes``: the proxies of the far side's nodes)."""
    shape_link(proxies, nodes, link)
    progress(f"== link to the {args.far}: {link.name} round trip{' and cap each way' if link.cap_mb_s else ''}")
    mf, mm, mt = f"mf{link.tag}", f"mm{link.tag}", f"mt{link.tag}"
    run: dict[str, Any] = {"rtt_ms": link.rtt_ms, "cap_mb_s": link.cap_mb_s}
    run["link"] = link_capacity(env, watch, args, f"raw{link.tag}") if args.far == "target" else \
        link_read(env, args, link)
    run["mirrorflow"] = copy_once(watch, f"MirrorFlow ({link.name})", lambda: launch_mirrorflow(env, args, link, mf),
                                  f"{mf}.{TOPIC}", args.size, args.budget)
    if not args.no_mm2:
        tasks = {"tasks.max": str(args.workers)}
        run["mm2"] = copy_once(watch, f"MirrorMaker 2 ({link.name})",
                               lambda: start_mm2(env, f"link-{link.tag}", [TOPIC], alias=mm, extra=tasks),
                               f"{mm}.{TOPIC}", args.size, args.budget)
        tuned = tasks | {f"target.producer.{key}": value for key, value in TUNED_PRODUCER.items()}
        run["mm2_tuned"] = copy_once(watch, f"MirrorMaker 2 tuned ({link.name})",
                                     lambda: start_mm2(env, f"link-{link.tag}-tuned", [TOPIC], alias=mt, extra=tuned),
                                     f"{mt}.{TOPIC}", args.size, args.budget)
    proxies.reset()
    return run


def launch_mirrorflow(env: Env, args: argparse.Namespace, link: Link, alias: str) -> Child | Children:
    """The route's ``--workers`` processes, with the ``--mirrorflow-producer``/``--mirrorflow-consumer``
    settings as the route's ``producer:`` and ``consumer:``."""
    route = {key: settings for key, settings in (("producer", args.mirrorflow_producer),
                                                  ("consumer", args.mirrorflow_consumer)) if settings} or None
    if args.workers > 1:
        return start_mirrorflow_workers(env, f"link-{link.tag}", [TOPIC], args.workers, alias=alias, route=route)
    return start_mirrorflow(env, f"link-{link.tag}", [TOPIC], alias=alias, route=route)


def link_capacity(env: Env, watch: Env, args: argparse.Namespace, topic: str) -> dict[str, Any]:
    """What the link carries at best: ``ProducerPerformance`` (MirrorFlow's producer settings) writing as many
    records into a fresh target topic through the proxy."""
    create_topics(watch.target, {topic: args.partitions})
    through = Env(env.work, env.target, env.target, records=args.records, latency_seconds=0)
    try:
        return raw_producer(through, topic, args.size, tuple(f"{k}={v}" for k, v in TUNED_PRODUCER.items()))
    except StepFailed as failure:
        progress(f"  FAILED: {failure}")
        return {"error": str(failure)}


def link_read(env: Env, args: argparse.Namespace, link: Link) -> dict[str, Any]:
    """What the link carries from a far source at best: ``ConsumerPerformance`` reading the backlog through the
    proxy (a group of its own per link shape)."""
    try:
        return raw_consumer(Env(env.work, env.source, env.source, records=args.records, latency_seconds=0),
                            TOPIC, f"-{link.tag}")
    except StepFailed as failure:
        progress(f"  FAILED: {failure}")
        return {"error": str(failure)}


# -- report ------------------------------------------------------------------------------

def _rate(result: dict[str, Any] | None) -> float | None:
    return None if not result or "error" in result else result.get("records_per_s")


PEERS = ("mirrorflow", "mm2", "mm2_tuned")


def _ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or not b else a / b


def _f(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def table(report: dict[str, Any]) -> str:
    s = report["settings"]
    runs = report["runs"]
    local = {peer: _rate(runs[0].get(peer)) for peer in PEERS} if runs and not runs[0]["rtt_ms"] \
        and not runs[0]["cap_mb_s"] else {}
    workers, brokers, far = s.get("workers", 1), s.get("brokers", 1), s.get("far", "target")
    plural = "s" if workers > 1 else ""
    lines = [f"\n=== {s['records']:,} records x {s['size']} B on {s.get('partitions', 4)} partitions, "
             f"{workers} MirrorFlow worker{plural} / MM2 task{plural}, the {far}'s {brokers} node"
             f"{'s' if brokers > 1 else ''} behind Toxiproxy; {report['machine']['cpus']} CPUs; MB/s, and in "
             f"brackets % of the same peer's rate on the 0 ms link ===",
             f"{'link (round trip, cap)':24}{'link MB/s':>10}{'MirrorFlow':>18}{'MF % link':>10}"
             f"{'MM2':>18}{'MM2 tuned':>18}{'MF / MM2':>9}{'MF / tuned':>11}"]
    for run in runs:
        link = Link(run["rtt_ms"], run["cap_mb_s"])
        rates = {peer: _rate(run.get(peer)) for peer in PEERS}
        capacity = (run.get("link") or {}).get("mb_per_s")
        mb = {peer: None if rate is None else rate * s["size"] / MB for peer, rate in rates.items()}
        cells = {peer: f"{_f(mb[peer], '.1f')} ({_f(share(rates[peer], local.get(peer)), '.0f')} %)"
                 + ("*" if (run.get(peer) or {}).get("partial") else "") for peer in PEERS}
        lines.append(f"{link.name:24}{_f(capacity, '.1f'):>10}{cells['mirrorflow']:>18}"
                     f"{_f(share(mb['mirrorflow'], capacity), '.0f'):>10}{cells['mm2']:>18}{cells['mm2_tuned']:>18}"
                     f"{_f(_ratio(rates['mirrorflow'], rates['mm2']), '.1f'):>9}"
                     f"{_f(_ratio(rates['mirrorflow'], rates['mm2_tuned']), '.1f'):>11}")
        for peer in PEERS:
            if "error" in (run.get(peer) or {}):
                lines.append(f"{'':24}{run[peer]['label']} FAILED: {run[peer]['error'][:150]}")
    measured = ("ProducerPerformance through the proxy with MirrorFlow's producer settings "
                f"({', '.join(f'{k}={v}' for k, v in TUNED_PRODUCER.items())})" if far == "target" else
                "ConsumerPerformance reading the backlog through the proxy")
    lines.append(f"link MB/s: {measured}; MM2 tuned: MirrorFlow's producer settings "
                 f"as target.producer.*; * = the copy took longer than --budget {s['budget']:g} s: the rate of "
                 f"what it copied by then")
    lines.append(f"(run wall time {report['wall_s'] / 60:.1f} min; backlog written at "
                 f"{_f((report.get('backlog') or {}).get('records_per_s'), ',.0f')} rec/s)")
    return "\n".join(lines)


# -- the run -----------------------------------------------------------------------------

def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = bench_parser(__doc__, quick="a backlog of 100,000 records")
    parser.add_argument("--records", type=int, help="records in the backlog (default 300,000; --quick 100,000)")
    parser.add_argument("--size", type=int, default=1024, help="record size in bytes (default 1024)")
    parser.add_argument("--rtts", default="0,50,100", help="round trips to the target in ms, comma-separated")
    parser.add_argument("--caps", default="10", help="bandwidth caps each way in MB/s, comma-separated ('' for none)")
    parser.add_argument("--cap-rtt", type=int, default=50, help="round trip of the capped runs in ms (default 50)")
    parser.add_argument("--budget", type=float, default=90.0,
                        help="seconds a peer may copy for (from its first record); a slower one is measured on "
                             "what it copied by then (default 90)")
    parser.add_argument("--partitions", type=int, default=4, help="partitions of the topic copied (default 4)")
    parser.add_argument("--brokers", type=int, default=1,
                        help="nodes per cluster, each behind a proxy of its own; every topic has one copy, its "
                             "partitions' leaders spread over the nodes: the link is measured, not the "
                             "brokers' replication on this machine's cores (default 1)")
    parser.add_argument("--workers", type=int, default=1,
                        help="MirrorFlow worker processes of the route, and MM2's tasks.max (default 1)")
    parser.add_argument("--far", choices=("target", "source"), default="target",
                        help="the side across the long link: target (the peers run beside the source and write "
                             "over it; the default) or source (they run beside the target and read over it)")
    parser.add_argument("--mirrorflow-producer", action="append", default=[], metavar="KEY=VALUE",
                        help="a librdkafka setting of MirrorFlow's producer (the route's `producer:`), repeatable")
    parser.add_argument("--mirrorflow-consumer", action="append", default=[], metavar="KEY=VALUE",
                        help="a librdkafka setting of MirrorFlow's consumer (the route's `consumer:`), repeatable")
    parser.add_argument("--no-mm2", action="store_true", help="skip MirrorMaker 2")
    parser.add_argument("--toxiproxy", type=Path, default=TOXIPROXY, help="toxiproxy-server (make toxiproxy)")
    args = parser.parse_args(argv)
    args.records = args.records or (100_000 if args.quick else 300_000)
    try:
        args.rtts = [int(v) for v in args.rtts.split(",") if v]
        args.caps = [float(v) for v in args.caps.split(",") if v]
    except ValueError as exc:
        parser.error(f"--rtts/--caps: {exc}")
    if any(v < 0 for v in args.rtts) or any(v <= 0 for v in args.caps):
        parser.error("--rtts must be >= 0 and --caps > 0")
    for option in ("mirrorflow_producer", "mirrorflow_consumer"):
        pairs = [item.partition("=") for item in getattr(args, option)]
        if any(not key or not sep for key, sep, _ in pairs):
            parser.error(f"--{option.replace('_', '-')} takes KEY=VALUE")
        setattr(args, option, {key: value for key, _, value in pairs})
    if args.partitions < 1 or args.workers < 1 or args.brokers < 1:
        parser.error("--partitions, --workers and --brokers must be >= 1")
    return args


def bench(work: Path, args: argparse.Namespace, report: dict[str, Any]) -> None:
    """Proxy, clusters, the backlog, then each link shape; the caller stops what is left running."""
    server = ToxiproxyServer(args.toxiproxy, work / "toxiproxy.log")
    report["_proxy"] = server
    progress("starting clusters (each behind its own proxy; the peers reach the target through it)")
    sides: dict[str, ProxiedCluster] = start_clusters(work / "clusters", server.client, args.brokers, copies=1)
    report["_clusters"] = [node for side in sides.values() for node in side.nodes]
    source, target = sides["source"], sides["target"]
    far = sides[args.far]  # the side across the long link: the peers reach it through its proxies
    env = Env(work, source.proxied if far is source else source.direct,
              target.proxied if far is target else target.direct, records=args.records, latency_seconds=0)
    watch = Env(work, source.direct, target.direct, records=args.records, latency_seconds=0)
    create_topics(source.direct, {TOPIC: args.partitions})
    report["backlog"] = raw_producer(watch, TOPIC, args.size)
    for link in links(args.rtts, args.caps, args.cap_rtt):
        report["runs"].append(run_link(env, watch, server.client, far.proxies, args, link))


def stop_all(report: dict[str, Any]) -> None:
    tear_down(report)
    server = report.pop("_proxy", None)
    if server is not None:
        server.stop()


def failed(report: dict[str, Any]) -> bool:
    return any("error" in (run.get(peer) or {}) for run in report["runs"] for peer in ("link", *PEERS))


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="mirrorflow-slow-link-"))
    report: dict[str, Any] = {"settings": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()}
                              | {"work": str(work)}, "machine": machine(), "runs": []}
    progress(f"work dir {work}; {args.records:,} records x {args.size} B; round trips {args.rtts} ms; "
             f"caps {args.caps} MB/s at {args.cap_rtt} ms")
    return run_bench(work, report, lambda: bench(work, args, report), lambda: stop_all(report),
                     lambda: failed(report), lambda: table(report), args.keep, args.report)


if __name__ == "__main__":
    sys.exit(main())
