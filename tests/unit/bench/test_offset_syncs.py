"""The offset-syncs bench's pure parts: reading each peer's sync keys, counting, a day's estimate."""

from __future__ import annotations

import argparse
import struct
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))  # the bench's scripts import by file name

from offset_syncs import count_syncs, mf_sync_topic, mm2_sync_topic, per_day, table

from replicator.domain.offset_sync import OffsetSync, encode_sync


def mm2_key(topic: str, partition: int) -> bytes:
    return struct.pack(">h", len(topic)) + topic.encode() + struct.pack(">i", partition)


def test_each_peers_sync_names_its_source_topic() -> None:
    key, value = encode_sync(OffsetSync("txn", 2, 500, 480, 498))
    assert mf_sync_topic(key, value) == "txn"
    assert mm2_sync_topic(mm2_key("plain", 3), b"\x00" * 16) == "plain"
    counted = count_syncs([(mm2_key("plain", 0), b"v" * 16), (mm2_key("plain", 1), b"v" * 16),
                           (mm2_key("txn", 0), b"v" * 16)], mm2_sync_topic)
    assert counted == {"plain": {"syncs": 2, "bytes": 2 * (len(mm2_key("plain", 0)) + 16)},
                       "txn": {"syncs": 1, "bytes": len(mm2_key("txn", 0)) + 16}}


def test_a_days_estimate_scales_per_record_or_per_transaction() -> None:
    args = argparse.Namespace(day_rate=100, day_transaction_ms=100)
    assert per_day(1_000, 100_000, 0, args, per_record=True) == 1_000 / 100_000 * 100 * 4 * 86_400
    assert per_day(4_000, 100_000, 1_000, args, per_record=False) == 4 * 864_000
    assert per_day(5, 0, 0, args, per_record=True) == 0.0


def test_the_table_keeps_every_mirrorflow_sync_and_one_per_partition_of_mm2() -> None:
    settings = {"records": 100_000, "per_transaction": 100, "day_rate": 100, "day_transaction_ms": 100}
    report = {"settings": settings, "transactions": {"transactions": 1_000},
              "runs": [{"label": "MirrorFlow", "syncs": {"plain": {"syncs": 4, "bytes": 400},
                                                         "txn": {"syncs": 4_000, "bytes": 400_000}}},
                       {"label": "MirrorMaker 2", "syncs": {"plain": {"syncs": 1_000, "bytes": 30_000},
                                                            "txn": {"syncs": 1_100, "bytes": 33_000}}}]}
    rows = {tuple(r.split()[:3]): r.split() for r in table(report).splitlines() if r.startswith("Mirror")}
    assert rows[("MirrorFlow", "plain", "4")][-2:] == ["4", "4"]  # one per partition start, kept
    assert rows[("MirrorFlow", "txn", "4,000")][-2:] == ["3,456,000", "3,456,000"]  # a sync per transaction
    assert rows[("MirrorMaker", "2", "plain")][-2:] == ["345,600", "4"]  # compaction keeps one per partition
