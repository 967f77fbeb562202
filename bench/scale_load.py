"""The scale bench's workload: many topics, a small steady load, and what a peer shows under it."""

from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from procs import Child, StepFailed, cpu_seconds, create_topics, progress, rss_mib, thread_cpu

from replicator.kafka.log_ranges import LATEST

CREATE_BATCH = 100  # topics per CreateTopics request
SEED_WITHIN_S = 120.0
WATCH_EVERY_S = 0.5


@dataclass(frozen=True)
class Shape:
    """``topics`` topics of ``partitions`` partitions each, named ``<prefix>-t0000``..."""

    prefix: str
    topics: int
    partitions: int

    @property
    def names(self) -> list[str]:
        return [f"{self.prefix}-t{i:04d}" for i in range(self.topics)]

    @property
    def pattern(self) -> str:
        """The regex both peers copy (the whole name must match)."""
        return f"{self.prefix}-t[0-9]+"

    def partitions_of(self, topic_prefix: str = "") -> list[TopicPartition]:
        return [TopicPartition(topic_prefix + name, p) for name in self.names for p in range(self.partitions)]


def create_shape(bootstrap: str, shape: Shape) -> float:
    """Create the shape's topics in batches (each batch waited for); returns the seconds it took."""
    return create_topics(bootstrap, dict.fromkeys(shape.names, shape.partitions), CREATE_BATCH)


@dataclass
class SteadyLoad:
    """A producer thread writing ``rate`` records/s round-robin over every partition of the shape."""

    bootstrap: str
    shape: Shape
    rate: int
    sent: int = 0
    failed: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)
    _paused: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def seed(self, within: float = SEED_WITHIN_S) -> None:
        """One record per partition, acknowledged, before any peer starts: start-up never waits for the load.
        A record refused (at 10,000 partitions most of them, by topics created a moment before: their leaders
        not known yet) is sent again; a partition still without one after ``within`` s fails the step."""
        producer = self._producer()
        deadline = time.monotonic() + within
        missing = self.shape.partitions_of()
        try:
            while missing:
                refused: list[tuple[TopicPartition, str]] = []
                for tp in missing:
                    try:
                        self._send(producer, tp, refused)
                    except KafkaException as exc:  # a topic librdkafka already knows as unknown: refused at once
                        refused.append((tp, exc.args[0].str()))
                if producer.flush(max(1.0, deadline - time.monotonic())) != 0:
                    raise StepFailed(f"seeding the source partitions: records not acknowledged in {within:.0f} s")
                missing = [tp for tp, _ in refused]
                if missing and time.monotonic() >= deadline:
                    raise StepFailed(f"seeding the source partitions: {len(missing):,} of them still refuse a record "
                                     f"after {within:.0f} s ({refused[0][1]})")
                if missing:
                    progress(f"  seeding: {len(missing):,} partitions refused their record ({refused[0][1]}); "
                             "sending again")
                    time.sleep(1.0)
        finally:
            producer.close()  # not left to the collector: it would log its reconnects once the clusters stop

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="steady-load", daemon=True)
        self._thread.start()

    def pause(self, paused: bool) -> None:
        """Stop writing (``True``) or write again."""
        if paused:
            self._paused.set()
        else:
            self._paused.clear()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(30)

    def _producer(self) -> Producer:
        return Producer({"bootstrap.servers": self.bootstrap, "acks": "all", "linger.ms": "5"})

    def _send(self, producer: Producer, tp: TopicPartition,
              refused: list[tuple[TopicPartition, str]] | None = None) -> None:
        def on_delivery(error: Any, _message: Any) -> None:
            if error is not None:
                self.failed += 1
                if refused is not None:
                    refused.append((tp, error.str()))

        producer.produce(tp.topic, b"x" * 100, partition=tp.partition, on_delivery=on_delivery)
        self.sent += 1
        producer.poll(0)

    def _run(self) -> None:
        producer = self._producer()
        partitions = self.shape.partitions_of()
        tick = 0.05
        per_tick, carry, index = self.rate * tick, 0.0, 0
        next_at = time.monotonic()
        while not self._stop.is_set():
            carry = 0.0 if self._paused.is_set() else carry + per_tick
            while carry >= 1:
                self._send(producer, partitions[index % len(partitions)])
                index, carry = index + 1, carry - 1
            next_at += tick
            self._stop.wait(max(0.0, next_at - time.monotonic()))
        producer.flush(10)


_CREATED_LOG = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\] INFO Created log for partition (\S+) in ")


def replica_logs(broker_log: str, topic_prefix: str) -> list[datetime]:
    """When the broker created the log of each partition whose topic starts with ``topic_prefix``, from its
    server.log (pure): a replica takes records only once its log exists."""
    times = []
    for line in broker_log.splitlines():
        match = _CREATED_LOG.match(line)
        if match and match.group(2).startswith(topic_prefix):
            times.append(datetime.strptime(match.group(1), "%Y-%m-%d %H:%M:%S,%f"))
    return sorted(times)


def replica_log_figures(times: list[datetime], launched: datetime, startup_s: float) -> dict[str, Any]:
    """The broker's share of a start-up (pure): seconds from the peer's launch to the first and the last
    replica log, and from the last log to every partition copied (what the peer took beyond the broker)."""
    if not times:
        return {"replica_logs": 0}
    first, last = ((t - launched).total_seconds() for t in (times[0], times[-1]))
    return {"replica_logs": len(times), "first_log_s": round(first, 2), "last_log_s": round(last, 2),
            "after_last_log_s": round(startup_s - last, 2)}


