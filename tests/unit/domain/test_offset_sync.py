"""Offset syncs: the writer's runs, their translation, and their wire format."""

from __future__ import annotations

import random
from collections.abc import Sequence
from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replicator.domain.offset_sync import (
    MAX_STEPS,
    BeforeFirstSync,
    Behind,
    Exact,
    OffsetSync,
    OffsetSyncWriter,
    Run,
    Translation,
    Unknown,
    decode_sync,
    encode_sync,
    kept_syncs,
    translate,
)

Pair = tuple[int, int]  # (source offset, target offset) of one replicated record


def sync(source: int, target: int, previous: int | None) -> OffsetSync:
    return OffsetSync("orders", 0, source, target, previous)


def runs(pairs: Sequence[Pair]) -> list[Run]:
    """The records one fresh writer emits for ``pairs``, in order."""
    writer = OffsetSyncWriter("orders", 0)
    return [r for r in (writer.observe(*pair) for pair in pairs) if r is not None]


def write(pairs: Sequence[Pair]) -> list[OffsetSync]:
    """The run starts a reader of one fresh writer's records for ``pairs`` keeps."""
    return kept_syncs(runs(pairs))


# Records at 0, 1, 2; transaction markers at 3, 4; records at 5, 6 -> target 0..4.
WORKED = [(0, 0), (1, 1), (2, 2), (5, 3), (6, 4)]
WORKED_SYNCS = [sync(0, 0, None), sync(5, 3, 2)]

WRITER_CASES = [
    # name, pairs, syncs emitted
    ("worked example", WORKED, WORKED_SYNCS),
    ("one run", [(7, 3), (8, 4), (9, 5)], [sync(7, 3, None)]),
    ("no records", [], []),
    # Something else wrote to the target between two replicated records.
    (
        "target-side extra writes",
        [(0, 0), (1, 1), (2, 5), (3, 6)],
        [sync(0, 0, None), sync(2, 5, 1)],
    ),
    # The delta stays 0, but source 1 is a gap and target 1 a foreign record.
    ("gap and extra write of one size", [(0, 0), (2, 2)], [sync(0, 0, None), sync(2, 2, 0)]),
]


@pytest.mark.parametrize(
    ("pairs", "expected"), [c[1:] for c in WRITER_CASES], ids=[c[0] for c in WRITER_CASES]
)
def test_writer_emits_one_sync_per_run(pairs: list[Pair], expected: list[OffsetSync]) -> None:
    assert write(pairs) == expected


def test_a_restarted_writer_emits_for_its_first_record() -> None:
    before, after = write(WORKED[:4]), write(WORKED[3:])
    assert after == [sync(5, 3, None)]  # the same run start, re-emitted, its start unknown
    assert translate(before + after, 6, 7) == translate(WORKED_SYNCS, 6, 7) == Exact(4)


WORKED_TRANSLATIONS = [
    # committed, replicated_end, result
    (0, 7, Exact(0)),  # at the first run start
    (1, 7, Exact(1)),
    (2, 7, Exact(2)),  # at the end of the first run
    (3, 7, Exact(3)),  # in the gap: the next record is 5, at 3
    (4, 7, Exact(3)),
    (5, 7, Exact(3)),  # at the second run start
    (6, 7, Exact(4)),
    (7, 7, Exact(5)),  # right after the last replicated record
    (8, 7, Behind(5, 1)),  # 7 not replicated yet: it may come twice
    (12, 7, Behind(5, 5)),
    (6, None, Exact(4)),  # without replicated_end only a run's first record is sure
    (7, None, Behind(4, 1)),
    (8, 6, Behind(4, 2)),  # only 5 is known replicated: 6 and 7 may come twice
    (6, 3, Exact(4)),  # replicated_end lagging behind the syncs: the syncs still hold
]


@pytest.mark.parametrize(("committed", "end", "expected"), WORKED_TRANSLATIONS)
def test_translate_worked_example(committed: int, end: int | None, expected: Translation) -> None:
    assert translate(WORKED_SYNCS, committed, end) == expected


EDGE_CASES = [
    # syncs, committed, replicated_end, result
    ([], 5, 10, Unknown()),
    ([sync(10, 4, None)], 3, 20, BeforeFirstSync(4)),
    ([sync(10, 4, None)], 10, 20, Exact(4)),
    ([sync(10, 4, None)], 20, 20, Exact(14)),
    ([sync(10, 4, None)], 21, 20, Behind(14, 1)),
    ([sync(10, 4, None)], 11, 5, Exact(5)),  # replicated_end before the last run start
    # Extra target writes between runs: a group in the gap resumes at the next record.
    ([sync(0, 0, None), sync(2, 5, 1)], 2, 4, Exact(5)),
    ([sync(0, 0, None), sync(2, 5, 1)], 1, 4, Exact(1)),
    # A writer restarted at 5 did not say where the run before it ended.
    ([sync(0, 0, None), sync(5, 3, None)], 2, 7, Exact(2)),
    ([sync(0, 0, None), sync(5, 3, None)], 4, 7, Exact(3)),
    ([sync(0, 0, None), sync(5, 9, None)], 4, 7, Exact(4)),
]


