"""The offset-syncs bench's pure parts: reading each peer's sync keys, counting, a day's estimate."""

from __future__ import annotations

import argparse
import struct
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))  # the bench's scripts import by file name

from offset_syncs import count_syncs, mf_sync_topic, mm2_sync_topic, per_day, table

from replicator.domain.offset_sync import OffsetSync, Run, encode_sync


def mm2_key(topic: str, partition: int) -> bytes:
    return struct.pack(">h", len(topic)) + topic.encode() + struct.pack(">i", partition)


def test_each_peers_sync_names_its_source_topic() -> None:
    key, value = encode_sync(Run(OffsetSync("txn", 2, 500, 480, 498)))
    assert mf_sync_topic(key, value) == "txn"
    assert mm2_sync_topic(mm2_key("plain", 3), b"\x00" * 16) == "plain"


def test_syncs_are_counted_written_and_kept_as_compaction_keeps_them() -> None:
    start = OffsetSync("txn", 0, 0, 0, None)
    grown = [encode_sync(Run(start, ((1, 0, 1),) * n)) for n in range(3)]  # one run rewritten twice
    other = encode_sync(Run(OffsetSync("txn", 1, 0, 0, None)))
    counted = count_syncs([*grown, other], mf_sync_topic)
    assert counted == {"txn": {"syncs": 4, "bytes": sum(len(k) + len(v) for k, v in [*grown, other]),
                               "kept": 2, "kept_bytes": sum(len(k) + len(v) for k, v in [grown[-1], other])}}
    mm2 = count_syncs([(mm2_key("plain", 0), b"v" * 16), (mm2_key("plain", 1), b"v" * 16),
                       (mm2_key("plain", 0), b"w" * 16)], mm2_sync_topic)
    assert mm2["plain"]["syncs"] == 3 and mm2["plain"]["kept"] == 2


def test_a_days_estimate_scales_per_record_or_per_transaction() -> None:
    args = argparse.Namespace(day_rate=100, day_transaction_ms=100)
    assert per_day(1_000, 100_000, 0, args, per_record=True) == 1_000 / 100_000 * 100 * 4 * 86_400
    assert per_day(4_000, 100_000, 1_000, args, per_record=False) == 4 * 864_000
    assert per_day(5, 0, 0, args, per_record=True) == 0.0


def found(syncs: int, kept: int) -> dict[str, int]:
    return {"syncs": syncs, "bytes": 100 * syncs, "kept": kept, "kept_bytes": 100 * kept}


def test_the_table_keeps_what_compaction_keeps() -> None:
    settings = {"records": 100_000, "per_transaction": 100, "day_rate": 100, "day_transaction_ms": 100}
    report = {"settings": settings, "transactions": {"transactions": 1_000},
              "runs": [{"label": "MirrorFlow", "syncs": {"plain": found(4, 4), "txn": found(1_000, 40)}},
                       {"label": "MirrorFlow exactly-once", "syncs": {"plain": found(330, 10),
                                                                      "txn": found(660, 20)}},
                       {"label": "MirrorMaker 2", "syncs": {"plain": found(1_000, 4), "txn": found(1_100, 4)}}]}
    rows = {tuple(r.split()[:3]): r.split() for r in table(report).splitlines() if r.startswith("Mirror")}
    assert rows[("MirrorFlow", "plain", "4")][-2:] == ["4", "4"]  # one per partition start, kept
    # a sync per source transaction; kept: a record per run of MAX_STEPS + 1 (33) of them
    assert rows[("MirrorFlow", "txn", "1,000")][-2:] == ["864,000", "26,182"]
    # exactly-once: a sync per partition per 100 ms transaction, 1 in 33 kept
    assert rows[("MirrorFlow", "exactly-once", "plain")][-2:] == ["3,456,000", "104,727"]
    assert rows[("MirrorMaker", "2", "plain")][-2:] == ["345,600", "4"]  # compaction keeps one per partition
