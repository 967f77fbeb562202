"""InFlight: what a worker handed to its producer, per source partition, and what it may commit."""

from __future__ import annotations

from typing import Any

import pytest

from replicator.domain.offset_sync import OffsetSync, Run
from replicator.worker.inflight import InFlight

A, B = ("orders", 0), ("orders", 1)


def report(inflight: InFlight, key: tuple[str, int], target_offset: int) -> bool:
    """A delivery report of ``key``, handled as the worker's delivery callback does; True when live."""
    ledger, live = inflight.ledger_of_report(key)
    assert ledger is not None and len(ledger), f"unmatched report of {key}"
    if live:
        inflight.delivered(key, ledger, target_offset)
    else:
        ledger.delivered()
    return live


def run(steps: list[tuple[Any, ...]]) -> InFlight:
    inflight = InFlight()
    for step, *args in steps:
        if step == "open":
            inflight.open(*args)
        elif step == "produce":
            key, offsets = args
            for offset in offsets:
                inflight.produced(key, offset)
        elif step == "report":
            key, target = args
            report(inflight, key, target)
        elif step == "close":
            inflight.close(args[0])
        elif step == "sync_acked":
            for sync in list(inflight.syncs):
                inflight.sync_delivered(sync)
            inflight.syncs.clear()
        else:
            raise AssertionError(step)
    return inflight


@pytest.mark.parametrize(("steps", "positions"), [
    # nothing acknowledged: nothing to commit
    ([("open", A), ("produce", A, [0, 1, 2])], {}),
    # the commit position is the last acknowledged record + 1, never past an unacknowledged one
    ([("open", A), ("produce", A, [0, 1, 2]), ("report", A, 0), ("sync_acked",), ("report", A, 1)], {A: 2}),
    # the first record starts a run: its sync holds the commit until the target acknowledges it
    ([("open", A), ("produce", A, [0, 1]), ("report", A, 0), ("report", A, 1)], {A: 0}),
    ([("open", A), ("produce", A, [0, 1]), ("report", A, 0), ("report", A, 1), ("sync_acked",)], {A: 2}),
    # partitions are independent
    ([("open", A), ("open", B), ("produce", A, [5]), ("produce", B, [7, 8]), ("report", A, 0),
      ("report", B, 1), ("sync_acked",)], {A: 6, B: 8}),
    # a closed partition commits nothing any more
    ([("open", A), ("produce", A, [0]), ("report", A, 0), ("sync_acked",), ("close", [A])], {}),
], ids=["unacked", "ack-order", "sync-holds", "sync-released", "two-partitions", "closed"])
def test_commit_positions_never_pass_an_unacknowledged_record(steps: list[tuple[Any, ...]],
                                                              positions: dict[tuple[str, int], int]) -> None:
    assert run(steps).commit_positions() == positions


def test_commit_positions_are_reported_once_until_they_move_again() -> None:
    inflight = run([("open", A), ("produce", A, [0, 1]), ("report", A, 0), ("sync_acked",)])
    assert inflight.commit_positions() == {A: 1}
    assert inflight.commit_positions() == {}
    report(inflight, A, 1)
    assert inflight.commit_positions() == {A: 2}


def test_late_reports_of_a_revoked_partition_settle_its_retired_ledger_and_never_commit_for_the_new_one() -> None:
    inflight = run([("open", A), ("produce", A, [10, 11]), ("report", A, 0), ("sync_acked",)])
    assert inflight.close([A]) == 1  # offset 11 still in flight
    assert not inflight.owns(A)
    inflight.open(A)  # assigned back, placed at 11 (the committed offset)
    inflight.produced(A, 11)
    assert inflight.unsettled() == 2
    assert report(inflight, A, 1) is False  # the late report belongs to the retired ledger
    assert inflight.commit_positions() == {}  # ... and moves nothing
    assert report(inflight, A, 2) is True  # the new assignment's own record
    inflight.sync_delivered(inflight.syncs[-1])
    assert inflight.commit_positions() == {A: 12}
    assert inflight.unsettled() == 0


def test_retired_ledgers_are_settled_oldest_first() -> None:
    inflight = run([("open", A), ("produce", A, [0]), ("close", [A]), ("open", A), ("produce", A, [0, 1]),
                    ("close", [A]), ("open", A)])
    assert inflight.unsettled() == 3
    matched = []
    for _ in range(3):
        ledger, live = inflight.ledger_of_report(A)
        assert ledger is not None and not live
        matched.append((id(ledger), len(ledger)))
        ledger.delivered()
    assert [size for _, size in matched] == [1, 2, 1]  # the first retired ledger, then the second
    assert matched[0][0] != matched[1][0] == matched[2][0]
    assert inflight.ledger_of_report(A) == (inflight.ledgers[A], True)


