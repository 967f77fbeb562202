"""What the bench measures: the raw limits, a peer's copy, end-to-end latency."""

from __future__ import annotations

import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from procs import (  # noqa: E402
    POLL_S,
    Child,
    Children,
    Offsets,
    StepFailed,
    cpu_total,
    java,
    percentile,
    progress,
    run_tool,
)

PARTITIONS = 4
MB = 1024 * 1024
GIB = 1024 ** 3
WARMUP_S = 5  # seconds of a latency run left out of its steady-state percentiles


@dataclass
class Env:
    work: Path
    source: str
    target: str
    records: int
    latency_seconds: float
    latency_fraction: float = 0.5


def raw_producer(env: Env, topic: str, size: int, props: tuple[str, ...] = ()) -> dict[str, Any]:
    """``ProducerPerformance`` writing ``env.records`` records of ``size`` B into ``topic`` of ``env.source``;
    ``props``: more producer properties (``key=value``)."""
    progress(f"raw producer: {env.records:,} x {size} B into {topic} (acks=all, idempotent, unthrottled"
             + (f", {' '.join(props)})" if props else ")"))
    args = java("org.apache.kafka.tools.ProducerPerformance", "--topic", topic,
                "--num-records", str(env.records), "--record-size", str(size), "--throughput", "-1",
                "--producer-props", f"bootstrap.servers={env.source}", "acks=all", "enable.idempotence=true", *props)
    out = run_tool("ProducerPerformance", args, env.work / f"producer-perf-{topic}.log",
                   timeout=120 + env.records / 2000)
    final = [line for line in out.splitlines() if "records sent" in line][-1]
    match = re.search(r"(\d+) records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), ([\d.]+) ms avg latency", final)
    if not match:
        raise StepFailed(f"ProducerPerformance: unexpected summary {final!r}")
    result = {"records": int(match[1]), "records_per_s": float(match[2]), "mb_per_s": float(match[3]),
              "avg_latency_ms": float(match[4]), "summary": final.strip()}
    progress(f"  raw producer: {result['records_per_s']:,.0f} rec/s, {result['mb_per_s']:.1f} MB/s")
    return result


def raw_consumer(env: Env, topic: str, tag: str = "") -> dict[str, Any]:
    """``ConsumerPerformance`` reading ``env.records`` records of ``topic`` of ``env.source`` from its start, in a
    group of its own (``tag`` names it, so that the same topic can be read again)."""
    progress(f"raw consumer: reading {env.records:,} records of {topic}")
    args = java("org.apache.kafka.tools.ConsumerPerformance", "--bootstrap-server", env.source,
                "--topic", topic, "--messages", str(env.records), "--timeout", "60000",
                "--group", f"bench-consumer-perf-{topic}{tag}")
    out = run_tool("ConsumerPerformance", args, env.work / f"consumer-perf-{topic}{tag}.log",
                   timeout=120 + env.records / 2000)
    lines = [line for line in out.splitlines() if line.count(",") >= 9]
    header = next((line for line in lines if "start.time" in line), None)
    data = [line for line in lines if "start.time" not in line]
    if header is None or not data:
        raise StepFailed(f"ConsumerPerformance: no summary in its output:\n{out[-1500:]}")
    row = dict(zip([h.strip() for h in header.split(",")], [v.strip() for v in data[-1].split(",")], strict=False))
    consumed = int(row["data.consumed.in.nMsg"])
    if consumed < env.records:
        raise StepFailed(f"ConsumerPerformance read {consumed} of {env.records} records")
    # fetch.* excludes the group join (rebalance.time.ms); the copy figures exclude start-up too.
    result = {"records": consumed, "records_per_s": float(row["fetch.nMsg.sec"]),
              "mb_per_s": float(row["fetch.MB.sec"]), "with_join_records_per_s": float(row["nMsg.sec"]),
              "rebalance_ms": float(row["rebalance.time.ms"])}
    progress(f"  raw consumer: {result['records_per_s']:,.0f} rec/s, {result['mb_per_s']:.1f} MB/s "
             f"(group join {result['rebalance_ms']:.0f} ms excluded)")
    return result


