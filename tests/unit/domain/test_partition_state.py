"""The one vocabulary of partition states: which wins when several hold, and the detail each carries."""

from __future__ import annotations

from replicator.domain.partition_state import CAUGHT_UP_LAG, Facts, PartitionState, state_of

S = PartitionState


def test_a_partition_copying_along_is_copying_and_one_far_behind_or_never_copied_is_catching_up() -> None:
    assert state_of(Facts(lag=3, committed=100)) == (S.COPYING, None)
    assert state_of(Facts(lag=CAUGHT_UP_LAG + 1, committed=100)) == (S.CATCHING_UP, None)
    assert state_of(Facts(lag=5, committed=None)) == (S.CATCHING_UP, "nothing copied yet")


def test_each_state_wins_over_those_after_it() -> None:
    everything = Facts(lag=5_000, committed=10, failed_over="to 'backup' by failover run 3",
                       recorded=(S.FAULTED, "the record at source offset 9: too large"), paused=True,
                       losses=[(100, 250), (300, 301)], recreated="deleted and created again")
    expected = [
        (S.FAILED_OVER, "to 'backup' by failover run 3"),
        (S.FAULTED, "the record at source offset 9: too large"),
        (S.PAUSED, None),
        (S.STUCK, "fetch position 7 still for 130 s"),
        (S.LOST_RECORDS, "151 at [100,250) [300,301)"),
        (S.CATCHING_UP, None),
        (S.RECREATED, "deleted and created again"),
        (S.COPYING, None),
    ]
    facts = everything
    for state, detail in expected:
        if state == S.STUCK:  # a worker records one of FAULTED and STUCK at a time
            facts = _with(facts, recorded=(S.STUCK, "fetch position 7 still for 130 s"))
        assert state_of(facts) == (state, detail)
        facts = _without(facts, state)


def _with(facts: Facts, **changes: object) -> Facts:
    import dataclasses

    return dataclasses.replace(facts, **changes)  # type: ignore[arg-type]


def _without(facts: Facts, state: PartitionState) -> Facts:
    removal = {S.FAILED_OVER: {"failed_over": None}, S.FAULTED: {"recorded": None}, S.PAUSED: {"paused": False},
               S.STUCK: {"recorded": None}, S.LOST_RECORDS: {"losses": ()}, S.CATCHING_UP: {"lag": 1},
               S.RECREATED: {"recreated": None}, S.COPYING: {}}[state]
    return _with(facts, **removal)
