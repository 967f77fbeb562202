"""Pruning offset syncs below the source's log start changes no translation at or after it."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from replicator.domain.offset_sync import (
    MAX_STEPS,
    OffsetSyncWriter,
    Run,
    kept_syncs,
    latest_runs,
    translate,
    translate_inverse,
)
from replicator.domain.sync_pruning import anchor, stale_runs

Pair = tuple[int, int]


def written(sessions: list[list[Pair]]) -> list[Run]:
    """The records of the syncs topic after one writer per session (a restart, or a re-copy after a crash)."""
    out: list[Run] = []
    for pairs in sessions:
        writer = OffsetSyncWriter("orders", 0)
        out += [r for r in (writer.observe(*p) for p in pairs) if r is not None]
    return latest_runs(out)


def test_the_runs_of_records_retention_deleted_go_and_the_run_at_the_log_start_stays() -> None:
    # An exactly-once route: a marker after every 2 records, 3 runs of MAX_STEPS steps and a short one.
    pairs = [(n, n + n // 2) for n in range(2 * (MAX_STEPS + 1) * 3 + 10)]
    runs = written([pairs])
    assert len(runs) == 4
    first_of_third = runs[2].start.source_offset
    assert stale_runs(runs, first_of_third - 1) == runs[:1]  # the second run holds the log start
    assert stale_runs(runs, first_of_third) == runs[:2]
    assert stale_runs(runs, 0) == [] and stale_runs(runs[:1], 10**6) == []  # the last run always stays


def test_a_newer_copy_of_old_records_keeps_what_it_supersedes_from_coming_back() -> None:
    """A re-run resumed from 0 after a crash copied 0.. again further on; pruning the older copy's run must
    not let it replace the newer one (the translator drops starts below a newer copy)."""
    old = [(n, n) for n in range(10)]
    again = [(n, 20 + n) for n in range(30)]
    runs = written([old, again])
    pruned = [r for r in runs if r not in stale_runs(runs, 15)]
    for committed in range(15, 31):
        assert translate(kept_syncs(pruned), committed, 30) == translate(kept_syncs(runs), committed, 30)


@st.composite
def sessions(draw: st.DrawFn) -> tuple[list[list[Pair]], int]:
    """Copies of one source partition: each session resumes at some record already copied (or the next one)
    and copies on, further on the target; records with gaps on both sides (markers, foreign writes)."""
    source, target, records = 0, 0, []
    for _ in range(draw(st.integers(1, 60))):
        source += 1 + draw(st.sampled_from([0, 0, 0, 1, 2]))
        records.append(source)
    out, at, position = [], 0, 0
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, min(at + 5, len(records) - 1)))
        copy = []
        for offset in records[at:draw(st.integers(at + 1, len(records)))]:
            target = position + draw(st.sampled_from([0, 0, 0, 1, 2]))
            copy.append((offset, target))
            position = target + 1
        out.append(copy)
        at += len(copy)
        at = min(at, len(records) - 1)
    return out, records[-1]


@settings(max_examples=300, deadline=None)
@given(sessions(), st.data())
def test_pruning_changes_no_translation_at_or_after_the_log_start(
    copies: tuple[list[list[Pair]], int], data: st.DataObject
) -> None:
    sessions_, last = copies
    runs = written(sessions_)
    log_start = data.draw(st.integers(0, last + 2))
    stale = stale_runs(runs, log_start)
    kept = [r for r in runs if r not in stale]
    before, after = kept_syncs(runs), kept_syncs(kept)
    end = data.draw(st.one_of(st.none(), st.integers(0, last + 2)))
    for committed in range(log_start, last + 4):
        assert translate(after, committed, end) == translate(before, committed, end), committed
    at = anchor(runs, log_start)
    if at is None:
        assert stale == []
        return
    assert all(s.source_offset < at.source_offset for r in stale for s in r.syncs())
    for position in range(at.target_offset, max(s.target_offset for s in before) + 4):
        assert translate_inverse(after, position, end) == translate_inverse(before, position, end), position
