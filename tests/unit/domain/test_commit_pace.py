"""When an at-least-once worker commits what it stored."""

from __future__ import annotations

from replicator.domain.commit_pace import CommitPace


def test_nothing_stored_asks_no_commit_however_long_it_waits() -> None:
    pace = CommitPace(0.25)
    assert not any(pace.due(now) for now in (0.0, 1.0, 10.0, 3600.0))


def test_the_first_offset_stored_after_a_quiet_spell_is_committed_at_once() -> None:
    pace = CommitPace(0.25)
    assert not pace.due(100.0)
    pace.stored()
    assert pace.due(100.0)
    assert not pace.due(100.0)  # asked: nothing more until something is stored again


def test_offsets_stored_meanwhile_wait_for_the_interval() -> None:
    pace = CommitPace(0.25)
    pace.stored()
    assert pace.due(10.0)
    pace.stored()
    assert not pace.due(10.1) and not pace.due(10.249)
    assert pace.due(10.25)


def test_a_failed_commit_is_asked_again_at_the_next_turn_after_the_interval() -> None:
    pace = CommitPace(0.25)
    pace.stored()
    assert pace.due(5.0)
    pace.failed()
    assert not pace.due(5.1)
    assert pace.due(5.3)
    assert not pace.due(6.0)


def test_an_interval_of_zero_commits_at_every_turn_that_stored_something() -> None:
    pace = CommitPace(0.0)
    for now in (1.0, 1.0, 1.001):
        pace.stored()
        assert pace.due(now)
    assert not pace.due(1.002)
