#!/usr/bin/env python
"""Idle floor: what holding a shape's partitions costs a worker with nothing to copy, beside what librdkafka
alone costs to hold the same partitions (plain consumers, the topics split over 1, 2, 4 of them).

Run from the repository root::

    .venv/bin/python bench/idle_floor.py --topics 2000 --partitions 1 [--splits 1,2,4] [--report idle.json]
    .venv/bin/python bench/idle_floor.py --quick        # 200 topics x 4, windows of 8 s

"Idle cost of one worker at 2,000 partitions" is a worker's own cost only if something that does less costs
less. On two fresh single-node clusters, one record in each source partition: ``mirrorflow run`` copies them,
then nothing more comes; after ``--settle`` seconds its CPU (per thread) is measured over ``--seconds``. Then
the worker stops, and a process of plain librdkafka consumers (MirrorFlow's consumer settings, the partitions
assigned at their ends, each waiting 50 ms per call as the copy loop does) holds the same partitions, split
by topic over each number of consumers in ``--splits`` (and with one consumer at each other
``--fetch-waits``), measured the same way. The split shows how librdkafka's
cost grows with the topics one client holds (each fetch answer's topics are looked up in a list). Figures
only: nothing here asserts a time.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import tempfile
import threading
import time
from multiprocessing.synchronize import Event
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from procs import bench_parser, cpu_seconds, progress, run_bench, start_clusters, tear_down, thread_cpu  # noqa: E402
from scale_load import Shape, SteadyLoad, busiest_threads, create_shape, watch_startup  # noqa: E402

CONSUME_WAIT_S = 0.05  # as the copy loop waits for records when it has nothing to do


def split(names: list[str], ways: int) -> list[list[str]]:
    """``names`` dealt over ``ways`` consumers (every ``ways``-th to the same one); none left empty."""
    return [names[i::ways] for i in range(min(ways, len(names)))]


def parse_counts(text: str, option: str, unit: str) -> list[int]:
    """``1,2,4`` -> [1, 2, 4]; a value that is not a whole number of at least 1 is refused by ``option``'s name."""
    values = []
    for part in text.split(","):
        try:
            value = int(part)
        except ValueError:
            raise ValueError(f"{option}: {part.strip()!r} is not a number of {unit}") from None
        if value < 1:
            raise ValueError(f"{option}: {value} {unit}: use at least 1")
        values.append(value)
    return values


def _hold(bootstrap: str, groups: list[list[str]], partitions: int, fetch_wait_ms: int, ready: Event,
          stop: Event) -> None:
    """A process of ``len(groups)`` plain consumers, each holding its topics' partitions at their ends."""
    from confluent_kafka import OFFSET_END, Consumer, TopicPartition

    from replicator.kafka.clients import CONSUMER_DEFAULTS

    def run(index: int, topics: list[str]) -> None:
        consumer = Consumer({**CONSUMER_DEFAULTS, "bootstrap.servers": bootstrap, "group.id": f"idle-floor-{index}",
                             "enable.auto.commit": False, "log_level": 3,
                             "fetch.wait.max.ms": fetch_wait_ms})
        consumer.assign([TopicPartition(t, p, OFFSET_END) for t in topics for p in range(partitions)])
        while not stop.is_set():
            consumer.consume(500, CONSUME_WAIT_S)
        consumer.close()

    threads = [threading.Thread(target=run, args=(i, topics), name=f"holder-{i}") for i, topics in enumerate(groups)]
    for thread in threads:
        thread.start()
    ready.set()
    for thread in threads:
        thread.join()


def window(pid: int, settle: float, seconds: float, label: str) -> dict[str, Any]:
    """After ``settle`` s, the process's CPU over ``seconds`` (% of one core), total and per thread name."""
    time.sleep(settle)
    cpu0, threads0, t0 = cpu_seconds(pid), thread_cpu(pid), time.monotonic()
    time.sleep(seconds)
    cpu1, threads1, t1 = cpu_seconds(pid), thread_cpu(pid), time.monotonic()
    if cpu0 is None or cpu1 is None:
        raise RuntimeError(f"{label}: cannot read /proc/{pid}")
    result = {"cpu_pct": round(100 * (cpu1 - cpu0) / (t1 - t0), 2), "threads": len(threads1),
              "threads_cpu_pct": busiest_threads(threads0, threads1, t1 - t0, top=4)}
    progress(f"  {label}: CPU {result['cpu_pct']:.1f} % of a core over {t1 - t0:.0f} s ({result['threads']} "
             f"threads; busiest: {_busiest(result)})")
    return result


def _busiest(result: dict[str, Any]) -> str:
    return ", ".join(f"{name} {pct:.1f}" for name, pct in result["threads_cpu_pct"].items())


def measure_worker(work: Path, source: str, target: str, shape: Shape, args: Any, report: dict[str, Any]) -> None:
    from measure import Env
    from peers import MF_SOURCE_ALIAS, start_mirrorflow

    env = Env(work, source, target, records=0, latency_seconds=0)
    peer = start_mirrorflow(env, "idle", [shape.pattern])
    try:
        startup = watch_startup(target, peer, "MirrorFlow", shape.partitions_of(f"{MF_SOURCE_ALIAS}."), 900)
        report["worker_startup_s"] = startup.get("seconds")
        report["holders"].append({"holder": "MirrorFlow worker", **window(peer.pid, args.settle, args.seconds,
                                                                          "MirrorFlow worker")})
    finally:
        report["worker_exit"] = peer.stop(30)


