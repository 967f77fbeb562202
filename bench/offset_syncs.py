#!/usr/bin/env python
"""How many offset syncs each peer writes, and what its offset-syncs topic keeps: MirrorFlow vs MirrorMaker 2.

Run from the repository root::

    .venv/bin/python bench/offset_syncs.py [--records 100000] [--per-transaction 100]

On two fresh single-node KRaft clusters, two 4-partition source topics get ``--records``
records of 100 B each: ``plain`` from a plain idempotent producer, ``txn`` from a
transactional one committing every ``--per-transaction`` records (Kafka Streams with
exactly-once, or any transactional writer: each commit leaves a marker offset in every
partition it wrote). Each peer then copies both topics; once every record is on the target
its offset-syncs topic is read and its syncs counted per source topic, written and kept (the
last record of each key: what compaction leaves). A sync keeps the committed offsets of groups
translatable: MirrorFlow writes one where the offset map changes (a run of records starts, or
steps over a transaction marker: the run's record is rewritten, one key per run of up to
``MAX_STEPS`` steps); MirrorMaker 2 one every ``offset.lag.max`` (100) records at most, keyed by
partition (compaction keeps the last). MirrorFlow runs twice: at-least-once, and exactly-once
(its own transactions leave a marker in every target partition they wrote: a sync each).

The figures are extrapolated to a day at ``--day-rate`` records/s per partition with a
transaction every ``--day-transaction-ms``: syncs written, and what compaction leaves.
Figures only: nothing here asserts anything.
"""

from __future__ import annotations

import argparse
import struct
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition  # noqa: E402
from measure import PARTITIONS, Env, raw_producer, watch_copy  # noqa: E402
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

from replicator.domain.offset_sync import MAX_STEPS, decode_sync  # noqa: E402

TOPICS = ("plain", "txn")
EOS_INTERVAL_MS = 100  # an exactly-once route's default transactions.interval_ms
SIZE = 100
DAY_S = 86_400
MF_ALIAS, MF_EOS_ALIAS, MM2_ALIAS = "mf", "mfx", "source"


def write_transactions(bootstrap: str, topic: str, records: int, per_transaction: int) -> dict[str, Any]:
    """``records`` records round-robin over the partitions, committed every ``per_transaction``."""
    progress(f"transactional producer: {records:,} x {SIZE} B into {topic}, a commit every {per_transaction}")
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"bench-{topic}", "linger.ms": "5"})
    producer.init_transactions(30)
    started, value, transactions = time.monotonic(), b"x" * SIZE, 0
    for first in range(0, records, per_transaction):
        producer.begin_transaction()
        for n in range(first, min(records, first + per_transaction)):
            producer.produce(topic, value, partition=n % PARTITIONS)
        producer.commit_transaction(30)
        transactions += 1
    seconds = time.monotonic() - started
    progress(f"  {transactions:,} transactions in {seconds:.1f} s")
    return {"records": records, "transactions": transactions, "seconds": round(seconds, 2)}


def read_all(bootstrap: str, topic: str) -> list[tuple[bytes, bytes]]:
    """Every (key, value) of a one-partition topic, from its start to its end now."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-offset-syncs-reader",
                         "enable.auto.commit": "false"})
    try:
        _low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10, cached=False)
        consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        out: list[tuple[bytes, bytes]] = []
        deadline = time.monotonic() + 60
        position = 0
        while position < high:
            if time.monotonic() > deadline:
                raise StepFailed(f"reading {topic}: {position}/{high} after 60 s")
            for message in consumer.consume(10_000, 0.5):
                if message.error() is None:
                    out.append((message.key() or b"", message.value() or b""))
                    position = (message.offset() or 0) + 1  # a fetched record always has one
        return out
    finally:
        consumer.close()


def mf_sync_topic(key: bytes, value: bytes) -> str:
    """The source topic of one of MirrorFlow's offset syncs."""
    return decode_sync(key, value).start.topic


