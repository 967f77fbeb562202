"""The changes of the partitions held apart, told at a bounded rate (domain.change_digest)."""

from __future__ import annotations

from replicator.domain.change_digest import ChangeDigest

A, B, C = ("t", 0), ("t", 1), ("t", 2)


def test_the_first_partition_held_is_told_at_once() -> None:
    told = ChangeDigest(every=10)
    digest = told.note([A], [], 1, now=100.0)
    assert digest is not None and digest.first and digest.added == (A,) and digest.size == 1


def test_changes_while_some_stay_held_are_told_once_per_period_all_of_them() -> None:
    told = ChangeDigest(every=10)
    told.note([A], [], 1, now=100.0)
    assert told.note([B], [], 2, now=101.0) is None
    assert told.note([C], [A], 2, now=105.0) is None
    assert told.note([], [], 2, now=109.9) is None
    digest = told.note([], [], 2, now=110.0)  # a look with no change of its own tells what waited
    assert digest is not None and not digest.first and not digest.empty
    assert (digest.added, digest.removed, digest.size, digest.seconds) == ((B, C), (A,), 2, 10.0)
    assert told.note([], [], 2, now=125.0) is None  # nothing changed since: nothing to tell


def test_the_last_one_copying_again_is_told_at_once_with_what_came_and_went_meanwhile() -> None:
    told = ChangeDigest(every=10)
    told.note([A], [], 1, now=100.0)
    told.note([B], [], 2, now=101.0)
    digest = told.note([], [A, B], 0, now=102.0)
    assert digest is not None and digest.empty and digest.added == (B,) and digest.removed == (A, B)
    again = told.note([C], [], 1, now=103.0)  # the next trouble starts a new story, told at once
    assert again is not None and again.first and again.added == (C,)


def test_a_partition_held_and_let_go_between_two_digests_is_in_both_lists() -> None:
    told = ChangeDigest(every=10)
    told.note([A], [], 1, now=100.0)
    told.note([B], [], 2, now=101.0)
    told.note([], [B], 1, now=102.0)
    digest = told.note([], [], 1, now=111.0)
    assert digest is not None and digest.added == (B,) and digest.removed == (B,) and digest.size == 1


def test_partitions_that_left_the_worker_are_not_told_and_an_empty_set_starts_afresh() -> None:
    told = ChangeDigest(every=10)
    told.note([A], [], 1, now=100.0)
    told.note([B], [], 2, now=101.0)
    told.forget([A, B], 0)  # revoked while held
    assert told.note([], [], 0, now=120.0) is None
    digest = told.note([C], [], 1, now=121.0)
    assert digest is not None and digest.first and digest.added == (C,)
