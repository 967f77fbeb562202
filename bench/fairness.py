#!/usr/bin/env python
"""Fairness: does one busy topic hold back the small ones? MirrorFlow (and buffer variants) vs MirrorMaker 2.

Run from the repository root::

    .venv/bin/python bench/fairness.py --quick                 # 200,000-record backlog
    .venv/bin/python bench/fairness.py --report fairness.json  # 1,000,000-record backlog

On two fresh single-node KRaft clusters: a backlog of ``--backlog`` records of 100 B is written
to ``busy`` (4 partitions) with ProducerPerformance, before any peer starts. Then, one peer
after the other, each on fresh target topics (created empty beforehand, so a reader is on
them from offset 0): a producer writes ``--small-rate`` records/s to each of ``--small``
one-partition topics ``small-t0000``..., the peer is launched on a route over all of them,
and a reader of the small replicas on the target notes, per record, seen - CreateTime.

With ``--warmup`` (the default) a MirrorFlow run of the defaults goes first and is left out of the table:
the first peer of a run meets brokers still compiling their code paths and drains slower, whatever it is.

- drain: first -> last busy record on the target (end offsets polled every 0.2 s);
- the small topics' latency p50/p99/max of the records created during the drain, and of
  those created in the ``--after`` seconds after it.

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

from confluent_kafka import TopicPartition  # noqa: E402
from fairness_probe import LatencyReader, recent_max, window  # noqa: E402
from measure import Env, raw_producer  # noqa: E402
from peers import start_mirrorflow, start_mm2  # noqa: E402
from procs import (  # noqa: E402
    POLL_S,
    Child,
    Offsets,
    StepFailed,
    bench_parser,
    create_topics,
    progress,
    run_bench,
    start_clusters,
    tear_down,
)
from scale import machine  # noqa: E402
from scale_load import Shape, SteadyLoad  # noqa: E402

BUSY, BUSY_PARTITIONS, RECORD_SIZE = "busy", 4, 100
PATTERN = "busy|small-t[0-9]+"  # the regex both peers copy (the whole name must match)
STARTUP_TIMEOUT_S, STALL_TIMEOUT_S, CATCH_UP_TIMEOUT_S = 180.0, 60.0, 60.0


def variants(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """MirrorFlow's route overrides per variant name (``default``: none)."""
    consumer = {"consumer": {"queued.max.messages.kbytes": str(args.consumer_kbytes)}}
    producer = {"producer": {"queue.buffering.max.messages": str(args.producer_messages)}}
    min_messages = {"consumer": {"queued.min.messages": str(args.queued_min_messages)}}
    tight = {"consumer": consumer["consumer"] | min_messages["consumer"]} | producer
    backoff = {"fetch.queue.backoff.ms": str(args.fetch_backoff_ms)}
    known = {"default": {}, "consumer": consumer, "producer": producer, "both": consumer | producer,
             "minmsgs": min_messages, "tight": tight, "backoff": {"consumer": backoff},
             "minbackoff": {"consumer": min_messages["consumer"] | backoff}}
    known |= dict(parse_variant(v) for v in args.variant)
    unknown = [name for name in args.mf_variants if name not in known]
    if unknown:
        raise SystemExit(f"unknown --mf-variants {unknown}; known: {', '.join(known)}")
    return {name: known[name] for name in args.mf_variants}


def parse_variant(text: str) -> tuple[str, dict[str, Any]]:
    """``NAME=consumer.KEY=VALUE,producer.KEY=VALUE...`` -> (NAME, the route's consumer/producer overrides)."""
    name, _, settings = text.partition("=")
    return name, parse_overrides(settings, f"--variant {text!r}: expected NAME=")