def watch_copy(env: Env, peer: Child | Children, label: str, target_topic: str, size: int,
               budget_s: float | None = None, counter: Any = None) -> dict[str, Any]:
    """From the peer's launch until ``target_topic`` holds N records (polled every 0.2 s), or, with
    ``budget_s``, until that long after the first record (then the figures are of what was copied by then,
    and ``partial`` is true). ``counter``: what counts the records (end offsets by default; a
    ``RecordCounter`` for a target written in transactions)."""
    offsets = counter or Offsets(env.target)
    launched = time.monotonic()
    first_at = first_cpu = None
    last_count, last_progress, last_report = 0, launched, launched
    startup_timeout = 180.0
    stall_timeout = 60.0
    try:
        while True:
            peer.check_alive(f"{label} copy")
            now = time.monotonic()
            count = offsets.total(target_topic)
            cpu = cpu_total(peer.pids)
            if count > 0 and first_at is None:
                first_at, first_cpu = now, cpu
                progress(f"  {label}: first records on the target after {now - launched:.1f} s")
            if count >= env.records or (budget_s is not None and first_at is not None
                                        and now - first_at >= budget_s and count > 0):
                done_at, done_cpu, copied = now, cpu, min(count, env.records)
                break
            if count > last_count:
                last_count, last_progress = count, now
            if first_at is None and now - launched > startup_timeout:
                raise StepFailed(f"{label} start-up: no record on {target_topic} after {startup_timeout:.0f} s; "
                                 f"see {peer.log}")
            if first_at is not None and now - last_progress > stall_timeout:
                raise StepFailed(f"{label} copy stalled at {count:,}/{env.records:,} records on {target_topic} "
                                 f"(no progress for {stall_timeout:.0f} s); see {peer.log}")
            if now - last_report > 5:
                progress(f"  {label}: {count:,}/{env.records:,} records on {target_topic}")
                last_report = now
            time.sleep(max(0.0, POLL_S - (time.monotonic() - now)))
    finally:
        offsets.close()
    copy_s = max(done_at - first_at, 1e-9)  # type: ignore[operator]
    data = copied * size
    result: dict[str, Any] = {
        "target_topic": target_topic,
        "copied": copied,
        "partial": copied < env.records,
        "startup_s": round(first_at - launched, 3),  # type: ignore[operator]
        "copy_s": round(copy_s, 3),
        "wall_s": round(done_at - launched, 3),
        "records_per_s": copied / copy_s,
        "mb_per_s": data / MB / copy_s,
        "wall_records_per_s": copied / (done_at - launched),
        "cpu_s_total": done_cpu,
        "cpu_s_copy": None if done_cpu is None or first_cpu is None else done_cpu - first_cpu,
    }
    result["cpu_s_per_gib"] = None if result["cpu_s_copy"] is None else result["cpu_s_copy"] / (data / GIB)
    result["cpu_s_per_gib_incl_startup"] = None if done_cpu is None else done_cpu / (data / GIB)
    if result["partial"]:
        progress(f"  {label}: {copied:,}/{env.records:,} records copied in the {budget_s:.0f} s budget")
    # Copied between two looks (another topic's copy was being watched meanwhile): no rate to tell.
    rate = (f"{result['records_per_s']:,.0f} rec/s, {result['mb_per_s']:.1f} MB/s" if copy_s >= POLL_S else
            "copied before the first look, no rate")
    progress(f"  {label}: start-up {result['startup_s']:.1f} s, copy {copy_s:.2f} s = {rate}, "
             f"CPU {result['cpu_s_copy'] or 0:.1f} s during the copy ({result['cpu_s_per_gib'] or 0:.1f} s/GiB), "
             f"{done_cpu or 0:.1f} s since launch")
    return result


def copy_once(watch: Env, label: str, launch: Any, target_topic: str, size: int,
              budget_s: float | None = None) -> dict[str, Any]:
    """Launch a peer (``launch()``), watch it copy the backlog into ``target_topic`` (``watch_copy``; at most
    ``budget_s`` s from its first record), stop it; its figures, or ``error``, and its exit code."""
    progress(f"{label}: starting, copying into {target_topic}")
    peer: Child | Children = launch()
    result: dict[str, Any] = {"label": label}
    try:
        result.update(watch_copy(watch, peer, label, target_topic, size, budget_s))
    except StepFailed as failure:
        progress(f"  FAILED: {failure}")
        result["error"] = str(failure)
    finally:
        result["exit_code"] = peer.stop(60)
        progress(f"{label}: stopped (exit code {result['exit_code']}); log {peer.log}")
    return result


def start_load(env: Env, topic: str, count: int, size: int, rate: int) -> Child:
    """ProducerPerformance writing ``count`` records of ``size`` B at ``rate`` rec/s (acks=all, idempotent;
    each record's CreateTime is set at ``send()``) into the source ``topic``."""
    return Child("ProducerPerformance(latency)", java(
        "org.apache.kafka.tools.ProducerPerformance", "--topic", topic, "--num-records", str(count),
        "--record-size", str(size), "--throughput", str(rate),
        "--producer-props", f"bootstrap.servers={env.source}", "acks=all", "enable.idempotence=true"),
        env.work / f"latency-producer-{topic}.log")


def load_summary(producer: Child) -> str | None:
    """ProducerPerformance's final summary line (None before it ends)."""
    lines = [line for line in producer.log.read_text(errors="replace").splitlines() if "records sent" in line]
    return lines[-1].strip() if lines else None


