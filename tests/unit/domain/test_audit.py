"""The audit's comparison logic: digests, buckets, and the verdict on generated replicas."""

from __future__ import annotations

import hashlib
from collections import Counter
from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replicator.domain.audit import (
    BucketKey,
    BucketResult,
    BucketTotals,
    Mark,
    Status,
    Totals,
    audit_partition,
    bucket_of,
    compare_bucket,
    digest_groups,
    digest_text,
    parse_bucket,
    record_digest,
    settle_by_totals,
)
from replicator.domain.offset_ranges import OffsetRange, format_ranges, parse_ranges, to_ranges

BUCKET = 1_000


def _offsets(ranges: tuple[OffsetRange, ...]) -> list[int]:
    return [o for r in ranges for o in range(r.first, r.last + 1)]


def _sha(name: str) -> str:
    return hashlib.sha256(name.encode()).hexdigest()


def _marks(names: list[str], base: int = 0, ts: int = 5_000) -> list[Mark]:
    """Records named by their content (same name, same digest) at consecutive offsets."""
    return [Mark(base + i, _sha(name), ts) for i, name in enumerate(names)]


@pytest.mark.parametrize(("text", "ms"), [("1m", 60_000), ("30s", 30_000), ("5m", 300_000), ("1h", 3_600_000),
                                          ("2d", 172_800_000), (" 10s ", 10_000)])
def test_bucket_sizes(text: str, ms: int) -> None:
    assert parse_bucket(text) == ms


@pytest.mark.parametrize("text", ["", "0m", "1", "m", "1w", "1.5m", "-1m", "1 m"])
def test_bad_bucket_names_the_text(text: str) -> None:
    with pytest.raises(ValueError, match="bucket"):
        parse_bucket(text)


def test_buckets_are_epoch_aligned_also_before_1970() -> None:
    assert [bucket_of(t, 60_000) for t in (0, 59_999, 60_000, 125_000, -1)] == [0, 0, 60_000, 120_000, -60_000]


def test_digest_text_format_is_frozen() -> None:
    # The Spark job builds this very text with Spark functions: changing it breaks stored audits.
    text = digest_text(b"k\x00", None, [("h", b"\xff"), ("n", None)], 1_700_000_000_123)
    assert text == "k=6B00;v=~;h=68:FF,6E:~;t=1700000000123"
    assert record_digest(b"k\x00", None, [("h", b"\xff"), ("n", None)], 1_700_000_000_123) == \
        hashlib.sha256(text.encode()).hexdigest()


@pytest.mark.parametrize(("a", "b"), [
    ((None, b"v", [], 1), (b"", b"v", [], 1)),  # null key vs empty key
    ((b"k", None, [], 1), (b"k", b"", [], 1)),  # tombstone vs empty value
    ((b"k", b"v", [("a", b"1"), ("b", b"2")], 1), (b"k", b"v", [("b", b"2"), ("a", b"1")], 1)),  # order
    ((b"k", b"v", [("a", None)], 1), (b"k", b"v", [("a", b"")], 1)),  # null header value
    ((b"k", b"v", [("a", b"")], 1), (b"k", b"v", [], 1)),  # a header vs none
    ((b"k", b"v", [], 1), (b"k", b"v", [], 2)),  # timestamp
    ((b"ab", b"c", [], 1), (b"a", b"bc", [], 1)),  # field boundaries
    ((b"k", b"v", [("a:b", b"")], 1), (b"k", b"v", [("a", b"b")], 1)),
])
def test_digest_tells_records_apart(a: tuple, b: tuple) -> None:  # type: ignore[type-arg]
    assert record_digest(*a) != record_digest(*b)


def test_a_clean_replica_with_a_pending_tail_settles_by_totals() -> None:
    source = _marks(["a", "b", "c", "d"])
    key = BucketKey("t", 0, 5_000)
    copied_all = _marks(["a", "b", "c", "d"], base=40)
    [all_copied] = audit_partition("t", 0, source, copied_all, committed=2, bucket_ms=BUCKET)
    [half_copied] = audit_partition("t", 0, source, copied_all[:2], committed=2, bucket_ms=BUCKET)
    assert all_copied == BucketResult(key, 4, 4, 0)
    assert (half_copied.status, half_copied.pending, half_copied.target_count) == (Status.CLEAN, 2, 2)