def parse_overrides(settings: str, what: str = "") -> dict[str, Any]:
    """``consumer.KEY=VALUE,producer.KEY=VALUE...`` -> a route's ``consumer``/``producer`` overrides;
    a malformed item exits naming ``what`` (the option and the form expected before the settings)."""
    route: dict[str, dict[str, str]] = {}
    for item in filter(None, settings.split(",")):
        client, _, key_value = item.partition(".")
        key, _, value = key_value.partition("=")
        if client not in ("consumer", "producer") or not key or not value:
            raise SystemExit(f"{what}consumer.KEY=VALUE,producer.KEY=VALUE...")
        route.setdefault(client, {})[key] = value
    return route


def run_peer(env: Env, args: argparse.Namespace, label: str, prefix: str, launch: Any) -> dict[str, Any]:
    """Fresh replicas, the small load, the peer; drain and latency windows. ``launch()`` starts the peer."""
    small = Shape("small", args.small, 1)
    create_topics(env.target, {prefix + BUSY: BUSY_PARTITIONS} | {prefix + name: 1 for name in small.names})
    reader = LatencyReader(env.target, [TopicPartition(prefix + name, 0) for name in small.names])
    load = SteadyLoad(env.source, small, args.small_rate * args.small)
    load.start()
    launched_ms = time.time() * 1000
    progress(f"{label}: starting; small load {args.small_rate} rec/s x {args.small} topics")
    peer: Child = launch()
    result: dict[str, Any] = {"label": label, "prefix": prefix}
    try:
        result["drain"] = watch_drain(env, peer, label, prefix + BUSY, args.backlog, reader)
        drain = result["drain"]
        wait_alive(peer, label, args.after)
        load.stop()
        catch_up(env, peer, label, small, reader)
        result["startup_window"] = window(reader.samples, launched_ms, drain["first_ms"])
        result["during"] = window(reader.samples, drain["first_ms"], drain["done_ms"])
        result["after"] = window(reader.samples, drain["done_ms"], drain["done_ms"] + args.after * 1000)
        progress(f"  {label}: small topics during the drain {_lat(result['during'])}; after {_lat(result['after'])}")
        progress(f"  {label}: worst latency per second of the drain (ms): {result['during']['max_ms_per_second']}")
    except StepFailed as failure:
        progress(f"  FAILED: {failure}")
        result["error"] = str(failure)
    finally:
        load.stop()
        result["load"] = {"sent": load.sent, "failed": load.failed}
        result["exit_code"] = peer.stop(60)
        reader.stop()
        progress(f"{label}: stopped (exit code {result['exit_code']}); log {peer.log}")
    return result


def watch_drain(env: Env, peer: Child, label: str, topic: str, backlog: int, reader: LatencyReader) -> dict[str, Any]:
    """Launch -> first busy record on the target -> all ``backlog`` records there (end offsets every 0.2 s)."""
    offsets = Offsets(env.target)
    launched = last_report = last_progress = time.monotonic()
    first: tuple[float, float] | None = None  # (monotonic, wall ms)
    last_count = 0
    try:
        while True:
            peer.check_alive(f"{label} drain")
            now = time.monotonic()
            count = offsets.total(topic)
            if count > 0 and first is None:
                first = (now, time.time() * 1000)
                progress(f"  {label}: first busy records on the target after {now - launched:.1f} s")
            if count >= backlog and first is not None:
                break
            if count > last_count:
                last_count, last_progress = count, now
            if first is None and now - launched > STARTUP_TIMEOUT_S:
                raise StepFailed(f"{label} start-up: no record on {topic} after {STARTUP_TIMEOUT_S:.0f} s")
            if first is not None and now - last_progress > STALL_TIMEOUT_S:
                raise StepFailed(f"{label} drain stalled at {count:,}/{backlog:,} on {topic}; see {peer.log}")
            if now - last_report > 5:
                worst = recent_max(reader.samples, 5)
                progress(f"  {label}: {count:,}/{backlog:,} busy records on the target; small records seen "
                         f"{reader.seen:,}, worst latency of the last 5 s {_ms(worst)} ms")
                last_report = now
            time.sleep(max(0.0, POLL_S - (time.monotonic() - now)))
    finally:
        offsets.close()
    done, done_ms = time.monotonic(), time.time() * 1000
    drain_s = max(done - first[0], 1e-9)
    progress(f"  {label}: busy backlog drained in {drain_s:.2f} s = {backlog / drain_s:,.0f} rec/s")
    return {"startup_s": round(first[0] - launched, 2), "drain_s": round(drain_s, 3),
            "records_per_s": round(backlog / drain_s), "first_ms": first[1], "done_ms": done_ms}


