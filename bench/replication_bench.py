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
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition  # noqa: E402

from replicator.jars import kafka_classpath  # noqa: E402
from replicator.kafka.admin import create_topics  # noqa: E402
from tests.support import free_port, start_pair  # noqa: E402

PARTITIONS = 4
POLL_S = 0.2
MB = 1024 * 1024
GIB = 1024 ** 3
CLK_TCK = os.sysconf("SC_CLK_TCK")
MF_SOURCE_ALIAS = "mfsource"  # MirrorFlow's name of the source cluster -> target prefix
START = time.monotonic()


class StepFailed(Exception):
    """A step timed out, stalled or failed; the message names it."""


def progress(message: str) -> None:
    print(f"[{time.monotonic() - START:7.1f}s] {message}", flush=True)


# -- processes -------------------------------------------------------------------------

def cpu_seconds(pid: int) -> float | None:
    """utime+stime of the process (all its threads, live and finished), in seconds."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / CLK_TCK  # fields 14 and 15 of stat(5)


class Child:
    """A child process with its output in a log file; stopped on the way out, always."""

    running: list[Child] = []

    def __init__(self, name: str, args: list[str], log: Path, cwd: Path | None = None) -> None:
        self.name, self.log = name, log
        self._out = open(log, "wb")  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen(args, stdout=self._out, stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL, cwd=cwd)
        Child.running.append(self)

    @property
    def pid(self) -> int:
        return self.process.pid

    def alive(self) -> bool:
        return self.process.poll() is None

    def check_alive(self, step: str) -> None:
        if not self.alive():
            raise StepFailed(f"{step}: {self.name} exited with code {self.process.returncode}; "
                             f"last lines of {self.log}:\n{self.tail()}")

    def tail(self, lines: int = 15) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def stop(self, timeout: float = 30) -> int | None:
        """SIGTERM, then SIGKILL after ``timeout``; returns the exit code."""
        if self.alive():
            self.process.terminate()
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                progress(f"{self.name} did not stop in {timeout:.0f} s, killing it")
                self.process.kill()
                self.process.wait(10)
        self._out.close()
        if self in Child.running:
            Child.running.remove(self)
        return self.process.returncode


def java(main_class: str, *args: str, heap: str = "512m") -> list[str]:
    return ["java", f"-Xmx{heap}", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
            "-Djava.awt.headless=true", "-cp", kafka_classpath(), main_class, *args]


def run_tool(name: str, args: list[str], log: Path, timeout: float) -> str:
    """Run a Kafka tool to completion (bounded); returns its output."""
    child = Child(name, args, log)
    try:
        child.process.wait(timeout)
    except subprocess.TimeoutExpired:
        child.stop(5)
        raise StepFailed(f"{name}: no result after {timeout:.0f} s; see {log}") from None
    child.stop()
    output = log.read_text(errors="replace")
    if child.process.returncode != 0:
        raise StepFailed(f"{name}: exit code {child.process.returncode}; last lines:\n{child.tail()}")
    return output


# -- Kafka helpers ---------------------------------------------------------------------

class Offsets:
    """Sum of a topic's end offsets, read fresh from the broker (no cache)."""

    def __init__(self, bootstrap: str) -> None:
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-watermarks",
                                  "enable.auto.commit": "false"})

    def partitions(self, topic: str) -> int:
        try:
            meta = self.consumer.list_topics(topic, timeout=2.0).topics.get(topic)
        except KafkaException:
            return 0
        return 0 if meta is None or meta.error is not None else len(meta.partitions)

    def total(self, topic: str) -> int:
        count = self.partitions(topic)
        total = 0
        for p in range(count):
            try:
                total += self.consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=2.0,
                                                             cached=False)[1]
            except KafkaException:
                pass
        return total

    def close(self) -> None:
        self.consumer.close()


def percentile(sorted_values: list[float], q: float) -> float | None:
    if not sorted_values:
        return None
    index = min(len(sorted_values) - 1, max(0, round(q / 100 * len(sorted_values)) - 1))
    return sorted_values[index]


# -- the measurements --------------------------------------------------------------------

@dataclass
class Env:
    work: Path
    source: str
    target: str
    records: int
    latency_seconds: float
    latency_fraction: float = 0.5


def raw_producer(env: Env, topic: str, size: int) -> dict[str, Any]:
    progress(f"raw producer: {env.records:,} x {size} B into {topic} (acks=all, idempotent, unthrottled)")
    args = java("org.apache.kafka.tools.ProducerPerformance", "--topic", topic,
                "--num-records", str(env.records), "--record-size", str(size), "--throughput", "-1",
                "--producer-props", f"bootstrap.servers={env.source}", "acks=all", "enable.idempotence=true")
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


