"""Checkpoints: a group's committed offsets translated per partition, and their wire format."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replicator.domain.checkpoint import (
    Checkpoint,
    CheckpointStatus,
    checkpoints_of_group,
    decode_checkpoint,
    encode_checkpoint,
)
from replicator.domain.offset_sync import OffsetSync, OffsetSyncWriter, kept_syncs

EXACT, BEHIND = CheckpointStatus.EXACT, CheckpointStatus.BEHIND
BEFORE, UNKNOWN = CheckpointStatus.BEFORE_FIRST_SYNC, CheckpointStatus.UNKNOWN

# The worked example of offset_sync: records at 0, 1, 2, markers at 3, 4, records at
# 5, 6, copied to target 0..4; the route committed 7. Partition 1 starts at source 10
# (the route started later), copied to target 0.. with no gap.
SYNCS = {
    ("orders", 0): [OffsetSync("orders", 0, 0, 0, None), OffsetSync("orders", 0, 5, 3, 2)],
    ("orders", 1): [OffsetSync("orders", 1, 10, 0, None)],
}
ENDS: dict[tuple[str, int], int | None] = {("orders", 0): 7, ("orders", 1): 12}
TARGETS = {"orders": "primary.orders", "payments": "primary.payments"}

CASES = [
    # name, committed, expected (partition, source offset, target offset, status, max repeats)
    ("at a record", {("orders", 0): 2}, [(0, 2, 2, EXACT, 0)]),
    ("on a marker: the next record", {("orders", 0): 3}, [(0, 3, 3, EXACT, 0)]),
    ("after the last copy", {("orders", 0): 7}, [(0, 7, 5, EXACT, 0)]),
    ("ahead of the route", {("orders", 0): 9}, [(0, 9, 5, BEHIND, 2)]),
    ("before the first copied record", {("orders", 1): 4}, [(1, 4, 0, BEFORE, 0)]),
    ("no sync of the partition", {("payments", 0): 4}, [(0, 4, None, UNKNOWN, 0)]),
    ("no committed offset (-1001)", {("orders", 0): -1001}, []),
    ("a topic not on the route", {("audit", 0): 4}, []),
    ("several, sorted", {("orders", 1): 12, ("orders", 0): 0}, [(0, 0, 0, EXACT, 0), (1, 12, 2, EXACT, 0)]),
]


@pytest.mark.parametrize(("committed", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_checkpoints_of_group(committed: dict[tuple[str, int], int],
                              expected: list[tuple[int, int, int | None, CheckpointStatus, int]]) -> None:
    found = checkpoints_of_group("app", committed, SYNCS, ENDS, TARGETS)
    assert [(c.partition, c.source_offset, c.target_offset, c.status, c.max_repeats) for c in found] == expected
    assert all(c.group == "app" and c.target_topic == TARGETS[c.topic] for c in found)


@pytest.mark.parametrize(
    ("checkpoint", "words"),
    [
        (Checkpoint("g", "t", 0, 5, "p.t", 3, EXACT), "exact"),
        (Checkpoint("g", "t", 0, 9, "p.t", 5, BEHIND, 2), "≤2 may repeat"),
        (Checkpoint("g", "t", 0, 1, "p.t", 0, BEFORE), "before first copied record"),
        (Checkpoint("g", "t", 0, 1, "p.t", None, UNKNOWN), "unknown: no offset sync yet"),
    ],
)
def test_describe(checkpoint: Checkpoint, words: str) -> None:
    assert checkpoint.describe() == words
    assert checkpoint.translated == (checkpoint.status != UNKNOWN)


@st.composite
def partition_copies(draw: st.DrawFn) -> tuple[list[int], list[tuple[int, int]], int]:
    """Source records (with gaps), the (source, target) of the first ``copied`` of them, and replicated_end."""
    gaps = draw(st.lists(st.integers(0, 3), min_size=1, max_size=40))
    first = draw(st.integers(0, 5))
    records, offset = [], first
    for gap in gaps:
        records.append(offset)
        offset += 1 + gap
    copied = draw(st.integers(1, len(records)))
    foreign = draw(st.lists(st.integers(0, 2), min_size=copied, max_size=copied))  # target-side extra writes
    pairs, target = [], draw(st.integers(0, 5))
    for source, extra in zip(records[:copied], foreign, strict=True):
        target += extra
        pairs.append((source, target))
        target += 1
    return records, pairs, pairs[-1][0] + 1


@settings(max_examples=150, deadline=None)
@given(st.lists(partition_copies(), min_size=1, max_size=3), st.data())
def test_no_copied_record_is_skipped_and_repeats_are_bounded(
    partitions: list[tuple[list[int], list[tuple[int, int]], int]], data: st.DataObject
) -> None:
    syncs, ends, committed = {}, {}, {}
    for number, (records, pairs, end) in enumerate(partitions):
        writer = OffsetSyncWriter("orders", number)
        syncs[("orders", number)] = kept_syncs(r for r in (writer.observe(*p) for p in pairs) if r is not None)
        ends[("orders", number)] = end
        committed[("orders", number)] = data.draw(st.integers(0, records[-1] + 1))
    for checkpoint in checkpoints_of_group("app", committed, syncs, ends, {"orders": "p.orders"}):
        records, pairs, end = partitions[checkpoint.partition]
        assert checkpoint.target_offset is not None
        unread = [t for s, t in pairs if s >= checkpoint.source_offset]
        read = [t for s, t in pairs if s < checkpoint.source_offset]
        assert all(t >= checkpoint.target_offset for t in unread), "a copied record the group never read is skipped"
        repeated = sum(t >= checkpoint.target_offset for t in read)
        assert repeated == 0, "a copied record the group read is read again"
        if checkpoint.source_offset < pairs[0][0]:
            assert checkpoint.status == BEFORE and checkpoint.target_offset == pairs[0][1]
        elif checkpoint.source_offset <= end:
            assert checkpoint.status == EXACT and checkpoint.max_repeats == 0
        else:  # only what the route has not copied yet may come twice, once it is copied
            assert checkpoint.status == BEHIND and checkpoint.max_repeats == checkpoint.source_offset - end


names = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=20)
offsets = st.integers(0, 2**62)


@given(st.builds(Checkpoint, names, names, st.integers(0, 10_000), offsets, names, offsets,
                 st.sampled_from([EXACT, BEHIND, BEFORE]), offsets), offsets)
def test_encode_decode_round_trip(checkpoint: Checkpoint, at_ms: int) -> None:
    assert decode_checkpoint(*encode_checkpoint(checkpoint, at_ms)) == (checkpoint, at_ms)


def test_one_key_per_group_partition() -> None:
    a = Checkpoint("g", "orders", 0, 5, "p.orders", 3, EXACT)
    later = Checkpoint("g", "orders", 0, 9, "p.orders", 7, EXACT)
    assert encode_checkpoint(a, 1)[0] == encode_checkpoint(later, 2)[0]
    assert encode_checkpoint(a, 1)[0] != encode_checkpoint(Checkpoint("h", "orders", 0, 5, "p.orders", 3, EXACT), 1)[0]


def test_an_untranslated_checkpoint_is_never_encoded() -> None:
    with pytest.raises(ValueError, match="group 'g' orders-0 has no target offset"):
        encode_checkpoint(Checkpoint("g", "orders", 0, 5, "p.orders", None, UNKNOWN), 1)


GOOD_KEY = b'["g","orders",0]'
GOOD = {"target_topic": "p.orders", "source_offset": 5, "target_offset": 3, "status": "exact", "max_repeats": 0,
        "checkpointed_at_ms": 1}


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        (b"\xff", json.dumps(GOOD).encode(), "checkpoint key is not UTF-8 JSON"),
        (b'["g","orders"]', json.dumps(GOOD).encode(), "expected [group, topic, partition]"),
        (b'["","orders",0]', json.dumps(GOOD).encode(), "key group: expected a non-empty string"),
        (b'["g","orders",-1]', json.dumps(GOOD).encode(), "key partition: expected an integer >= 0"),
        (GOOD_KEY, b"[]", "checkpoint value: expected an object"),
        (GOOD_KEY, json.dumps({**GOOD, "status": "unknown"}).encode(), "value status: expected exact"),
        (GOOD_KEY, json.dumps({**GOOD, "target_offset": True}).encode(), "value target_offset"),
        (GOOD_KEY, json.dumps({k: v for k, v in GOOD.items() if k != "checkpointed_at_ms"}).encode(),
         "value checkpointed_at_ms"),
    ],
)
def test_decode_names_what_is_malformed(key: bytes, value: bytes, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("[", r"\[")):
        decode_checkpoint(key, value)