def wait_alive(peer: Child, label: str, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        peer.check_alive(f"{label} after the drain")
        time.sleep(POLL_S)


def catch_up(env: Env, peer: Child, label: str, small: Shape, reader: LatencyReader) -> None:
    """With the small load stopped: until the reader has seen as many records as the small source topics hold."""
    offsets = Offsets(env.source)
    try:
        wanted = sum(offsets.total(name) for name in small.names)
    finally:
        offsets.close()
    deadline = time.monotonic() + CATCH_UP_TIMEOUT_S
    while reader.seen < wanted:
        peer.check_alive(f"{label} catch-up")
        if time.monotonic() > deadline:
            raise StepFailed(f"{label}: {reader.seen:,}/{wanted:,} small records on the target after "
                             f"{CATCH_UP_TIMEOUT_S:.0f} s; see {peer.log}")
        time.sleep(POLL_S)


# -- report ------------------------------------------------------------------------------

def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


def _f(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def _lat(w: dict[str, Any]) -> str:
    return f"p50 {_ms(w['p50_ms'])} / p99 {_ms(w['p99_ms'])} / max {_ms(w['max_ms'])} ms ({w['records']:,} records)"


def table(report: dict[str, Any]) -> str:
    s = report["settings"]
    lines = [f"\n=== busy backlog {s['backlog']:,} x {RECORD_SIZE} B on {BUSY_PARTITIONS} partitions; "
             f"{s['small']} small topics x {s['small_rate']} rec/s; {report['machine']['cpus']} CPUs ===",
             f"{'peer / variant':24}{'start-up s':>11}{'drain s':>9}{'drain rec/s':>13}"
             f"{'during: n':>11}{'p50 ms':>9}{'p99 ms':>9}{'max ms':>9}"
             f"{'after: n':>10}{'p50 ms':>9}{'p99 ms':>9}{'max ms':>9}"]
    for run in report["runs"]:
        drain, during, after = run.get("drain") or {}, run.get("during") or {}, run.get("after") or {}
        row = f"{run['label']:24}"
        row += f"{_f(drain.get('startup_s'), '.1f'):>11}{_f(drain.get('drain_s'), '.2f'):>9}"
        row += f"{_ms(drain.get('records_per_s')):>13}"
        for w, width in ((during, 11), (after, 10)):
            row += f"{_ms(w.get('records')):>{width}}"
            row += "".join(f"{_ms(w.get(k)):>9}" for k in ("p50_ms", "p99_ms", "max_ms"))
        lines.append(row)
        if "error" in run:
            lines.append(f"{'':24}FAILED: {run['error'][:150]}")
    warmup = report.get("warmup")
    if warmup is not None:
        drain, during = warmup.get("drain") or {}, warmup.get("during") or {}
        lines.append(f"(left out: a warm-up run of MirrorFlow's defaults first, drain {_ms(drain.get('records_per_s'))}"
                     f" rec/s, p99 during it {_ms(during.get('p99_ms'))} ms{'; FAILED' if 'error' in warmup else ''})")
    lines.append(f"(run wall time {report['wall_s'] / 60:.1f} min; backlog written at "
                 f"{_ms((report.get('backlog') or {}).get('records_per_s'))} rec/s)")
    return "\n".join(lines)


# -- the run -----------------------------------------------------------------------------

def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = bench_parser(__doc__, quick="a backlog of 200,000 records")
    parser.add_argument("--backlog", type=int, help="records of 100 B in the busy topic (default 1,000,000; "
                                                    "--quick 200,000)")
    parser.add_argument("--small", type=int, default=10, help="small topics (one partition each)")
    parser.add_argument("--small-rate", type=int, default=50, help="records/s written to each small topic")
    parser.add_argument("--after", type=float, default=5.0, help="seconds of the window after the drain")
    parser.add_argument("--mf-variants", default="default,consumer,producer,both,minmsgs,backoff,minbackoff",
                        help="MirrorFlow runs, comma-separated: default (no override), consumer "
                             "(queued.max.messages.kbytes), producer (queue.buffering.max.messages), both, "
                             "minmsgs (queued.min.messages), tight (consumer+producer+minmsgs), backoff "
                             "(fetch.queue.backoff.ms), minbackoff (minmsgs+backoff), or one of --variant")
    parser.add_argument("--consumer-kbytes", type=int, default=8192,
                        help="queued.max.messages.kbytes of the consumer and both variants (default today 65536)")
    parser.add_argument("--producer-messages", type=int, default=20000,
                        help="queue.buffering.max.messages of the producer and both variants (default today 200000)")
    parser.add_argument("--queued-min-messages", type=int, default=10000,
                        help="queued.min.messages of the minmsgs and tight variants (librdkafka's default 100000)")
    parser.add_argument("--fetch-backoff-ms", type=int, default=20,
                        help="fetch.queue.backoff.ms of the backoff and minbackoff variants (librdkafka's: 1000)")
    parser.add_argument("--variant", action="append", default=[], metavar="NAME=consumer.KEY=V,producer.KEY=V",
                        help="define a MirrorFlow variant of route overrides (repeatable); run it by naming it "
                             "in --mf-variants")
    parser.add_argument("--no-mm2", action="store_true", help="skip MirrorMaker 2")
    parser.add_argument("--warmup", action=argparse.BooleanOptionalAction, default=True,
                        help="first a MirrorFlow run with the defaults, left out of the table: the first peer of a "
                             "run drains slower and waits longer (fresh brokers still compiling), whatever it is "
                             "(default: on)")
    args = parser.parse_args(argv)
    args.backlog = args.backlog or (200_000 if args.quick else 1_000_000)
    args.mf_variants = [v for v in args.mf_variants.split(",") if v]
    return args


def bench(work: Path, args: argparse.Namespace, report: dict[str, Any]) -> None:
    """Clusters, the busy backlog, then each peer; the caller stops what is left running."""
    env = Env(work, *start_clusters(work, report), records=args.backlog, latency_seconds=0)
    create_topics(env.source, {BUSY: BUSY_PARTITIONS} | {name: 1 for name in Shape("small", args.small, 1).names})
    report["backlog"] = raw_producer(env, BUSY, RECORD_SIZE)
    if args.warmup:
        report["warmup"] = run_peer(env, args, "MirrorFlow warm-up", "mfwarmup.",
                                    lambda: start_mirrorflow(env, "fair-warmup", [PATTERN], alias="mfwarmup"))
    for name, route in variants(args).items():
        alias = f"mf{name}"
        report["runs"].append(run_peer(env, args, f"MirrorFlow {name}", f"{alias}.", lambda n=name, r=route, a=alias:
                                       start_mirrorflow(env, f"fair-{n}", [PATTERN], route=r, alias=a)))
        report["runs"][-1]["route_overrides"] = route
    if not args.no_mm2:
        report["runs"].append(run_peer(env, args, "MirrorMaker 2", "source.",
                                       lambda: start_mm2(env, "fair", [PATTERN], regex=True)))


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)

    work = Path(tempfile.mkdtemp(prefix="mirrorflow-fairness-"))
    report: dict[str, Any] = {"settings": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()}
                              | {"work": str(work)}, "machine": machine(), "runs": []}
    progress(f"work dir {work}; backlog {args.backlog:,}; MirrorFlow variants {args.mf_variants}")
    return run_bench(work, report, lambda: bench(work, args, report), lambda: tear_down(report),
                     lambda: any("error" in run for run in [*report["runs"], report.get("warmup") or {}]),
                     lambda: table(report), args.keep,
                     args.report)



if __name__ == "__main__":
    sys.exit(main())