def watch_startup(target: str, peer: Child, label: str, wanted: list[TopicPartition],
                  timeout: float, broker_logs: Path | None = None) -> dict[str, Any]:
    """Launch -> every wanted target partition has a record (end offsets polled every 0.5 s, one ListOffsets
    request for the partitions still empty). With the target broker's log folder ``broker_logs``, also when it created
    the replicas' logs (the topic prefix of ``wanted``): most of a start-up at thousands of partitions on one
    small broker."""
    admin = AdminClient({"bootstrap.servers": target})
    pending = set((tp.topic, tp.partition) for tp in wanted)
    launched_at = datetime.now()
    launched = last_report = time.monotonic()
    first_at: float | None = None
    while pending:
        peer.check_alive(f"{label} start-up")
        now = time.monotonic()
        if now - launched > timeout:
            raise StepFailed(f"{label} start-up: {len(pending):,}/{len(wanted):,} target partitions still empty "
                             f"after {timeout:.0f} s; see {peer.log}")
        pending -= _filled(admin, pending)
        if first_at is None and len(pending) < len(wanted):
            first_at = time.monotonic()
            progress(f"  {label}: first partitions on the target after {first_at - launched:.1f} s")
        if now - last_report > 5:
            progress(f"  {label}: {len(wanted) - len(pending):,}/{len(wanted):,} target partitions have records")
            last_report = now
        time.sleep(max(0.0, WATCH_EVERY_S - (time.monotonic() - now)))
    done = time.monotonic()
    result: dict[str, Any] = {"startup_s": round(done - launched, 2),
              "first_partition_s": None if first_at is None else round(first_at - launched, 2),
              "cpu_s_startup": cpu_seconds(peer.pid)}
    progress(f"  {label}: all {len(wanted):,} partitions on the target after {result['startup_s']:.1f} s "
             f"(CPU {result['cpu_s_startup'] or 0:.1f} s since launch)")
    if broker_logs is not None and wanted:
        prefix = wanted[0].topic.split(".", 1)[0] + "."
        text = "\n".join(f.read_text(errors="replace") for f in sorted(broker_logs.glob("server.log*")))
        times = replica_logs(text, prefix)
        result.update(replica_log_figures(times, launched_at, result["startup_s"]))
        if times:
            progress(f"  {label}: the target broker created the {len(times):,} replica logs from "
                     f"{result['first_log_s']:.1f} to {result['last_log_s']:.1f} s after launch; every partition "
                     f"was copied {result['after_last_log_s']:.1f} s after the last")
    return result


def _filled(admin: AdminClient, pending: set[tuple[str, int]]) -> set[tuple[str, int]]:
    """The pending partitions whose end offset is above 0 (those of replicas not created yet are skipped)."""
    try:
        existing = admin.list_topics(timeout=10).topics
    except KafkaException:
        return set()
    asked = {TopicPartition(t, p): LATEST for t, p in pending
             if t in existing and p in existing[t].partitions}
    if not asked:
        return set()
    filled = set()
    for tp, future in admin.list_offsets(asked, request_timeout=10).items():
        try:
            if future.result().offset > 0:
                filled.add((tp.topic, tp.partition))
        except KafkaException:
            pass  # not ready yet (leader moving, replica just created): asked again next time
    return filled


def measure_idle(peer: Child, label: str, seconds: float, scrape: Any = None) -> dict[str, Any]:
    """CPU % of one core and RSS of the peer over ``seconds`` (sampled every second), and the CPU % of its
    busiest threads; ``scrape()`` is called at both ends (MirrorFlow's metrics) and its two answers kept."""
    before = scrape() if scrape else None
    cpu0, threads0, t0 = cpu_seconds(peer.pid), thread_cpu(peer.pid), time.monotonic()
    rss: list[float] = []
    while time.monotonic() - t0 < seconds:
        peer.check_alive(f"{label} idle")
        value = rss_mib(peer.pid)
        if value is not None:
            rss.append(value)
        time.sleep(1)
    cpu1, threads1, t1 = cpu_seconds(peer.pid), thread_cpu(peer.pid), time.monotonic()
    if cpu0 is None or cpu1 is None or not rss:
        raise StepFailed(f"{label} idle: cannot read /proc/{peer.pid}")
    result: dict[str, Any] = {"seconds": round(t1 - t0, 1), "cpu_pct": round(100 * (cpu1 - cpu0) / (t1 - t0), 2),
              "rss_mib": round(rss[-1], 1), "rss_mib_max": round(max(rss), 1),
              "threads_cpu_pct": busiest_threads(threads0, threads1, t1 - t0),
              "metrics_before": before, "metrics_after": scrape() if scrape else None}
    busiest = ", ".join(f"{name} {pct:.1f}" for name, pct in list(result["threads_cpu_pct"].items())[:4])
    progress(f"  {label}: CPU {result['cpu_pct']:.1f} % of a core over {result['seconds']:.0f} s "
             f"(busiest threads, %: {busiest}), RSS {result['rss_mib']:.0f} MiB (max {result['rss_mib_max']:.0f})")
    return result


def busiest_threads(before: dict[int, tuple[str, float]], after: dict[int, tuple[str, float]],
                    seconds: float, top: int = 8) -> dict[str, float]:
    """CPU % of one core per thread name (threads of one name summed) between two samples, busiest first."""
    by_name: dict[str, float] = {}
    for tid, (name, cpu) in after.items():
        by_name[name] = by_name.get(name, 0.0) + cpu - before.get(tid, (name, 0.0))[1]
    ranked = sorted(by_name.items(), key=lambda item: -item[1])[:top]
    return {name: round(100 * cpu / seconds, 2) for name, cpu in ranked}
