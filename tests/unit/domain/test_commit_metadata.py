"""The note a worker stores with each committed offset."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from replicator.domain.commit_metadata import CommitNote, belongs_to_other_topic, decode_note, encode_note


@given(st.integers(min_value=0, max_value=2**53), st.one_of(st.none(), st.text("AZaz09-_", min_size=1)))
def test_round_trip(millis: int, topic_id: str | None) -> None:
    assert decode_note(encode_note(millis, topic_id)) == CommitNote(millis, topic_id)


def test_older_and_foreign_metadata() -> None:
    assert decode_note("1732579200000") == CommitNote(1732579200000, None)  # before topic ids were noted
    for foreign in (None, "", "hello", "12 ab cd", "-5 x"):
        assert decode_note(foreign) == CommitNote(None, None)


def test_other_topic_only_when_both_ids_known_and_different() -> None:
    assert belongs_to_other_topic(CommitNote(1, "old"), "new")
    assert not belongs_to_other_topic(CommitNote(1, "same"), "same")
    assert not belongs_to_other_topic(CommitNote(1, None), "new")  # unknown: trust the offset
    assert not belongs_to_other_topic(CommitNote(1, "old"), None)