def load_figures(summary: str | None) -> dict[str, Any]:
    """The source-side share from ProducerPerformance's summary: its rate and its own send -> ack p50/p99."""
    m = re.search(r"([\d.]+) records/sec.* (\d+) ms 50th, \d+ ms 95th, (\d+) ms 99th", summary or "")
    if not m:
        return {}
    return {"producer_rate": float(m[1]), "producer_ack_p50_ms": int(m[2]), "producer_ack_p99_ms": int(m[3])}


def measure_latency(env: Env, peer: Child, label: str, source_topic: str, target_topic: str,
                    size: int, rate: int) -> dict[str, Any]:
    """Produce at ``rate`` rec/s for ~latency_seconds; latency = seen on target - CreateTime."""
    offsets = Offsets(env.target)
    try:
        # Warm-up probes: the peer copies this topic already (its target exists, records flow).
        probe = Producer({"bootstrap.servers": env.source, "acks": "all", "enable.idempotence": "true"})
        for i in range(20):
            probe.produce(source_topic, b"probe", partition=i % PARTITIONS)
        if probe.flush(30) != 0:
            raise StepFailed(f"{label} latency: probe records not acknowledged by the source")
        deadline = time.monotonic() + 120
        while offsets.total(target_topic) < 20:
            peer.check_alive(f"{label} latency warm-up")
            if time.monotonic() > deadline:
                raise StepFailed(f"{label} latency warm-up: probes did not reach {target_topic} in 120 s; "
                                 f"see {peer.log}")
            time.sleep(POLL_S)
        consumer = Consumer({"bootstrap.servers": env.target, "group.id": f"bench-latency-{target_topic}",
                             "enable.auto.commit": "false", "fetch.wait.max.ms": "5",
                             "fetch.min.bytes": "1", "enable.partition.eof": "false"})
        start_at = [consumer.get_watermark_offsets(TopicPartition(target_topic, p), timeout=10, cached=False)[1]
                    for p in range(PARTITIONS)]
        consumer.assign([TopicPartition(target_topic, p, start_at[p]) for p in range(PARTITIONS)])
    finally:
        offsets.close()
    count = int(rate * env.latency_seconds)
    progress(f"  {label}: latency run, {count:,} records at {rate:,} rec/s ({env.latency_seconds:.0f} s)")
    producer = start_load(env, source_topic, count, size, rate)
    latencies: list[float] = []
    created: list[int] = []
    deadline = time.monotonic() + env.latency_seconds + 120
    try:
        while len(latencies) < count:
            peer.check_alive(f"{label} latency")
            if time.monotonic() > deadline:
                raise StepFailed(f"{label} latency: {len(latencies):,}/{count:,} records seen on {target_topic} "
                                 f"before the deadline; see {peer.log}")
            # A batch consume waits its whole timeout unless full: take what is there, block only when empty.
            messages = consumer.consume(2000, 0) or consumer.consume(1, 0.05)
            seen_ms = time.time() * 1000
            for message in messages:
                if message.error() is None:
                    ts = message.timestamp()[1]
                    latencies.append(seen_ms - ts)
                    created.append(ts)
        producer.process.wait(60)
        summary = load_summary(producer)
    finally:
        producer.stop(5)
        consumer.close()
    # p50 per second of CreateTime: a rising curve means the peer fell behind the rate.
    by_second: dict[int, list[float]] = {}
    if created:
        t0 = min(created)
        for ts, lat in zip(created, latencies, strict=True):
            by_second.setdefault(int((ts - t0) // 1000), []).append(lat)
    trend = [round(percentile(sorted(v), 50) or 0) for _, v in sorted(by_second.items())]
    # Steady state: without the first seconds, when the load generator's JVM is warming
    # up and the brokers adjust (its own send->ack latency spikes then, for either peer).
    steady = sorted(lat for second, values in by_second.items() if second >= WARMUP_S for lat in values)
    latencies.sort()
    result = {"rate": rate, "p50_ms_per_second": trend, "records": len(latencies),
              "p50_ms": percentile(latencies, 50), "p99_ms": percentile(latencies, 99),
              "p999_ms": percentile(latencies, 99.9), "steady_p50_ms": percentile(steady, 50),
              "steady_p99_ms": percentile(steady, 99), "max_ms": latencies[-1] if latencies else None,
              "producer_summary": summary} | load_figures(summary)
    progress(f"  {label}: latency p50 {result['p50_ms']:.0f} ms, p99 {result['p99_ms']:.0f} ms "
             f"(after the first {WARMUP_S} s: p50 {result['steady_p50_ms'] or 0:.0f}, "
             f"p99 {result['steady_p99_ms'] or 0:.0f}), "
             f"p99.9 {result['p999_ms']:.0f} ms, max {result['max_ms']:.0f} ms; p50 per second: {trend}; "
             f"the producer reached {result.get('producer_rate', 0):,.0f} rec/s, its own send->ack "
             f"p50 {result.get('producer_ack_p50_ms')} ms p99 {result.get('producer_ack_p99_ms')} ms")
    return result