def mm2_sync_topic(key: bytes, _value: bytes) -> str:
    """The source topic named by MirrorMaker 2's offset-sync key (a short-prefixed string, then the partition)."""
    (length,) = struct.unpack(">h", key[:2])
    return key[2:2 + length].decode()


def count_syncs(records: list[tuple[bytes, bytes]], topic_of: Any) -> dict[str, dict[str, int]]:
    """Per source topic: syncs written and their bytes (key + value), and what compaction keeps of them
    (the last record of each key)."""
    counts: dict[str, dict[str, int]] = {}
    last: dict[bytes, tuple[str, int]] = {}
    for key, value in records:
        topic = topic_of(key, value)
        entry = counts.setdefault(topic, {"syncs": 0, "bytes": 0, "kept": 0, "kept_bytes": 0})
        entry["syncs"] += 1
        entry["bytes"] += len(key) + len(value)
        last[key] = (topic, len(key) + len(value))
    for topic, size in last.values():
        counts[topic]["kept"] += 1
        counts[topic]["kept_bytes"] += size
    return counts


def per_day(syncs: int, records: int, transactions: int, args: argparse.Namespace, per_record: bool) -> float:
    """Syncs a day at ``--day-rate`` per partition: from the measured syncs per record, or per transaction."""
    if per_record:
        return syncs / records * args.day_rate * PARTITIONS * DAY_S if records else 0.0
    return syncs / transactions * (DAY_S * 1000 / args.day_transaction_ms) if transactions else 0.0


def run_peer(env: Env, label: str, launch: Any, prefix: str, sync_source: str, sync_topic: str,
             topic_of: Any, transactional_target: bool = False) -> dict[str, Any]:
    progress(f"{label}: starting on {', '.join(TOPICS)}")
    peer: Child = launch()
    result: dict[str, Any] = {"label": label}
    try:
        for topic in TOPICS:
            counter = RecordCounter(env.target, f"{prefix}{topic}", PARTITIONS) if transactional_target else None
            result[f"copy_{topic}"] = watch_copy(env, peer, f"{label} {topic}", f"{prefix}{topic}", SIZE,
                                                 counter=counter)
        time.sleep(2)  # the last syncs are written after the records they describe are acknowledged
        result["syncs"] = count_syncs(read_all(sync_source, sync_topic), topic_of)
        progress(f"  {label}: offset syncs per source topic: {result['syncs']}")
    except StepFailed as failure:
        progress(f"  FAILED: {failure}")
        result["error"] = str(failure)
    finally:
        result["exit_code"] = peer.stop(60)
    return result


def table(report: dict[str, Any]) -> str:
    s, txn = report["settings"], report.get("transactions") or {}
    lines = [f"\n=== {s['records']:,} records x {SIZE} B per topic on {PARTITIONS} partitions; txn: a commit every "
             f"{s['per_transaction']} records ({txn.get('transactions', 0):,} transactions) ===",
             f"{'peer':25}{'topic':7}{'syncs':>8}{'bytes':>10}{'kept':>6}{'kept B':>8}"
             f"{'a day: written':>16}{'a day: kept':>13}"]
    for run in report["runs"]:
        for topic in TOPICS:
            found = (run.get("syncs") or {}).get(topic) or {"syncs": 0, "bytes": 0, "kept": 0, "kept_bytes": 0}
            day, kept = day_figures(run["label"], topic, found, s, txn.get("transactions", 0))
            lines.append(f"{run['label']:25}{topic:7}{found['syncs']:>8,}{found['bytes']:>10,}{found['kept']:>6,}"
                         f"{found['kept_bytes']:>8,}{day:>16,.0f}{kept:>13,.0f}")
        if "error" in run:
            lines.append(f"{'':25}FAILED: {run['error'][:150]}")
    lines.append(f"a day: {s['day_rate']:,} records/s per partition, a transaction every {s['day_transaction_ms']} ms "
                 f"(the source's in txn; an exactly-once route's own: its default 100 ms); kept: after compaction")
    return "\n".join(lines)


