"""Which partitions are held apart because the target acknowledges nothing of them (domain.ack_stalls)."""

from __future__ import annotations

from replicator.domain.ack_stalls import AckStalls, Changes, nodes_apart

A, B = ("t", 0), ("t", 1)
TP = tuple[str, int]


def _stalls() -> AckStalls:
    return AckStalls(after=5.0, retry=5.0, retry_max=20.0, probe=10)


def test_a_partition_whose_oldest_record_waits_after_seconds_is_held_and_let_go_once_acknowledged() -> None:
    stalls = _stalls()
    assert stalls.observe({A: 10, B: 20}, {A: 10, B: 20}, 0.0) == Changes()
    assert stalls.observe({A: 10, B: 25}, {A: 10, B: 25}, 4.9) == Changes()
    assert stalls.observe({A: 10, B: 30}, {A: 10, B: 30}, 5.0) == Changes(held=(A,))
    assert stalls.limits == {A: 0}  # nothing more of it in flight; B copies freely
    assert stalls.observe({A: 10}, {A: 10}, 20.0) == Changes()  # still nothing of A acknowledged
    assert stalls.observe({A: 11}, {A: 11}, 21.0) == Changes(released=(A,))
    assert stalls.limits == {}


def test_records_acknowledged_between_looks_count_as_moving() -> None:
    stalls = _stalls()
    stalls.observe({A: 10}, {A: 10}, 0.0)
    stalls.observe({}, {}, 3.0)  # all of it acknowledged
    assert stalls.observe({A: 30}, {A: 30}, 6.0) == Changes()  # a new oldest: watched afresh
    assert stalls.observe({A: 30}, {A: 30}, 11.0) == Changes(held=(A,))


def test_dropped_records_wait_then_probe_and_a_probe_held_again_waits_twice_as_long() -> None:
    stalls = _stalls()
    stalls.observe({A: 10}, {A: 10}, 0.0)
    stalls.observe({A: 10}, {A: 10}, 5.0)
    stalls.dropped([A], 6.0)  # the producer replaced: its records gone
    assert stalls.waiting(A) and stalls.limits == {A: 0}
    assert stalls.observe({}, {A: None}, 10.9) == Changes()
    assert stalls.observe({}, {A: None}, 11.0) == Changes(probing=(A,))
    assert stalls.limits == {A: 10}
    stalls.observe({A: 10}, {A: None}, 12.0)  # its probe went
    assert stalls.observe({A: 10}, {A: None}, 16.9) == Changes()
    stalls.observe({A: 10}, {A: None}, 17.0)
    assert stalls.limits == {A: 0}  # held again, its probe in flight
    stalls.dropped([A], 18.0)
    assert stalls.observe({}, {A: None}, 27.9) == Changes()  # 10 s now
    assert stalls.observe({}, {A: None}, 28.0) == Changes(probing=(A,))
    assert stalls.observe({}, {A: 11}, 29.0) == Changes(released=(A,))  # acknowledged: copies freely
    assert stalls.limits == {}


def test_the_wait_to_probe_doubles_up_to_its_most() -> None:
    stalls = _stalls()
    stalls.observe({A: 1}, {A: None}, 0.0)
    stalls.observe({A: 1}, {A: None}, 5.0)
    now = 5.0
    for wait in (5.0, 10.0, 20.0, 20.0):
        stalls.dropped([A], now)
        assert stalls.observe({}, {A: None}, now + wait - 0.1) == Changes()
        assert stalls.observe({}, {A: None}, now + wait) == Changes(probing=(A,))
        stalls.observe({A: 1}, {A: None}, now + wait + 0.1)
        stalls.observe({A: 1}, {A: None}, now + wait + 5.1)  # its probe held again
        now += wait + 6.0


def test_forgotten_partitions_are_no_longer_held() -> None:
    stalls = _stalls()
    stalls.observe({A: 1, B: 2}, {A: None, B: None}, 0.0)
    stalls.observe({A: 1, B: 2}, {A: None, B: None}, 5.0)
    assert stalls.forget([A]) == [A]
    assert stalls.limits == {B: 0} and stalls.forget([A]) == []


def test_nodes_apart_names_the_held_partitions_leaders_only_when_others_lead_partitions_waiting() -> None:
    assert nodes_apart([2, 2], [1, 3, 2]) == frozenset({2})
    assert nodes_apart([2, 3], [2, 3]) is None  # every node waiting leads a held partition: the whole target
    assert nodes_apart([2], []) is None
    assert nodes_apart([None], [1]) is None  # no leader of the held known: nothing decided
    assert nodes_apart([2], [None]) is None
    assert nodes_apart([2, None], [None, 1]) == frozenset({2})  # the unknown ones left out


