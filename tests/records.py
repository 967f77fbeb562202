"""Test records and route configs shared by the replication tests."""

from __future__ import annotations

import json
import time
import zlib
from pathlib import Path

from tests.kafka_io import Rec

BASE_TS = int(time.time() * 1000) - 86_400_000  # recent: older records fall to retention (7 days)


def make_records(partitions: int, per_partition: int, tag: str, recent: bool = False) -> list[Rec]:
    """Keys (some null), values (some tombstones, binary), headers (some none), CreateTimes: a day to 28 hours back
    (older than the target remembers a producer for: their partitions copy serially while few of their records are
    in flight), or ``recent``, within the last 3 hours (not)."""
    out = []
    # Same n, other tag: another record. Earlier, never later: brokers refuse the future.
    base_ts, step = (int(time.time() * 1000) - 60_000, 10_000) if recent else (BASE_TS, 100_000)
    tag_ts = base_ts - zlib.crc32(tag.encode()) % 1000 * step
    for n in range(per_partition):
        for p in range(partitions):
            headers = ((("seq", str(n).encode()), ("tag", tag.encode()), ("nul", None)) if n % 3 else ())
            out.append(Rec(p, None if n % 11 == 0 else f"{tag}-{p}-{n}".encode(),
                           None if n % 17 == 0 else bytes([n % 256, 0, 255]) + f"{tag}{n}".encode() * (n % 5),
                           headers, tag_ts + n))
    return out


def by_partition(recs: list[Rec], partitions: int) -> dict[int, list[Rec]]:
    """The records of each partition, in order."""
    return {p: [r for r in recs if r.partition == p] for p in range(partitions)}


def write_config(path: Path, primary: str, backup: str, routes: list[dict[str, object]],
                 state_url: str | None = None) -> Path:
    path.write_text(json.dumps({  # JSON is YAML
        "clusters": {"primary": {"bootstrap.servers": primary}, "backup": {"bootstrap.servers": backup}},
        "routes": routes,
        "state": {"url": state_url or f"sqlite:///{path.parent / 'state.db'}"},
    }))
    return path
