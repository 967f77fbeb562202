"""What the checkpoint runs' reader of the syncs topic keeps: the last record of each run, none of a pruned one."""

from __future__ import annotations

import pytest

from replicator.domain.offset_sync import OffsetSync, Run, encode_sync
from replicator.runbooks.checkpoints.syncs import CorruptSync, SyncLog

START = OffsetSync("orders", 0, 0, 0, None)
LATER = OffsetSync("orders", 0, 40, 44, None)


def read(*records: tuple[bytes, bytes | None]) -> SyncLog:
    log = SyncLog({"bootstrap.servers": "unused:9092"}, "syncs", "route r: target 'b'")
    for offset, (key, value) in enumerate(records):
        log._add(offset, key, value)  # what read_to_end does with each record it consumes
    return log


def test_a_grown_run_replaces_its_earlier_records_and_a_tombstone_removes_it() -> None:
    grown = [encode_sync(Run(START, ((1, 0, 1),) * n)) for n in range(3)]
    log = read(*grown, encode_sync(Run(LATER)))
    assert log.runs == {("orders", 0): [Run(START, ((1, 0, 1),) * 2), Run(LATER)]}
    assert len(log.syncs[("orders", 0)]) == 4  # the grown run's 3 starts, the later run's 1
    key, _ = grown[0]
    log._add(9, key, None)  # pruned by a checkpoint run, before compaction dropped anything
    assert log.runs == {("orders", 0): [Run(LATER)]} and log.syncs == {("orders", 0): [LATER]}


def test_a_record_that_is_no_sync_stops_the_run_naming_where_it_is() -> None:
    with pytest.raises(CorruptSync, match="syncs offset 1: offset sync key"):
        read(encode_sync(Run(START)), (b"[1]", b"{}"))