def day_figures(label: str, topic: str, found: dict[str, int], settings: dict[str, Any],
                transactions: int) -> tuple[float, float]:
    """Syncs a day's copy writes, and what compaction keeps of them, from what this run wrote and kept.

    MirrorFlow at-least-once writes a sync per run start: per partition start in ``plain``, per source
    transaction in ``txn``; exactly-once, per partition per transaction of its own (every 100 ms) -- a busy
    partition's copy is in every one. A day of them is kept as runs of MAX_STEPS + 1 run starts, one record
    each (a short copy's runs are shorter: the measured "kept" is not a day's share). MM2 writes one per
    ``offset.lag.max`` records and keeps one per partition.
    """
    syncs = found["syncs"]
    if label.startswith("MirrorFlow"):
        if label.endswith("exactly-once"):
            day = float(PARTITIONS * DAY_S * 1000 // EOS_INTERVAL_MS)
        elif topic == "plain":
            return float(syncs), float(found["kept"])  # one per partition start, whatever the rate
        else:
            day = per_day(syncs, settings["records"], transactions, _ns(settings), per_record=False)
        return day, day / (MAX_STEPS + 1)
    return per_day(syncs, settings["records"], 0, _ns(settings), per_record=True), float(found["kept"])


def _ns(settings: dict[str, Any]) -> argparse.Namespace:
    return argparse.Namespace(**settings)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = bench_parser(__doc__)
    parser.add_argument("--records", type=int, default=100_000, help="records per source topic (default 100,000)")
    parser.add_argument("--per-transaction", type=int, default=100, help="records per transaction in txn")
    parser.add_argument("--day-rate", type=int, default=100, help="records/s per partition of the day's estimate")
    parser.add_argument("--day-transaction-ms", type=int, default=100,
                        help="ms between transactions of the day's estimate (Kafka Streams' exactly-once commit "
                             "interval is 100 ms)")
    parser.add_argument("--no-mm2", action="store_true", help="skip MirrorMaker 2")
    args = parser.parse_args(argv)
    if args.records < PARTITIONS or args.per_transaction < 1:
        parser.error("--records must be at least 4 and --per-transaction at least 1")
    return args


def bench(work: Path, args: argparse.Namespace, report: dict[str, Any]) -> None:
    env = Env(work, *start_clusters(work, report), records=args.records, latency_seconds=0)
    create_topics(env.source, dict.fromkeys(TOPICS, PARTITIONS))
    report["plain"] = raw_producer(env, "plain", SIZE)
    report["transactions"] = write_transactions(env.source, "txn", args.records, args.per_transaction)
    report["runs"].append(run_peer(
        env, "MirrorFlow", lambda: start_mirrorflow(env, "syncs", list(TOPICS), alias=MF_ALIAS), f"{MF_ALIAS}.",
        env.target, "mirrorflow-offset-syncs.bench-syncs.internal", mf_sync_topic))
    report["runs"].append(run_peer(
        env, "MirrorFlow exactly-once",
        lambda: start_mirrorflow(env, "syncs-eos", list(TOPICS), alias=MF_EOS_ALIAS,
                                 route={"guarantee": "exactly-once"}),
        f"{MF_EOS_ALIAS}.", env.target, "mirrorflow-offset-syncs.bench-syncs-eos.internal", mf_sync_topic,
        transactional_target=True))
    if not args.no_mm2:
        report["runs"].append(run_peer(
            env, "MirrorMaker 2", lambda: start_mm2(env, "syncs", list(TOPICS), alias=MM2_ALIAS),
            f"{MM2_ALIAS}.", env.source, "mm2-offset-syncs.target.internal", mm2_sync_topic))


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="mirrorflow-offset-syncs-"))
    report: dict[str, Any] = {"settings": vars(args) | {"report": str(args.report), "work": str(work)},
                              "machine": machine(), "runs": []}
    return run_bench(work, report, lambda: bench(work, args, report), lambda: tear_down(report),
                     lambda: any("error" in run for run in report["runs"]), lambda: table(report), args.keep,
                     args.report)


if __name__ == "__main__":
    sys.exit(main())
