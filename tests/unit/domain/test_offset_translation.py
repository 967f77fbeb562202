"""Offset translation both ways (forward: checkpoints and failover; inverse: failback) over the same cases."""

from __future__ import annotations

import random

import pytest

from replicator.domain.offset_sync import (
    BeforeFirstSync,
    Behind,
    Exact,
    InverseTranslation,
    NotCopied,
    OffsetSync,
    Translation,
    Unknown,
    translate,
    translate_inverse,
)


def sync(source: int, target: int, previous: int | None) -> OffsetSync:
    return OffsetSync("orders", 0, source, target, previous)


E, BEFORE, NOT_COPIED = Exact, BeforeFirstSync, NotCopied()
WORKED = [sync(0, 0, None), sync(5, 3, 2)]  # records 0..2, markers 3 and 4, records 5, 6 -> target 0..4
RERUN = [sync(0, 0, None), sync(5, 3, 2), sync(5, 10, None)]  # a re-run after a crash copied 5.. again at 10
TWICE = [sync(0, 0, None), sync(5, 9, 2), sync(5, 9, None)]  # 5 at 9 reported twice (a writer restarted)

CASES: list[tuple[str, list[OffsetSync], int | None, dict[int, Translation], dict[int, InverseTranslation]]] = [
    # name, syncs, replicated_end, forward (committed source offset -> result), inverse (target position -> result)
    ("worked example: a gap of markers", WORKED, 7,
     {0: E(0), 1: E(1), 2: E(2), 3: E(3), 4: E(3), 5: E(3), 6: E(4), 7: E(5), 8: Behind(5, 1)},
     {0: E(0), 1: E(1), 2: E(2), 3: E(5), 4: E(6), 5: E(7), 6: NOT_COPIED}),
    # Forward counts a run's first record as copied; the inverse places nothing in the last run.
    ("end of the replicated range unknown", WORKED, None,
     {5: E(3), 6: E(4), 7: Behind(4, 1)},
     {2: E(2), 3: NOT_COPIED, 4: NOT_COPIED}),
    ("before the first sync, and the end of the replicated range", [sync(10, 4, None)], 13,
     {3: BEFORE(4), 9: BEFORE(4), 10: E(4), 13: E(7), 14: Behind(7, 1)},
     {0: BEFORE(10), 3: BEFORE(10), 4: E(10), 7: E(13), 8: NOT_COPIED}),
    ("replicated_end lagging behind the last run start", [sync(10, 4, None)], 5,
     {10: E(4), 11: E(5), 12: Behind(5, 1)},
     {4: NOT_COPIED, 5: NOT_COPIED}),
    # Target 2..4 are foreign records: the inverse places nothing on them.
    ("foreign writes on the target between runs", [sync(0, 0, None), sync(2, 5, 1)], 4,
     {1: E(1), 2: E(5), 3: E(6), 4: E(7), 5: Behind(7, 1)},
     {1: E(1), 2: E(2), 3: NOT_COPIED, 4: NOT_COPIED, 5: E(2), 7: E(4), 8: NOT_COPIED}),
    ("a source gap and a foreign write of one size", [sync(0, 0, None), sync(2, 2, 0)], 3,
     {0: E(0), 1: E(2), 2: E(2), 3: E(3)},
     {0: E(0), 1: E(1), 2: E(2), 3: E(3), 4: NOT_COPIED}),
    ("a restarted writer did not say where the run before ended", [sync(0, 0, None), sync(5, 3, None)], 7,
     {2: E(2), 4: E(3), 5: E(3), 6: E(4)},
     {2: E(2), 3: E(5), 5: E(7), 6: NOT_COPIED}),
    ("tie at one source offset: the newer copy (higher target) wins", RERUN, 7,
     {2: E(2), 3: E(3), 5: E(10), 6: E(11), 7: E(12)},
     {2: E(2), 3: E(3), 10: E(5), 12: E(7), 13: NOT_COPIED}),
    ("tie at one source and target offset: the sync that knows the run end wins", TWICE, 7,
     {2: E(2), 3: E(9), 4: E(9), 5: E(9), 6: E(10), 7: E(11)},
     {2: E(2), 3: E(3), 4: NOT_COPIED, 8: NOT_COPIED, 9: E(5), 11: E(7), 12: NOT_COPIED}),
    ("the same tie, read in the other order", TWICE[::-1], 7,
     {3: E(9), 6: E(10)},
     {3: E(3), 4: NOT_COPIED, 9: E(5)}),
    # 0, 2, 4 were copied to 0..2, then a re-run from 0 copied 0 again at 3.
    ("the remains of a superseded copy place nothing",
     [sync(0, 0, None), sync(2, 1, 0), sync(4, 2, 2), sync(0, 3, None)], 1,
     {0: E(3), 1: E(4), 2: Behind(4, 1)},
     {0: BEFORE(0), 2: BEFORE(0), 3: E(0), 4: E(1), 5: NOT_COPIED}),
    ("no sync", [], 5, {0: Unknown(), 5: Unknown()}, {0: Unknown(), 5: Unknown()}),
]
IDS = [c[0] for c in CASES]


@pytest.mark.parametrize(("syncs", "end", "forward"), [(c[1], c[2], c[3]) for c in CASES], ids=IDS)
def test_forward(syncs: list[OffsetSync], end: int | None, forward: dict[int, Translation]) -> None:
    assert {committed: translate(syncs, committed, end) for committed in forward} == forward


@pytest.mark.parametrize(("syncs", "end", "inverse"), [(c[1], c[2], c[4]) for c in CASES], ids=IDS)
def test_inverse(syncs: list[OffsetSync], end: int | None, inverse: dict[int, InverseTranslation]) -> None:
    assert {position: translate_inverse(syncs, position, end) for position in inverse} == inverse


@pytest.mark.parametrize(("syncs", "end"), [(c[1], c[2]) for c in CASES], ids=IDS)
def test_neither_direction_depends_on_order_or_duplicates(syncs: list[OffsetSync], end: int | None) -> None:
    shuffled = syncs * 2
    random.Random(3).shuffle(shuffled)
    for offset in range(16):
        assert translate(shuffled, offset, end) == translate(syncs, offset, end)
        assert translate_inverse(shuffled, offset, end) == translate_inverse(syncs, offset, end)


def test_the_inverse_refuses_several_partitions() -> None:
    with pytest.raises(ValueError, match="several partitions"):
        translate_inverse([sync(0, 0, None), OffsetSync("orders", 1, 0, 0, None)], 0, None)
