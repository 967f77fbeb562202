"""A peer started again over replicas that exist: the start-up every deploy or restart of a route waits for.

A first start on fresh brokers mostly waits for the target broker to create thousands of
logs (``scale_load.watch_startup`` reports when it did); a restart does not. With the load
paused, the peer is stopped, one marker record is written to every source partition, and
the peer is launched again: its restart lasts from launch until every marker is on the
target. The target is read from its ends after the stop, so nothing copied before counts.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterable
from typing import Any

from confluent_kafka import Consumer, Message, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from procs import Child, StepFailed, progress

from replicator.kafka.log_ranges import watermarks

STOP_TIMEOUT_S = 60.0


def take_markers(seen: dict[tuple[str, int], float], messages: Iterable[Message], marker: bytes, at: float) -> None:
    """Note ``at`` for each partition whose marker is among ``messages`` (the first sighting counts)."""
    for message in messages:
        if message.error() is None and message.value() == marker:
            seen.setdefault((message.topic() or "", message.partition() or 0), at)  # a fetched record's


def restart_figures(seen: dict[tuple[str, int], float], expected: int) -> dict[str, Any]:
    """Seconds from launch until the first marker, half of them and all of them were on the target (pure)."""
    times = sorted(seen.values())
    if not times:
        return {"partitions": expected, "seen": 0}
    return {"partitions": expected, "seen": len(times), "first_s": round(times[0], 2),
            "half_s": round(times[(len(times) - 1) // 2], 2),
            "restart_s": round(times[-1], 2) if len(times) == expected else None}


def restart(source: str, target: str, sources: list[TopicPartition], replicas: list[TopicPartition],
            peer: Child, relaunch: Callable[[], Child], label: str, timeout: float) -> tuple[dict[str, Any], Child]:
    """Stop ``peer`` (the caller paused the load), mark every source partition, ``relaunch()`` and watch the
    ``replicas`` (in the order of ``sources``) until every marker is there; the figures and the new peer."""
    progress(f"{label}: stopping for the restart")
    exit_code = peer.stop(STOP_TIMEOUT_S)
    ends = _ends(target, replicas)
    marker = f"restart-marker-{uuid.uuid4().hex}".encode()
    _mark(source, sources, marker)
    progress(f"{label}: stopped (exit code {exit_code}); {len(sources):,} partitions marked; launching again")
    launched = time.monotonic()
    again = relaunch()
    seen = _watch(target, [TopicPartition(tp.topic, tp.partition, ends[(tp.topic, tp.partition)]) for tp in replicas],
                  marker, again, label, launched, timeout)
    figures = restart_figures(seen, len(replicas)) | {"stop_exit_code": exit_code}
    progress(f"{label}: every partition copying again {figures['restart_s']:.1f} s after the restart's launch "
             f"(first {figures['first_s']:.1f} s, half {figures['half_s']:.1f} s)")
    return figures, again


def _ends(bootstrap: str, partitions: list[TopicPartition]) -> dict[tuple[str, int], int]:
    marks = watermarks(AdminClient({"bootstrap.servers": bootstrap}), [(tp.topic, tp.partition) for tp in partitions],
                       timeout=30)
    return {key: high for key, (_low, high) in marks.items()}


def _mark(bootstrap: str, partitions: list[TopicPartition], marker: bytes) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": "5"})
    try:
        for tp in partitions:
            producer.produce(tp.topic, marker, partition=tp.partition)
            producer.poll(0)
        if producer.flush(60) != 0:
            raise StepFailed("restart markers not acknowledged by the source in 60 s")
    finally:
        producer.close()


def _watch(bootstrap: str, starts: list[TopicPartition], marker: bytes, peer: Child, label: str,
           launched: float, timeout: float) -> dict[tuple[str, int], float]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-restart-{uuid.uuid4().hex}",
                         "enable.auto.commit": "false", "fetch.wait.max.ms": "100"})
    consumer.assign(starts)
    seen: dict[tuple[str, int], float] = {}
    last_report = launched
    try:
        while len(seen) < len(starts):
            peer.check_alive(f"{label} restart")
            now = time.monotonic()
            if now - launched > timeout:
                raise StepFailed(f"{label} restart: {len(starts) - len(seen):,}/{len(starts):,} markers not on the "
                                 f"target after {timeout:.0f} s; see {peer.log}")
            if now - last_report > 5:
                progress(f"  {label}: {len(seen):,}/{len(starts):,} markers on the target")
                last_report = now
            messages = consumer.consume(5000, 0.2)
            take_markers(seen, messages, marker, time.monotonic() - launched)
    finally:
        consumer.close()
    return seen