def test_missing_duplicated_and_extra_records_are_named_by_offset() -> None:
    source = _marks(["a", "b", "c", "d", "e"], base=100)  # offsets 100..104, committed up to 104
    target = _marks(["old", "a", "c", "c", "d", "x", "e"], base=7)  # lost b, c twice, foreign "old" and "x"
    [result] = audit_partition("t", 0, source, target, committed=104, bucket_ms=BUCKET)
    assert result.status == Status.MISSING
    assert (_offsets(result.missing), _offsets(result.duplicated), _offsets(result.extra)) == ([101], [102], [7, 12])
    assert (result.missing_count, result.duplicate_count, result.extra_count, result.pending) == (1, 1, 2, 0)
    assert (result.source_count, result.target_count) == (5, 7)


@pytest.mark.parametrize("committed", [None, 0, 2, 3])
def test_a_lost_record_replaced_by_a_foreign_one_is_found_despite_equal_counts(committed: int | None) -> None:
    [result] = audit_partition("t", 0, _marks(["a", "b", "c"]), _marks(["a", "x", "c"], base=3), committed, BUCKET)
    assert (result.source_count, result.target_count, _offsets(result.extra)) == (3, 3, [4])
    lost = [1] if committed is not None and committed > 1 else []
    assert _offsets(result.missing) == lost and result.pending == 1 - len(lost)


def test_a_missing_record_in_the_unreplicated_tail_is_pending_not_lost() -> None:
    source = _marks(["a", "b", "c"])
    [result] = audit_partition("t", 0, source, _marks(["a", "c"], base=9), committed=1, bucket_ms=BUCKET)
    assert (result.status, result.pending, result.missing_count) == (Status.CLEAN, 1, 0)
    [nothing_committed] = audit_partition("t", 0, source, [], committed=None, bucket_ms=BUCKET)
    assert (nothing_committed.status, nothing_committed.pending) == (Status.CLEAN, 3)


def test_statuses_rank_missing_over_extra_over_duplicates() -> None:
    only_dup = audit_partition("t", 0, _marks(["a"]), _marks(["a", "a"]), 1, BUCKET)[0]
    dup_and_extra = audit_partition("t", 0, _marks(["a"]), _marks(["a", "a", "z"]), 1, BUCKET)[0]
    assert (only_dup.status, dup_and_extra.status) == (Status.DUPLICATES, Status.EXTRA)


def test_identical_source_records_count_exactly() -> None:
    # Two byte-identical records (same digest): one copy short falls on the later offset.
    [result] = audit_partition("t", 0, _marks(["a", "a", "b"]), _marks(["a", "b"]), committed=3, bucket_ms=BUCKET)
    assert _offsets(result.missing) == [1] and result.duplicate_count == 0


def test_buckets_split_by_timestamp() -> None:
    source = [Mark(0, "a", 1_100), Mark(1, "b", 1_900), Mark(2, "c", 2_000)]
    results = audit_partition("t", 3, source, [Mark(0, "a", 1_100), Mark(1, "c", 2_000)], 3, BUCKET)
    assert [(r.key.start_ms, r.status, _offsets(r.missing)) for r in results] == [
        (1_000, Status.MISSING, [1]), (2_000, Status.CLEAN, [])]


@st.composite
def replicas(draw: st.DrawFn) -> tuple[list[Mark], list[Mark], int | None, dict[str, object]]:
    """A source partition of distinct records and the replica a route (and accidents) made of it."""
    n = draw(st.integers(0, 40))
    ts, source = 10_000, []
    for i in range(n):
        ts += draw(st.integers(0, 700))
        source.append(Mark(500 + i, _sha(f"record-{i}"), ts))
    committed = draw(st.none() | st.integers(0, n))
    done = 0 if committed is None else committed  # the route committed up to here ...
    copied = done + draw(st.integers(0, n - done))  # ... and copied a little further
    deleted = draw(st.sets(st.integers(0, max(copied - 1, 0)), max_size=5)) if copied else set()
    replay = sorted(draw(st.tuples(st.integers(0, copied), st.integers(0, copied)))) if copied else [0, 0]
    if committed is None:
        copied, deleted, replay = 0, set(), [0, 0]  # nothing committed: the route never copied
    sequence = [i for i in range(copied) if i not in deleted] + list(range(*replay))
    foreign = draw(st.lists(st.tuples(st.integers(0, len(sequence)), st.integers(10_000, ts + 1)), max_size=4))
    target = [source[i] for i in sequence]
    for j, (where, stamp) in enumerate(sorted(foreign, reverse=True)):
        target.insert(where, Mark(-1, _sha(f"foreign-{j}"), stamp))  # written to the replica by someone else
    base = draw(st.integers(0, 1_000))
    marks = [Mark(base + pos, m.digest, m.timestamp_ms) for pos, m in enumerate(target)]
    copies = Counter(i for i in sequence)
    expected = {
        "missing": sorted(500 + i for i in range(done) if copies[i] == 0),
        "pending": sum(1 for i in range(done, n) if copies[i] == 0),
        "duplicated": sorted(500 + i for i, c in copies.items() if c > 1),
        "duplicate_count": sum(c - 1 for c in copies.values() if c > 1),
        "extra": sorted(m.offset for m in marks if m.digest not in {r.digest for r in source}),
    }
    return source, marks, None if committed is None else 500 + committed, expected


