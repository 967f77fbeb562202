"""The latency probe of the fairness and latency benches: a reader noting each record's latency, and its
figures per time window of CreateTime."""

from __future__ import annotations

import threading
import time
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
from procs import percentile


class LatencyReader:
    """A thread reading the given target partitions from their start; per record it keeps
    (CreateTime, seen on the target - CreateTime), in ms of the wall clock (same machine, same clock), and in
    ``positions`` its (partition, offset)."""

    def __init__(self, bootstrap: str, partitions: list[TopicPartition], name: str = "fairness") -> None:
        self.samples: list[tuple[int, float]] = []
        self.positions: list[tuple[int, int]] = []
        self._consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{name}-reader",
                                   "enable.auto.commit": "false", "fetch.wait.max.ms": "5",
                                   "fetch.min.bytes": "1", "enable.partition.eof": "false"})
        self._consumer.assign([TopicPartition(tp.topic, tp.partition, OFFSET_BEGINNING) for tp in partitions])
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"latency-reader-{name}", daemon=True)
        self._thread.start()

    @property
    def seen(self) -> int:
        return len(self.samples)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)
        self._consumer.close()

    def _run(self) -> None:
        while not self._stop.is_set():
            # A batch consume waits its whole timeout unless full: take what is there, block only when empty.
            messages = self._consumer.consume(2000, 0) or self._consumer.consume(1, 0.05)
            seen_ms = time.time() * 1000
            for message in messages:
                if message.error() is None:
                    created = message.timestamp()[1]
                    self.samples.append((created, seen_ms - created))
                    self.positions.append((message.partition() or 0, message.offset() or 0))  # a fetched record's


def window(samples: list[tuple[int, float]], start_ms: float, end_ms: float) -> dict[str, Any]:
    """Count and p50/p90/p99/max latency (ms) of the records created in [start_ms, end_ms), and the max per
    second of CreateTime (flat: a standing queue; rising: a queue that fills)."""
    inside = [(created, lat) for created, lat in samples if start_ms <= created < end_ms]
    latencies = sorted(lat for _, lat in inside)
    by_second: dict[int, float] = {}
    for created, lat in inside:
        second = int((created - start_ms) // 1000)
        by_second[second] = max(lat, by_second.get(second, 0.0))
    return {"records": len(latencies), "p50_ms": percentile(latencies, 50), "p90_ms": percentile(latencies, 90),
            "p99_ms": percentile(latencies, 99),
            "max_ms": latencies[-1] if latencies else None,
            "max_ms_per_second": [round(v) for _, v in sorted(by_second.items())]}


def recent_max(samples: list[tuple[int, float]], seconds: float) -> float | None:
    """The worst latency among the records seen in about the last ``seconds`` (for the progress lines)."""
    since = time.time() * 1000 - seconds * 1000
    recent = [lat for created, lat in samples[-5000:] if created + lat >= since]
    return max(recent) if recent else None