@pytest.mark.parametrize(("in_flight", "retired"), [([], False), ([3], True), ([3, 4, 5], True)])
def test_close_returns_the_records_still_in_flight_and_retires_only_a_ledger_that_has_some(
        in_flight: list[int], retired: bool) -> None:
    inflight = run([("open", A), ("produce", A, in_flight)])
    assert inflight.close([A, B]) == len(in_flight)  # B was never open: ignored
    assert (A in inflight.retired) is retired
    assert inflight.unsettled() == len(in_flight)


def test_abandon_forgets_live_and_retired_records_and_unsent_syncs() -> None:
    inflight = run([("open", A), ("produce", A, [0, 1]), ("close", [A]), ("open", A), ("open", B),
                    ("produce", B, [0, 1, 2]), ("report", B, 0)])
    inflight.produced(B, 3, target="merged")
    assert inflight.syncs
    assert inflight.abandon() == 2 + 3  # A's retired 2, B's 3 left
    assert (inflight.ledgers, inflight.writers, dict(inflight.retired), dict(inflight.merge_order)) == ({}, {}, {}, {})
    assert not inflight.syncs and inflight.commit_positions() == {} and inflight.unsettled() == 0


def test_syncs_purged_unsent_go_again_first_in_the_order_they_were_produced() -> None:
    first, second, later = (Run(OffsetSync("orders", 0, offset, offset, None)) for offset in (0, 5, 9))
    inflight = InFlight()
    inflight.syncs.append(later)  # found after the two below were produced, not yet produced itself
    inflight.sync_purged(first)
    inflight.sync_purged(second)
    assert list(inflight.syncs_to_send()) == [first, second, later]
    assert list(inflight.syncs_to_send()) == [first, second, later]  # taken once, not twice
    inflight.sync_purged(later)
    inflight.abandon()  # a replaced producer: nothing of it goes again
    assert not inflight.syncs_to_send()


def test_a_sync_acknowledged_without_an_offset_holds_the_commit_and_goes_again_as_its_runs_newest_version() -> None:
    """No proof the sync was written (a new partition of the syncs topic can take a later batch's sequence as its
    first): the commit stays before its run's start until a version of the run is acknowledged with an offset.
    What goes again is the run's newest version: written after a newer one, the older would be what the
    compacted topic keeps."""
    inflight = run([("open", A), ("produce", A, [0, 1, 2]), ("report", A, 0), ("report", A, 2)])
    first, grown = inflight.syncs_to_send()  # record 1 went to target 2 (a foreign write at 1): a step
    assert (first.key, first.steps, grown.key, grown.steps) == (("orders", 0, 0), (), ("orders", 0, 0), ((1, 0, 1),))
    inflight.syncs.clear()  # both produced
    inflight.sync_unproven(first)  # acknowledged without an offset
    assert list(inflight.syncs_to_send()) == [grown]  # the newest version goes again, not the older one
    inflight.syncs.clear()
    assert inflight.commit_positions() == {A: 0}  # nothing proven yet
    inflight.sync_delivered(grown)  # written: it holds the run's start and its step
    assert inflight.commit_positions() == {A: 2}
    inflight.sync_delivered(grown)  # the one sent again
    assert inflight.newest == {}
    inflight.open(B)
    inflight.produced(B, 0)
    report(inflight, B, 0)
    (alone,) = inflight.syncs_to_send()  # a run's only version, unproven, goes again as it is
    inflight.syncs.clear()
    inflight.sync_unproven(alone)
    assert list(inflight.syncs_to_send()) == [alone]


def test_a_sync_of_a_partition_no_longer_owned_is_ignored() -> None:
    inflight = InFlight()
    inflight.sync_delivered(Run(OffsetSync("orders", 0, 5, 5, None)))
    assert inflight.commit_positions() == {}