def plain_holders(splits: list[int], fetch_waits: list[int]) -> list[tuple[int, int]]:
    """(consumers, fetch.wait.max.ms) of each plain holder: every split at the first wait, then one consumer at
    each other wait."""
    return [(ways, fetch_waits[0]) for ways in splits] + [(1, wait) for wait in fetch_waits[1:]]


def measure_plain(source: str, shape: Shape, ways: int, fetch_wait_ms: int, args: Any,
                  report: dict[str, Any]) -> None:
    context = multiprocessing.get_context("spawn")
    ready, stop = context.Event(), context.Event()
    groups = split(shape.names, ways)
    holder = context.Process(target=_hold, args=(source, groups, shape.partitions, fetch_wait_ms, ready, stop),
                             daemon=True)
    holder.start()
    label = (f"librdkafka alone: {len(groups)} consumer{'s' if len(groups) > 1 else ''}, "
             f"fetch.wait.max.ms {fetch_wait_ms}")
    try:
        if not ready.wait(60) or holder.pid is None:
            raise RuntimeError(f"{label}: the consumers did not start in 60 s")
        figures = window(holder.pid, args.settle, args.seconds, label)
        report["holders"].append({"holder": label, "topics_each": len(groups[0]), **figures})
    finally:
        stop.set()
        holder.join(30)
        if holder.is_alive():
            holder.kill()


def table(report: dict[str, Any]) -> str | None:
    holders = report.get("holders")
    if not holders:
        return None
    settings = report["settings"]
    partitions = settings["topics"] * settings["partitions"]
    lines = [f"\n=== {settings['topics']:,} topics x {settings['partitions']} = {partitions:,} partitions held, "
             f"nothing to copy; {settings['seconds']:g} s windows after {settings['settle']:g} s; "
             f"{os.cpu_count()} CPUs ===",
             f"{'holder':58s} {'topics each':>11s} {'CPU %':>7s}  busiest threads (% of a core)"]
    for row in holders:
        each = f"{row['topics_each']:,}" if "topics_each" in row else f"{settings['topics']:,}"
        lines.append(f"{row['holder']:58s} {each:>11s} {row['cpu_pct']:7.1f}  {_busiest(row)}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = bench_parser(__doc__, "200 topics x 4, windows of 8 s after 5 s")
    parser.add_argument("--topics", type=int, help="source topics (default 2000; --quick 200)")
    parser.add_argument("--partitions", type=int, help="partitions per topic (default 1; --quick 4)")
    parser.add_argument("--splits", default="1,2,4", help="numbers of plain consumers to split the topics over")
    parser.add_argument("--settle", type=float, help="seconds before each window (default 10; --quick 5)")
    parser.add_argument("--seconds", type=float, help="each window (default 20; --quick 8)")
    parser.add_argument("--fetch-waits", default="500",
                        help="fetch.wait.max.ms of the plain consumers (the first for each split; each other with "
                        "one consumer; MirrorFlow's default is 500)")
    parser.add_argument("--no-worker", action="store_true", help="only the plain consumers")
    args = parser.parse_args(argv)
    sizes = {"--topics": args.topics, "--partitions": args.partitions, "--seconds": args.seconds}
    wrong = [name for name, value in sizes.items() if value is not None and value < 1]
    if wrong:
        parser.error(f"{', '.join(wrong)} must be at least 1")
    if args.settle is not None and args.settle < 0:
        parser.error("--settle must not be negative")
    try:
        splits = parse_counts(args.splits, "--splits", "consumers")
        fetch_waits = parse_counts(args.fetch_waits, "--fetch-waits", "ms")
    except ValueError as exc:
        parser.error(str(exc))
    args.settle = args.settle if args.settle is not None else (5.0 if args.quick else 10.0)
    args.seconds = args.seconds or (8.0 if args.quick else 20.0)
    shape = Shape(f"idle{args.topics or (200 if args.quick else 2000)}x{args.partitions or (4 if args.quick else 1)}",
                  args.topics or (200 if args.quick else 2000), args.partitions or (4 if args.quick else 1))
    work = Path(tempfile.mkdtemp(prefix="mirrorflow-idle-"))
    report: dict[str, Any] = {"settings": {"topics": shape.topics, "partitions": shape.partitions, "splits": splits,
                                           "fetch_waits": fetch_waits,
                                           "settle": args.settle, "seconds": args.seconds, "work": str(work)},
                              "holders": []}

    def body() -> None:
        source, target = start_clusters(work, report)
        progress(f"creating {shape.topics:,} topics x {shape.partitions}")
        create_shape(source, shape)
        SteadyLoad(source, shape, 0).seed()  # one record per partition: the worker's start-up is seen on the target
        if not args.no_worker:
            measure_worker(work, source, target, shape, args, report)
        for ways, fetch_wait_ms in plain_holders(splits, fetch_waits):
            measure_plain(source, shape, ways, fetch_wait_ms, args, report)

    return run_bench(work, report, body, lambda: tear_down(report), lambda: False,
                     lambda: table(report), args.keep, args.report)


if __name__ == "__main__":
    sys.exit(main())