@pytest.mark.parametrize(("syncs", "committed", "end", "expected"), EDGE_CASES)
def test_translate_edge_cases(
    syncs: list[OffsetSync], committed: int, end: int | None, expected: Translation
) -> None:
    assert translate(syncs, committed, end) == expected


def test_translate_ignores_order_and_duplicates() -> None:
    syncs = WORKED_SYNCS * 3
    random.Random(7).shuffle(syncs)
    for committed in range(12):
        assert translate(syncs, committed, 7) == translate(WORKED_SYNCS, committed, 7)


def test_translate_prefers_the_newest_copy_of_a_run_start() -> None:
    # A crash re-ran 5..: the copy at target 10 is the newer one.
    assert translate([sync(0, 0, None), sync(5, 10, None), sync(5, 3, 2)], 6, 7) == Exact(11)


def test_translate_drops_the_remains_of_a_superseded_copy() -> None:
    # 0, 2, 4 were copied to 0..2, then a re-run from 0 copied 0 again at 3: the
    # starts at 2 and 4 lie below it on the target and no longer place anything.
    syncs = [sync(0, 0, None), sync(2, 1, 0), sync(4, 2, 2), sync(0, 3, None)]
    assert translate(syncs, 2, 1) == Behind(4, 1)


def test_translate_refuses_several_partitions() -> None:
    with pytest.raises(ValueError, match="several partitions"):
        translate([sync(0, 0, None), OffsetSync("orders", 1, 0, 0, None)], 0, None)


@pytest.mark.parametrize(
    "value",
    [
        Run(sync(0, 0, None)),
        Run(sync(5, 3, 2)),
        Run(OffsetSync("a.b-c_d", 17, 2**40, 2**41, 2**40 - 1)),
        Run(sync(5, 3, 2), ((4, 0, 1), (1, 2, 0), (2**40, 3, 7), (9, 0, 1))),
    ],
)
def test_encode_decode_round_trip(value: Run) -> None:
    key, payload = encode_sync(value)
    assert decode_sync(key, payload) == value


def test_a_marker_step_is_written_as_its_record_count() -> None:
    _, payload = encode_sync(Run(sync(5, 3, 2), ((4, 0, 1), (1, 2, 0))))
    assert payload == b'{"target_offset":3,"previous_source_offset":2,"steps":[4,[1,2,0]]}'


def test_the_key_is_one_per_run_start() -> None:
    keys = {encode_sync(Run(s))[0] for s in [sync(5, 3, 2), sync(5, 10, None), sync(5, 3, None)]}
    keys.add(encode_sync(Run(sync(5, 3, 2), ((1, 0, 1),)))[0])
    assert len(keys) == 1  # a re-emitted or grown run replaces the old record under compaction
    others = [sync(6, 3, 2), OffsetSync("orders", 1, 5, 3, 2), OffsetSync("other", 0, 5, 3, 2)]
    assert len({encode_sync(Run(s))[0] for s in [sync(5, 3, 2), *others]}) == 4


# An exactly-once route: 3 transactions of 2, 3 and 1 records, a commit marker after each.
TRANSACTIONS = [(10, 0), (11, 1), (12, 3), (13, 4), (14, 5), (15, 7)]


def test_a_transaction_marker_is_a_step_of_the_run_not_a_new_one() -> None:
    emitted = runs(TRANSACTIONS)
    # Each transaction writes the sync of its own records: the run, grown by one step.
    assert emitted == [Run(sync(10, 0, None)), Run(sync(10, 0, None), ((2, 0, 1),)),
                       Run(sync(10, 0, None), ((2, 0, 1), (3, 0, 1)))]
    assert len({encode_sync(r)[0] for r in emitted}) == 1  # compaction keeps one record
    assert kept_syncs(emitted) == [sync(10, 0, None), sync(12, 3, 11), sync(15, 7, 14)]
    for committed, target in [(10, 0), (11, 1), (12, 3), (14, 5), (15, 7), (16, 8)]:
        assert translate(write(TRANSACTIONS), committed, 16) == Exact(target)