@settings(max_examples=300, deadline=None)
@given(replicas())
def test_generated_replicas_are_judged_exactly(case: tuple[list[Mark], list[Mark], int | None, dict]) -> None:  # type: ignore[type-arg]
    source, target, committed, expected = case
    results = audit_partition("t", 0, source, target, committed, BUCKET)
    assert sorted(o for r in results for o in _offsets(r.missing)) == expected["missing"]
    assert sorted(o for r in results for o in _offsets(r.duplicated)) == expected["duplicated"]
    assert sorted(o for r in results for o in _offsets(r.extra)) == expected["extra"]
    assert sum(r.pending for r in results) == expected["pending"]
    assert sum(r.duplicate_count for r in results) == expected["duplicate_count"]
    assert sum(r.source_count for r in results) == len(source)
    assert sum(r.target_count for r in results) == len(target)
    lost = any(r.status == Status.MISSING for r in results)
    assert lost == bool(expected["missing"])


def _any_marks(digests: str) -> st.SearchStrategy[list[Mark]]:
    return st.lists(st.tuples(st.sampled_from(digests), st.integers(0, 2_999)), max_size=25).map(
        lambda items: [Mark(i, d * 16, t - t % 500) for i, (d, t) in enumerate(items)])


@settings(max_examples=300, deadline=None)
@given(_any_marks("abc"), _any_marks("abcd"), st.none() | st.integers(0, 25))
def test_any_input_keeps_the_books_balanced(source: list[Mark], target: list[Mark], committed: int | None) -> None:
    # Identical records, foreign ones, anything: every target record is a match, a surplus copy
    # or an extra, and every source record is matched, missing or pending.
    for result in audit_partition("t", 0, source, target, committed, BUCKET):
        matched = result.source_count - result.missing_count - result.pending
        assert result.target_count == matched + result.duplicate_count + result.extra_count
        assert all(r.last < committed for r in result.missing) if committed is not None else not result.missing
        assert sum(r.size for r in result.missing) == result.missing_count
        assert sum(r.size for r in result.extra) == result.extra_count


@settings(max_examples=300, deadline=None)
@given(_any_marks("ab"), _any_marks("ab"), st.none() | st.integers(0, 25))
def test_totals_shortcut_agrees_with_the_digest_comparison(source: list[Mark], target: list[Mark],
                                                           committed: int | None) -> None:
    pending = [m for m in source if committed is None or m.offset >= committed]
    totals = BucketTotals(BucketKey("t", 0, 0), Totals.of(m.digest for m in source if m not in pending),
                          Totals.of(m.digest for m in pending), Totals.of(m.digest for m in target))
    shortcut = settle_by_totals(totals)
    full = compare_bucket(totals, digest_groups(source, target), committed)
    if shortcut is not None:
        assert shortcut == full
    # Groups with equal counts on both sides change nothing: the Spark job leaves them out.
    unequal = [g for g in digest_groups(source, target) if len(g.source_offsets) != len(g.target_offsets)]
    assert compare_bucket(totals, unequal, committed) == full


@given(st.sets(st.integers(0, 200)))
def test_offset_ranges_round_trip(offsets: set[int]) -> None:
    ranges = to_ranges(offsets)
    assert {o for r in ranges for o in range(r.first, r.last + 1)} == offsets
    assert all(b.first > a.last + 1 for a, b in pairwise(ranges))  # fewest ranges
    assert parse_ranges(format_ranges(ranges)) == ranges


def test_offset_ranges_text() -> None:
    ranges = to_ranges([5, 6, 7, 9, 12, 13])
    assert format_ranges(ranges) == "5-7,9,12-13"
    assert format_ranges(ranges, limit=2) == "5-7,9,..."
    assert parse_ranges("5-7,9,...") == ranges[:2]
    with pytest.raises(ValueError, match="'x'"):
        parse_ranges("1,x")
