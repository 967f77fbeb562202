"""Stuck partitions on a clock of our own: found once, not while paused or caught up, remedies escalate."""

from __future__ import annotations

from replicator.domain.stuck import Moving, Remedy, Stuck, StuckWatch

KEY = ("orders", 3)


def test_a_partition_whose_position_stays_while_the_end_moves_is_stuck_once() -> None:
    watch = StuckWatch(after=120)
    assert watch.observe(KEY, 100, 150, True, 0) is None
    assert watch.observe(KEY, 100, 180, True, 119) is None
    found = watch.observe(KEY, 100, 200, True, 120)
    assert found == Stuck(KEY, 100, 200, 120, Remedy.RESEEK) and watch.stuck() == [KEY]
    assert watch.observe(KEY, 100, 220, True, 200) is None  # said once per remedy: the next one is due at 240
    again = watch.observe(KEY, 100, 220, True, 240)
    assert isinstance(again, Stuck) and again.remedy == Remedy.REJOIN  # the re-seek did not cure it
    assert watch.observe(KEY, 130, 220, True, 245) == Moving(KEY, 130) and watch.stuck() == []


def test_nothing_to_fetch_or_not_allowed_to_fetch_is_never_stuck() -> None:
    watch = StuckWatch(after=10)
    for now in range(0, 100, 5):  # caught up (a partition ending with a marker: end == position, read_committed)
        assert watch.observe(KEY, 50, 50, True, now) is None
    for now in range(100, 200, 5):  # behind, but paused (operator, full queue, rate limit) or unplaced
        assert watch.observe(KEY, 50, 90, False, now) is None
    assert watch.observe(KEY, 50, 90, True, 200) is None  # the clock starts when it may fetch
    assert isinstance(watch.observe(KEY, 50, 90, True, 210), Stuck)


def test_stuck_again_soon_after_a_reseek_gives_the_partition_back_then_starts_over_much_later() -> None:
    watch = StuckWatch(after=10)
    watch.observe(KEY, 5, 9, True, 0)
    first = watch.observe(KEY, 5, 9, True, 10)
    assert first is not None and isinstance(first, Stuck) and first.remedy == Remedy.RESEEK
    watch.observe(KEY, 5, 9, False, 11)  # placed again: not fetching while it is placed
    watch.observe(KEY, 5, 9, True, 12)
    second = watch.observe(KEY, 5, 9, True, 22)
    assert isinstance(second, Stuck) and second.remedy == Remedy.REJOIN
    watch.forget({KEY})
    watch.observe(KEY, 5, 9, True, 500)
    third = watch.observe(KEY, 5, 9, True, 510)
    assert isinstance(third, Stuck) and third.remedy == Remedy.RESEEK  # long after: the first remedy again


def test_a_caught_up_partition_needs_no_new_position_and_one_with_records_past_it_always_does() -> None:
    """The loop asks librdkafka only for the positions that can matter (each costs a walk of its topics)."""
    watch = StuckWatch(after=10)
    assert watch.known_position(KEY, 50) is None  # never seen: asked
    watch.observe(KEY, 50, 50, True, 0)
    assert watch.known_position(KEY, 50) == 50  # caught up: the last position says it all
    assert watch.known_position(KEY, None) is None  # the end unknown: asked
    assert watch.known_position(KEY, 60) is None  # records past it: asked
    for now in (5, 10):  # observed with the known position while caught up: never stuck
        assert watch.observe(KEY, 50, 50, True, now) is None
    watch.observe(KEY, 50, 60, True, 11)
    assert isinstance(watch.observe(KEY, 50, 60, True, 21), Stuck)
    assert watch.known_position(KEY, 50) is None  # reported stuck: always asked, so its recovery is seen


def test_how_long_a_position_has_stood_with_records_past_it_is_told_before_it_counts_as_stuck() -> None:
    """What the worker's client-level rule reads (every partition it owns standing at once: the client)."""
    watch = StuckWatch(after=120)
    assert watch.still_for(KEY, 0) is None  # never seen
    watch.observe(KEY, 100, 150, True, 0)
    watch.observe(KEY, 100, 150, True, 5)
    assert watch.still_for(KEY, 30) == 30
    watch.observe(KEY, 100, 100, True, 40)  # caught up: nothing to fetch, nothing standing
    assert watch.still_for(KEY, 45) is None
    watch.observe(KEY, 100, 160, True, 50)
    assert watch.still_for(KEY, 60) == 20  # counted from the last look with nothing to fetch
    watch.observe(KEY, 100, 160, False, 70)  # paused: not standing of its own
    assert watch.still_for(KEY, 75) is None
    watch.observe(KEY, 120, 160, True, 80)  # moved: counted afresh
    assert watch.still_for(KEY, 85) == 5


def test_a_partition_placed_afresh_is_counted_again_but_stays_reported_until_it_fetches() -> None:
    watch = StuckWatch(after=10)
    watch.observe(KEY, 100, 150, True, 0)
    assert isinstance(watch.observe(KEY, 100, 150, True, 10), Stuck)
    watch.observe(KEY, 100, 150, True, 15)
    assert watch.still_for(KEY, 15) == 5
    watch.recount({KEY})  # new clients: the position it resumes at has not stood since before them
    assert watch.still_for(KEY, 16) is None and watch.stuck() == [KEY]
    watch.observe(KEY, 100, 150, True, 20)
    assert watch.still_for(KEY, 22) == 2
    assert watch.observe(KEY, 120, 150, True, 25) == Moving(KEY, 120) and watch.stuck() == []