def test_a_run_takes_at_most_max_steps_then_a_new_one_starts() -> None:
    pairs = [(n, 2 * n) for n in range(MAX_STEPS + 3)]  # a marker after every record
    emitted = runs(pairs)
    assert [len(r.steps) for r in emitted] == [*range(MAX_STEPS + 1), 0, 1]
    assert emitted[-1].start == sync(MAX_STEPS + 1, 2 * MAX_STEPS + 2, MAX_STEPS)
    assert write(pairs) == [sync(n, 2 * n, None if n == 0 else n - 1) for n in range(MAX_STEPS + 3)]


def test_a_reader_keeps_the_last_record_of_each_run() -> None:
    grown = runs(TRANSACTIONS)
    # Read in log order, every version of the run: the last one is what compaction keeps.
    assert sorted(kept_syncs(grown), key=lambda s: s.source_offset) == kept_syncs(grown[-1:])
    assert kept_syncs(grown[:2]) == [sync(10, 0, None), sync(12, 3, 11)]  # a crash lost the third


GOOD_KEY, GOOD_VALUE = encode_sync(Run(sync(5, 3, 2)))
MALFORMED = [
    # key, value, what the error names
    (b"\xff", GOOD_VALUE, "key is not UTF-8 JSON"),
    (b"[", GOOD_VALUE, "key is not UTF-8 JSON"),
    (b'{"topic":"orders"}', GOOD_VALUE, r"expected \[topic, partition, source_offset\]"),
    (b'["orders",0]', GOOD_VALUE, r"expected \[topic, partition, source_offset\]"),
    (b'["",0,5]', GOOD_VALUE, "topic must be a non-empty string"),
    (b"[7,0,5]", GOOD_VALUE, "topic must be a non-empty string"),
    (b'["orders",-1,5]', GOOD_VALUE, "key partition"),
    (b'["orders",0,"5"]', GOOD_VALUE, "key source_offset"),
    (b'["orders",true,5]', GOOD_VALUE, "key partition"),
    (GOOD_KEY, b"nope", "value is not UTF-8 JSON"),
    (GOOD_KEY, b"[3,2]", "value: expected an object"),
    (GOOD_KEY, b"{}", "value target_offset"),
    (GOOD_KEY, b'{"target_offset":1.5}', "value target_offset"),
    (GOOD_KEY, b'{"target_offset":3,"previous_source_offset":"2"}', "previous_source_offset"),
    (GOOD_KEY, b'{"target_offset":3,"steps":4}', "steps: expected a list"),
    (GOOD_KEY, b'{"target_offset":3,"steps":["4"]}', "steps: expected records or"),
    (GOOD_KEY, b'{"target_offset":3,"steps":[[4,0]]}', "steps: expected records or"),
    (GOOD_KEY, b'{"target_offset":3,"steps":[true]}', "steps: expected records or"),
    (GOOD_KEY, b'{"target_offset":3,"steps":[-1]}', "steps: expected an integer"),
    (GOOD_KEY, b'{"target_offset":3,"steps":[0]}', "at least one record"),
    (GOOD_KEY, b'{"target_offset":3,"steps":[[2,0,0]]}', "skips something"),
]