def raw_consumer(env: Env, topic: str) -> dict[str, Any]:
    progress(f"raw consumer: reading {env.records:,} records of {topic}")
    args = java("org.apache.kafka.tools.ConsumerPerformance", "--bootstrap-server", env.source,
                "--topic", topic, "--messages", str(env.records), "--timeout", "60000",
                "--group", f"bench-consumer-perf-{topic}")
    out = run_tool("ConsumerPerformance", args, env.work / f"consumer-perf-{topic}.log",
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


def watch_copy(env: Env, peer: Child, label: str, target_topic: str, size: int) -> dict[str, Any]:
    """From the peer's launch until ``target_topic`` holds N records (polled every 0.2 s)."""
    offsets = Offsets(env.target)
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
            cpu = cpu_seconds(peer.pid)
            if count > 0 and first_at is None:
                first_at, first_cpu = now, cpu
                progress(f"  {label}: first records on the target after {now - launched:.1f} s")
            if count >= env.records:
                done_at, done_cpu = now, cpu
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
    data = env.records * size
    result = {
        "target_topic": target_topic,
        "startup_s": round(first_at - launched, 3),  # type: ignore[operator]
        "copy_s": round(copy_s, 3),
        "wall_s": round(done_at - launched, 3),
        "records_per_s": env.records / copy_s,
        "mb_per_s": data / MB / copy_s,
        "wall_records_per_s": env.records / (done_at - launched),
        "cpu_s_total": done_cpu,
        "cpu_s_copy": None if done_cpu is None or first_cpu is None else done_cpu - first_cpu,
    }
    result["cpu_s_per_gib"] = None if result["cpu_s_copy"] is None else result["cpu_s_copy"] / (data / GIB)
    result["cpu_s_per_gib_incl_startup"] = None if done_cpu is None else done_cpu / (data / GIB)
    progress(f"  {label}: start-up {result['startup_s']:.1f} s, copy {copy_s:.2f} s = "
             f"{result['records_per_s']:,.0f} rec/s, {result['mb_per_s']:.1f} MB/s, "
             f"CPU {result['cpu_s_copy'] or 0:.1f} s during the copy ({result['cpu_s_per_gib'] or 0:.1f} s/GiB), "
             f"{done_cpu or 0:.1f} s since launch")
    return result


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
    producer = Child("ProducerPerformance(latency)", java(
        "org.apache.kafka.tools.ProducerPerformance", "--topic", source_topic, "--num-records", str(count),
        "--record-size", str(size), "--throughput", str(rate),
        "--producer-props", f"bootstrap.servers={env.source}", "acks=all", "enable.idempotence=true"),
        env.work / f"latency-producer-{source_topic}.log")
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
        summary = [line for line in producer.log.read_text(errors="replace").splitlines() if "records sent" in line]
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
    latencies.sort()
    result = {"rate": rate, "p50_ms_per_second": trend, "records": len(latencies),
              "p50_ms": percentile(latencies, 50), "p99_ms": percentile(latencies, 99),
              "p999_ms": percentile(latencies, 99.9), "max_ms": latencies[-1] if latencies else None,
              "producer_summary": summary[-1].strip() if summary else None}
    if summary:  # the source-side share: ProducerPerformance's own send -> ack latency
        m = re.search(r"([\d.]+) records/sec.* (\d+) ms 50th, \d+ ms 95th, (\d+) ms 99th", summary[-1])
        if m:
            result.update(producer_rate=float(m[1]), producer_ack_p50_ms=int(m[2]), producer_ack_p99_ms=int(m[3]))
    progress(f"  {label}: latency p50 {result['p50_ms']:.0f} ms, p99 {result['p99_ms']:.0f} ms, "
             f"p99.9 {result['p999_ms']:.0f} ms, max {result['max_ms']:.0f} ms; p50 per second: {trend}; "
             f"the producer reached {result.get('producer_rate', 0):,.0f} rec/s, its own send->ack "
             f"p50 {result.get('producer_ack_p50_ms')} ms p99 {result.get('producer_ack_p99_ms')} ms")
    return result


def start_mirrorflow(env: Env, size: int, topics: list[str]) -> Child:
    config = env.work / f"mirrorflow-{size}.yaml"
    config.write_text(json.dumps({
        "clusters": {MF_SOURCE_ALIAS: {"bootstrap.servers": env.source},
                     "target": {"bootstrap.servers": env.target}},
        "routes": [{"name": f"bench-{size}", "source": MF_SOURCE_ALIAS, "target": "target", "topics": topics}],
        "state": {"url": f"sqlite:///{env.work / f'state-{size}.db'}"},
    }))
    return Child("mirrorflow run", [str(REPO / ".venv" / "bin" / "mirrorflow"), "--log-level", "info", "run",
                                    "--config", str(config), "--route", f"bench-{size}"],
                 env.work / f"mirrorflow-{size}.log", cwd=env.work)


MM2_LOG4J = """\
status = error
appender.file.type = File
appender.file.name = file
appender.file.fileName = {log}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = file
"""


def start_mm2(env: Env, size: int, topics: list[str]) -> Child:
    tag = f"bench{size}"
    props = {
        "clusters": "source, target",
        "source.bootstrap.servers": env.source,
        "target.bootstrap.servers": env.target,
        "source->target.enabled": "true",
        "source->target.topics": ", ".join(re.escape(t) for t in topics),
        "target->source.enabled": "false",
        # single-node clusters: every topic MM2 creates has one replica
        "replication.factor": "1",
        "offset-syncs.topic.replication.factor": "1",
        "checkpoints.topic.replication.factor": "1",
        "heartbeats.topic.replication.factor": "1",
        "offset.storage.replication.factor": "1",
        "config.storage.replication.factor": "1",
        "status.storage.replication.factor": "1",
        # fresh Connect state per run (worker group and internal topics live on the target)
        "target.group.id": f"mm2-{tag}",
        "offset.storage.topic": f"mm2-offsets-{tag}.internal",
        "config.storage.topic": f"mm2-configs-{tag}.internal",
        "status.storage.topic": f"mm2-status-{tag}.internal",
        # only the data copy (and its offset syncs, as MirrorFlow writes its own)
        "emit.checkpoints.enabled": "false",
        "emit.heartbeats.enabled": "false",
        "sync.group.offsets.enabled": "false",
        "refresh.groups.enabled": "false",
        "sync.topic.configs.enabled": "false",
        "sync.topic.acls.enabled": "false",
        # the same delivery guarantee as MirrorFlow's producer (the worker's producer.* = target.producer.*)
        "target.producer.acks": "all",
        "target.producer.enable.idempotence": "true",
        "tasks.max": "1",  # one task, as one MirrorFlow worker process is one route thread
        # what MM2's own start-up warning recommends (skips a ~13 s classpath scan per herder)
        "plugin.discovery": "service_load",
    }
    path = env.work / f"mm2-{size}.properties"
    path.write_text("".join(f"{k} = {v}\n" for k, v in props.items()))
    log4j = env.work / f"mm2-{size}-log4j2.properties"
    log4j.write_text(MM2_LOG4J.format(log=env.work / f"mm2-{size}-connect.log"))
    # Heap and GC as bin/connect-mirror-maker.sh + kafka-run-class.sh use them.
    args = ["java", "-Xms256m", "-Xmx2g", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
            "-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent",
            "-Djava.awt.headless=true", f"-Dlog4j2.configurationFile={log4j}",
            "-cp", kafka_classpath(), "org.apache.kafka.connect.mirror.MirrorMaker", str(path)]
    return Child("MirrorMaker 2", args, env.work / f"mm2-{size}.out", cwd=env.work)


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
    for name, step in (("raw_producer", lambda: raw_producer(env, topic, size)),
                       ("raw_consumer", lambda: raw_consumer(env, topic))):
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
                     f"{'CPU s/GiB':>11}{'p50 ms':>9}{'p99 ms':>9}")
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
                         f"{_fmt(lat.get('p50_ms'), '.0f'):>9}{_fmt(lat.get('p99_ms'), '.0f'):>9}")
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
                     f"{_ratio(mfl.get('p50_ms'), mml.get('p50_ms')):>9}{_ratio(mfl.get('p99_ms'), mml.get('p99_ms')):>9}")
        if mfl.get("rate"):
            lines.append(f"(latency at {mfl['rate']:,} rec/s = {res.get('latency_fraction', 0.5)} x MirrorFlow's copy rate, at most that x the raw "
                         f"producer's; source-side send->ack p50/p99 during it: MF run "
                         f"{mfl.get('producer_ack_p50_ms')}/{mfl.get('producer_ack_p99_ms')} ms, MM2 run "
                         f"{mml.get('producer_ack_p50_ms')}/{mml.get('producer_ack_p99_ms')} ms;\n "
                         f"CPU s/GiB = peer CPU during the copy / GiB of values copied)")
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
    if failed or args.keep:
        print(f"logs kept in {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
