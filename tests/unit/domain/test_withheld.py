"""domain.withheld: partitions the group gave a member that its client never handed over, partitions a member
released that the group still counts as its own, and partitions a member's client keeps that another member waits
for."""

from __future__ import annotations

from replicator.domain.withheld import GroupSays, KeptWatch, ReleaseWatch, WithheldWatch, group_says

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


def test_what_the_group_says_of_a_member_names_what_another_member_waits_for_and_no_member_owns() -> None:
    described = [("me", [A], [A]),
                 ("other", [B], [B, C]),  # waits for C: pending revocation somewhere, shown in nobody's assignment
                 ("third", [], [])]
    assert group_says("me", described) == GroupSays(given=frozenset({A}), held_by_others=frozenset({B}),
                                                    awaited_by_others=frozenset({C}))


def test_a_partition_another_member_waits_for_while_this_member_still_owns_it_is_not_awaited_of_anyone_else() -> None:
    said = group_says("me", [("me", [A], []), ("other", [], [A])])
    assert said is not None and said.awaited_by_others == frozenset()  # on its way: this member revokes it next


def test_a_member_the_group_does_not_know_is_said_nothing_of() -> None:
    assert group_says("me", [("other", [A], [A])]) is None


def test_a_partition_released_and_still_awaited_by_another_member_after_the_wait_is_reported() -> None:
    watch = ReleaseWatch(after=30)
    watch.released("m", [A, B], now=100)
    assert watch.observe("m", {A, B}, set(), now=110) == []
    assert watch.observe("m", {A}, set(), now=120) == []  # B taken by its new owner? not yet known to be for good: kept
    assert watch.observe("m", {A}, set(), now=130) == [A]
    assert watch.observe("m", {A, B}, set(), now=140) == []  # reported once; B was not awaited at the wait's end


def test_a_look_asked_before_the_release_takes_nothing_off_the_watch() -> None:
    watch = ReleaseWatch(after=30)
    watch.released("m", [A], now=100)
    watch.observe("m", set(), set(), now=101)  # an answer to an ask made before the release: A still owned
    assert watch.observe("m", {A}, set(), now=131) == [A]


def test_what_an_earlier_member_released_is_forgotten_and_a_later_one_is_watched() -> None:
    watch = ReleaseWatch(after=30)
    watch.released("old", [A], now=0)
    watch.released("new", [B], now=10)
    assert watch.observe("new", {A, B}, set(), now=40) == [B]  # the old member left: its releases were heard then
    assert watch.observe("old", {A, B}, set(), now=40) == []


def test_a_partition_the_client_keeps_while_another_member_waits_for_it_is_reported_after_the_wait() -> None:
    watch = KeptWatch(after=20)
    assert watch.observe(awaited_by_others={A, B}, handed_over={A, C}, now=100) == []  # B: not this client's
    assert watch.watching
    assert watch.observe({A, B}, {A, C}, now=119.9) == []
    assert watch.observe({A, B}, {A, C}, now=120) == [A]


def test_a_kept_partition_given_up_or_no_longer_awaited_is_watched_afresh() -> None:
    watch = KeptWatch(after=20)
    watch.observe({A, B}, {A, B}, now=0)
    watch.observe({A}, {A, B}, now=10)  # B: the coordinator counts it this member's again
    assert watch.observe({A, B}, {A, B}, now=25) == [A]  # B kept again from 25 only
    watch.forget()  # new clients
    assert watch.observe({A, B}, {A, B}, now=30) == []
    assert watch.observe({A, B}, set(), now=31) == [] and not watch.watching  # revoked at last: the other watch's


def test_a_released_partition_seen_with_its_new_owner_is_not_blamed_on_this_member_in_a_later_hand_over() -> None:
    """Found by the long-form fault run (seed 32): w2 released a partition, x10 took it at once, and 23 s later
    x10 gave it up in the next hand-over; w2's look at that moment found it awaited, and w2 renewed itself."""
    watch = ReleaseWatch(after=20)
    watch.released("m", [A, B], now=100)
    assert watch.observe("m", set(), {A}, now=110) == []  # A with its new owner: the coordinator heard the release
    assert watch.observe("m", {A, B}, set(), now=123) == [B]  # A awaited again: another member's hand-over