@pytest.mark.parametrize(("key", "value", "message"), MALFORMED)
def test_decode_names_what_is_malformed(key: bytes, value: bytes, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        decode_sync(key, value)


# ---- properties: a random source partition, foreign writes on the target ----------

STEP = st.sampled_from([0, 0, 0, 0, 1, 2, 5])  # mostly contiguous, some gaps


@st.composite
def copied_partitions(draw: st.DrawFn) -> tuple[list[Pair], list[int]]:
    """All source records as (source, target) pairs if copied in order, and how many are."""
    source, target = draw(st.integers(0, 3)) - 1, draw(st.integers(0, 3)) - 1
    pairs = []
    for gap, foreign in draw(st.lists(st.tuples(STEP, STEP), max_size=40)):
        source, target = source + 1 + gap, target + 1 + foreign
        pairs.append((source, target))
    cuts = sorted(draw(st.lists(st.integers(0, len(pairs)), min_size=1, max_size=4)))
    return pairs, cuts


def committed_range(pairs: list[Pair]) -> range:
    return range((pairs[-1][0] if pairs else 0) + 4)


def oracle(copied: list[Pair], committed: int) -> int | None:
    """Target offset of the first copied record at or after ``committed``, if it is known."""
    for source, target in copied:
        if source >= committed:
            return target
    last_source, last_target = copied[-1]
    return last_target + 1 if committed == last_source + 1 else None


def repeats(pairs: list[Pair], copied: list[Pair], committed: int, resume: int) -> int:
    """Records before ``committed`` a group resuming at ``resume`` gets again (now or later)."""
    again = sum(1 for s, t in copied if s < committed and t >= resume)
    return again + sum(1 for s, _ in pairs[len(copied) :] if s < committed)


@settings(max_examples=200, deadline=None)
@given(copied_partitions(), st.booleans())
def test_translation_matches_a_brute_force_oracle(
    partition: tuple[list[Pair], list[int]], end_known: bool
) -> None:
    pairs, cuts = partition
    copied = pairs[: cuts[0]]
    syncs = write(copied)
    breaks = [i for i, (s, t) in enumerate(copied) if i == 0 or (s - 1, t - 1) != copied[i - 1]]
    assert [(x.source_offset, x.target_offset) for x in syncs] == [copied[i] for i in breaks]
    if not copied:
        assert translate(syncs, 0, None) == Unknown()
        return
    end = copied[-1][0] + 1 if end_known else None
    for committed in committed_range(pairs):
        result = translate(syncs, committed, end)
        expected = oracle(copied, committed)
        if committed < copied[0][0]:
            assert result == BeforeFirstSync(copied[0][1])
        elif isinstance(result, Exact):
            assert result.target_offset == expected
        else:
            assert isinstance(result, Behind), result
            assert expected is None or result.target_offset <= expected  # never skips
            assert result.target_offset <= copied[-1][1] + 1
            assert repeats(pairs, copied, committed, result.target_offset) <= result.max_repeats
            # Behind only where the syncs cannot know better.
            assert committed > (copied[-1][0] if end_known else syncs[-1].source_offset) + 1


@settings(max_examples=200, deadline=None)
@given(copied_partitions(), st.randoms(use_true_random=False))
def test_restarted_writers_still_translate_exactly(
    partition: tuple[list[Pair], list[int]], rng: random.Random
) -> None:
    pairs, cuts = partition
    copied = pairs[: cuts[-1]]
    bounds = [0, *cuts[:-1], cuts[-1]]
    syncs = [s for a, b in pairwise(bounds) for s in write(copied[a:b])]
    syncs += rng.sample(syncs, len(syncs) // 2)  # re-delivered syncs
    rng.shuffle(syncs)
    if not copied:
        return
    end = copied[-1][0] + 1
    for committed in range(copied[0][0], end + 1):
        result = translate(syncs, committed, end)
        assert isinstance(result, Exact), (committed, result)
        upper = oracle(copied, committed)
        lower = max((t for s, t in copied if s < committed), default=-1)
        assert upper is not None and lower < result.target_offset <= upper  # no repeat, no skip


@settings(max_examples=200, deadline=None)
@given(copied_partitions(), st.data())
def test_a_crash_replay_never_makes_translation_skip(
    partition: tuple[list[Pair], list[int]], data: st.DataObject
) -> None:
    pairs, _ = partition
    # A first worker copied pairs[:crash] but the route had committed only after
    # pairs[:resume]; the next worker copies pairs[resume:now] again, further on the
    # target. The first worker's syncs past the commit may be lost, as a tail: they
    # are produced in order to one partition of the syncs topic.
    crash = data.draw(st.integers(0, len(pairs)))
    resume = data.draw(st.integers(0, crash))
    now = data.draw(st.integers(resume, len(pairs)))
    first = pairs[:crash]
    base = (first[-1][1] + 1 + data.draw(STEP)) if first else 0
    shift = base - pairs[resume][1] if resume < now else 0
    again = [(s, t + shift) for s, t in pairs[resume:now]]
    first_runs = runs(first)
    durable = sum(1 for x in first_runs if resume and x.last.source_offset <= pairs[resume - 1][0])
    kept = data.draw(st.integers(durable, len(first_runs)))
    syncs = kept_syncs(first_runs[:kept]) + write(again)
    if not syncs:
        return
    copies: dict[int, list[int]] = {}
    for s, t in first + again:
        copies.setdefault(s, []).append(t)
    highest = max(t for s, t in first + again)
    end = again[-1][0] + 1 if again else (pairs[resume - 1][0] + 1 if resume else None)
    for committed in committed_range(pairs):
        result = translate(syncs, committed, end)
        assert not isinstance(result, Unknown)
        resume_at = result.target_offset
        for index, (s, _) in enumerate(pairs):
            if s >= committed and max(copies.get(s, [-1])) < resume_at:
                # Only records still to be copied may sit "before" the resume point:
                # they will land after everything on the target.
                assert index >= now and resume_at <= highest + 1, (committed, result, s)
