"""The latency bench's figures (pure): what a peer adds over the floor, and shares of records within bounds."""

from __future__ import annotations

from typing import Any

Sample = tuple[int, float]  # (CreateTime ms, seen - CreateTime ms)
Position = tuple[int, int]  # (partition, offset)

BOUNDS_MS = (5, 10, 25, 50, 100)  # bucket bounds of mirrorflow_replication_latency_seconds, in ms


def load_start(samples: list[tuple[int, float]], launched_ms: float) -> int | None:
    """The CreateTime of the load's first record: the earliest created at or after its launch (older ones
    are the probes)."""
    return min((created for created, _ in samples if created >= launched_ms), default=None)


def added_over_floor(peer: dict[str, Any], floor: dict[str, Any]) -> dict[str, float | None]:
    """What a peer's readers waited beyond the floor's, per percentile (ms): peer p50 - floor p50, p99 - p99."""
    def minus(key: str) -> float | None:
        if peer.get(key) is None or floor.get(key) is None:
            return None
        return float(peer[key] - floor[key])

    return {"p50_ms": minus("p50_ms"), "p99_ms": minus("p99_ms")}


def shares_within(latencies_ms: list[float], bounds_ms: tuple[float, ...] = BOUNDS_MS) -> dict[str, float | None]:
    """Share of the latencies at or under each bound (keys are the bounds in ms, as text)."""
    count = len(latencies_ms)
    return {f"{b:g}": (sum(1 for v in latencies_ms if v <= b) / count if count else None) for b in bounds_ms}


def histogram_shares(hist: dict[str, Any], bounds_ms: tuple[float, ...] = BOUNDS_MS) -> dict[str, float | None]:
    """The same shares from a Prometheus histogram in seconds (``count`` and cumulative ``buckets`` by bound,
    as ``scale_metrics.histograms`` reads them); a bound that is not a bucket's gives None."""
    count = hist["count"]
    by_ms = {round(bound * 1000, 3): n for bound, n in hist["buckets"].items()}
    return {f"{b:g}": (by_ms[b] / count if count and b in by_ms else None) for b in bounds_ms}


def paired_added(floor: dict[Position, Sample], peer: dict[Position, Sample], start_ms: float,
                 end_ms: float) -> list[float]:
    """Per record created in [start_ms, end_ms): the peer's latency minus the floor's for the same record,
    sorted. A copy into an empty topic keeps partition and offset, so records pair by position; a pair whose
    CreateTimes differ (a duplicate moved the offsets) is left out."""
    added = []
    for position, (created, latency) in peer.items():
        mine = floor.get(position)
        if mine is not None and mine[0] == created and start_ms <= created < end_ms:
            added.append(latency - mine[1])
    return sorted(added)