def test_unanswered_names_the_partitions_held_with_records_unacknowledged_for_so_long() -> None:
    stalls = _stalls()
    stalls.observe({A: 1, B: 1}, {A: None, B: None}, 0.0)
    stalls.observe({A: 1, B: 2}, {A: None, B: 1}, 3.0)
    stalls.observe({A: 1, B: 2}, {A: None, B: 1}, 8.0)  # A held (since 0), B held (since 3)
    assert stalls.unanswered(29.9, 30.0) == []
    assert stalls.unanswered(30.0, 30.0) == [A]
    assert sorted(stalls.unanswered(33.0, 30.0)) == [A, B]
    stalls.dropped([A], 33.0)  # its records gone: nothing of it unanswered
    assert stalls.unanswered(40.0, 30.0) == [B]


def test_partitions_set_aside_wait_to_probe_as_if_their_records_were_dropped() -> None:
    stalls = _stalls()
    stalls.observe({A: 1}, {A: None}, 0.0)
    stalls.observe({A: 1}, {A: None}, 5.0)  # A held
    assert stalls.set_aside([A, B], 6.0) == [B]  # A is held already
    assert stalls.limits == {A: 0, B: 0} and stalls.waiting(B)
    assert stalls.observe({A: 1}, {A: None, B: None}, 11.0) == Changes(probing=(B,))


def _slow_target(stalls: AckStalls, until: int, silent: frozenset[int] = frozenset()) -> dict[int, list[TP]]:
    """Ten partitions, looked at each second: for 10 s the target acknowledges at once, then every record 6 s
    late (one a look, each partition's in turn); the ``silent`` ones get nothing acknowledged after 10 s. The
    partitions held, by the second they were."""
    parts = [("t", i) for i in range(10)]
    held: dict[int, list[TP]] = {}
    for t in range(until + 1):
        oldest = {key: t * 10 if t < 10 else (0 if i in silent else int((t - 10 + i * 0.6) // 6) + 100)
                  for i, key in enumerate(parts)}
        changes = stalls.observe(oldest, dict(oldest), float(t))
        if changes.held:
            held[t] = list(changes.held)
    return held


def test_a_target_slow_for_every_partition_holds_none_apart_once_its_waits_are_known() -> None:
    """A target acknowledging everything 6 s late (a busy disk) is no node out of reach: holding partitions apart
    then only churned (a few hundred held and let go each second at 250 x 4). Before: every partition held in
    each 6 s round."""
    stalls = _stalls()
    held = _slow_target(stalls, until=60)
    assert sum(len(keys) for keys in held.values()) <= 2 and max(held, default=0) < 20, held
    assert stalls.typical_wait(60.0) == 5.0  # the lower bound of a 6 s wait seen a second apart


def test_a_partition_silent_while_the_target_is_slow_is_held_once_it_waited_three_times_the_others() -> None:
    stalls = _stalls()
    held = _slow_target(stalls, until=60, silent=frozenset({9}))
    silent = [t for t, keys in held.items() if ("t", 9) in keys]
    assert silent and 15 <= silent[0] <= 26, held  # 3 x 5 s after its last record in flight was first seen (10 s)
    assert ("t", 9) in stalls.limits


def test_a_target_that_goes_away_holds_its_partitions_after_the_usual_wait() -> None:
    """Nothing acknowledged at all: no wait to compare with, so ``after`` s as before."""
    stalls = _stalls()
    for t in range(5):
        stalls.observe({A: t, B: t}, {A: t, B: t}, float(t))
    assert stalls.observe({A: 5, B: 5}, {A: 5, B: 5}, 5.0) == Changes()
    for t in range(6, 10):
        assert stalls.observe({A: 5, B: 5}, {A: 5, B: 5}, float(t)) == Changes()
    assert stalls.observe({A: 5, B: 5}, {A: 5, B: 5}, 10.0) == Changes(held=(A, B))


def test_partitions_let_go_after_the_target_came_back_slow_are_not_held_again_for_its_slowness() -> None:
    """A whole target away for 8 s holds every partition apart (nothing to compare with); it comes back slow (each
    record acknowledged 6 s late, all partitions together). What they waited held apart counts as the target's
    wait, so they are not held again in each 6 s round (a run at 250 x 4 after a target black-holed for 7 s: about
    200 partitions held and let go every 10 s for 25 s)."""
    stalls = _stalls()
    parts = [("t", i) for i in range(10)]
    held: dict[int, list[TP]] = {}
    for t in range(61):
        if t < 10:
            oldest = {key: t * 10 for key in parts}
        elif t < 18:
            oldest = {key: 100 for key in parts}  # away: nothing acknowledged
        else:
            oldest = {key: 200 + (t - 18) // 6 for key in parts}  # all of them together, 6 s late
        changes = stalls.observe(oldest, dict(oldest), float(t))
        if changes.held:
            held[t] = list(changes.held)
    assert held.pop(15) == parts  # the target away: all of them after 5 s, as before
    assert held == {} and stalls.limits == {}
