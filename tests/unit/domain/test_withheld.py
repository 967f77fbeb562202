"""domain.withheld: partitions the group gave a member that its client never handed over."""

from __future__ import annotations

from replicator.domain.withheld import WithheldWatch

A, B, C = ("t", 0), ("t", 1), ("t", 2)


def test_a_partition_withheld_for_the_whole_wait_is_reported_and_one_on_its_way_or_handed_over_is_not() -> None:
    watch = WithheldWatch(after=30)
    assert watch.observe({A, B, C}, held_by_others={B}, handed_over={C}, now=100) == []
    assert watch.observe({A, B, C}, held_by_others={B}, handed_over={C}, now=129.9) == []
    assert watch.observe({A, B, C}, held_by_others={B}, handed_over={C}, now=130) == [A]
    # B's old owner revoked it long ago but the client still did not take it up: counted from when it was free.
    assert watch.observe({A, B, C}, held_by_others=set(), handed_over={C}, now=140) == [A]
    assert watch.observe({A, B, C}, held_by_others=set(), handed_over={C}, now=170) == [A, B]


def test_a_partition_handed_over_or_given_to_another_member_meanwhile_is_watched_afresh() -> None:
    watch = WithheldWatch(after=30)
    watch.observe({A, B}, set(), set(), now=0)
    watch.observe({A}, set(), {B}, now=10)  # B handed over, A still withheld
    assert watch.observe({A, B}, set(), set(), now=35) == [A]  # B withheld again from 35 only
    watch.forget()  # a new consumer
    assert watch.observe({A, B}, set(), set(), now=40) == []


def test_the_watch_says_while_it_watches_partitions_not_yet_overdue() -> None:
    watch = WithheldWatch(after=30)
    assert not watch.watching
    watch.observe({A}, set(), {A}, now=0)
    assert not watch.watching  # handed over: nothing to watch
    watch.observe({A, B}, set(), {A}, now=10)
    assert watch.watching  # the worker asks again once B would be overdue, not a whole interval later
    watch.forget()
    assert not watch.watching
