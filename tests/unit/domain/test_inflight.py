"""The commit ledger: only acknowledged records, in order, explained by acknowledged syncs."""

from __future__ import annotations

from replicator.domain.inflight import PartitionLedger


def test_commit_follows_in_order_deliveries() -> None:
    ledger = PartitionLedger()
    assert ledger.commit_offset() is None
    for offset in (5, 6, 9):  # 7, 8: a gap in the source (markers, compaction)
        ledger.produced(offset)
    assert len(ledger) == 3 and ledger.commit_offset() is None
    assert ledger.delivered() == 5 and ledger.commit_offset() == 6
    assert ledger.delivered() == 6 and ledger.delivered() == 9
    assert ledger.commit_offset() == 10 and len(ledger) == 0


def test_unacknowledged_sync_holds_commit_at_end_of_previous_run() -> None:
    ledger = PartitionLedger()
    for offset in (0, 1, 2, 5, 6):
        ledger.produced(offset)
    ledger.hold(0, None)
    for _ in range(3):
        ledger.delivered()
    assert ledger.commit_offset() == 0  # the first sync is not acknowledged yet
    ledger.release(0)
    assert ledger.commit_offset() == 3
    ledger.delivered()  # offset 5: a new run (gap 3-4), its sync is in flight
    ledger.hold(5, 2)
    ledger.delivered()
    assert ledger.commit_offset() == 3
    ledger.release(5)
    assert ledger.commit_offset() == 7


def test_clear_forgets_everything() -> None:
    ledger = PartitionLedger()
    ledger.produced(1)
    ledger.hold(1, None)
    ledger.clear()
    assert len(ledger) == 0 and ledger.commit_offset() is None


def test_a_refused_record_blocks_the_commit_for_good() -> None:
    ledger = PartitionLedger()
    for offset in range(5):
        ledger.produced(offset)
    ledger.delivered()
    refused = ledger.delivered()  # offset 1: the target said no
    ledger.block(refused)
    ledger.delivered()
    ledger.delivered()
    assert ledger.commit_offset() == 1


def test_records_at_or_before_one_already_produced_are_repeats() -> None:
    ledger = PartitionLedger(placed=10)
    assert ledger.repeats(9) and not ledger.repeats(10)
    ledger.produced(10)
    ledger.produced(13)  # a gap (compaction, a transaction marker) is no repeat
    assert ledger.repeats(13) and ledger.repeats(0) and not ledger.repeats(14)


def test_a_partition_placed_nowhere_yet_repeats_nothing() -> None:
    assert not PartitionLedger().repeats(0)


def test_moved_to_allows_going_back_and_ignores_going_forward() -> None:
    ledger = PartitionLedger(placed=10)
    ledger.produced(20)
    ledger.moved_to(30)  # forward: records fetched before the move still come first
    assert not ledger.repeats(21)
    ledger.moved_to(0)  # the log was truncated or recreated: copying starts over from its start
    assert not ledger.repeats(0)