def test_a_step_over_a_marker_holds_the_commit_until_the_grown_run_is_acknowledged() -> None:
    """An exactly-once route: records 0, 1 in one transaction, 2 in the next (its commit marker at target 2)."""
    inflight = run([("open", A), ("produce", A, [0, 1, 2]), ("report", A, 0), ("report", A, 1), ("sync_acked",)])
    assert inflight.commit_positions() == {A: 2}
    report(inflight, A, 3)
    (grown,) = inflight.syncs
    assert grown == Run(OffsetSync("orders", 0, 0, 0, None), ((2, 0, 1),))  # the same run, one step longer
    assert inflight.commit_positions() == {A: 2}  # not past the step until its record is written
    inflight.sync_delivered(inflight.syncs.popleft())
    assert inflight.commit_positions() == {A: 3}


def test_a_merged_target_names_the_source_topics_in_produce_order_per_partition() -> None:
    inflight = InFlight()
    east, west = ("east", 0), ("west", 0)
    for key in (east, west, ("east", 1)):
        inflight.open(key)
    for key in (west, east, west, ("east", 1)):
        inflight.produced(key, 0, target="all")
    merged = frozenset({"all"})
    assert [inflight.source_topic("all", 0, {}, merged) for _ in range(4)] == ["west", "east", "west", None]
    assert inflight.source_topic("all", 1, {}, merged) == "east"


@pytest.mark.parametrize(("target", "source_of", "expected"), [
    ("source.orders", {"source.orders": "orders"}, "orders"),
    ("unknown", {"source.orders": "orders"}, None),
])
def test_an_unmerged_target_names_its_one_source(target: str, source_of: dict[str, str],
                                                 expected: str | None) -> None:
    assert InFlight().source_topic(target, 0, source_of, frozenset()) == expected


def test_a_partition_goes_alone_until_a_record_of_it_is_acknowledged_with_an_offset() -> None:
    inflight = run([("open", A), ("open", B), ("produce", A, [0, 1]), ("produce", B, [0])])
    assert inflight.alone == {A, B} and inflight.proven == []
    report(inflight, A, 0)
    assert inflight.alone == {B} and inflight.proven == [A]  # the worker lets A's kept records go
    report(inflight, A, 1)
    assert inflight.proven == [A]  # once
    inflight.close([B])
    inflight.open(A)  # placed again (copied again from its last acknowledged record): alone again
    assert inflight.alone == {A}
    inflight.abandon()
    assert inflight.alone == set() and inflight.proven == []


def test_a_partition_with_nothing_in_flight_and_no_acknowledgement_for_a_while_goes_alone_again() -> None:
    inflight = run([("open", A), ("open", B), ("produce", A, [0]), ("produce", B, [0])])
    report(inflight, A, 0)
    report(inflight, B, 0)
    inflight.proven.clear()
    assert inflight.alone_when_quiet(0.0, 60.0) == []  # first seen
    inflight.produced(B, 1)  # B has a record in flight: not quiet, whatever its end
    assert inflight.alone_when_quiet(59.0, 60.0) == []
    assert inflight.alone_when_quiet(61.0, 60.0) == [A]
    assert inflight.alone == {A}
    assert inflight.alone_when_quiet(200.0, 60.0) == []  # A is alone already; B still has its record in flight
    report(inflight, B, 1)  # its end moved: quiet from the next look on
    assert inflight.alone_when_quiet(201.0, 60.0) == []
    assert inflight.alone_when_quiet(261.0, 60.0) == [B]
    inflight.close([A])
    assert A not in inflight.quiet
    inflight.abandon()
    assert inflight.quiet == {}


def test_a_partition_copying_serially_lets_what_it_kept_go_once_nothing_of_it_is_in_flight() -> None:
    inflight = run([("open", A), ("produce", A, [0])])
    report(inflight, A, 0)
    inflight.proven.clear()  # A went alone first
    inflight.produced(A, 1)
    inflight.produced(A, 2)
    inflight.serial.add(A)  # the worker kept its next records aside
    report(inflight, A, 1)
    assert inflight.proven == [] and inflight.serial == {A}  # one still in flight
    report(inflight, A, 2)
    assert inflight.proven == [A] and inflight.serial == set()
    inflight.serial.add(A)
    inflight.close([A])
    assert inflight.serial == set()


def test_an_exactly_once_workers_partitions_never_go_alone() -> None:
    inflight = InFlight(first_alone=False)
    inflight.open(A)
    inflight.produced(A, 0)
    assert inflight.alone == set()
    report(inflight, A, 0)
    assert inflight.proven == []
    assert inflight.alone_when_quiet(0.0, 1.0) == inflight.alone_when_quiet(9.0, 1.0) == []
