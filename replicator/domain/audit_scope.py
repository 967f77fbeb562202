"""Which source records an audit expects on the replica: what the route copied, and what backfills added.

A route that starts at ``latest`` or at a timestamp never copies what its source
held before its first copy; an audit that counted those records as missing would
fail every window until they aged out. They are left out, per partition: source
offsets below the route's first copy (its first offset sync), less the ranges that
finished backfills copied since.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping


def never_copied(first_copy: int | None, backfilled: Iterable[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    """Source offsets ``[start, end)`` below ``first_copy`` that no backfill covered (None: nothing left out)."""
    if first_copy is None or first_copy <= 0:
        return ()
    out, at = [], 0
    for start, end in sorted((max(0, s), min(e, first_copy)) for s, e in backfilled):
        if end <= start:
            continue
        if start > at:
            out.append((at, start))
        at = max(at, end)
    if at < first_copy:
        out.append((at, first_copy))
    return tuple(out)


def left_out(first_copies: Mapping[int, int], backfilled: Mapping[int, Iterable[tuple[int, int]]],
             partitions: int) -> tuple[tuple[int, int, int], ...]:
    """``(partition, start, end)`` of each source range the audit leaves out, in partition order."""
    return tuple((p, start, end) for p in range(partitions)
                 for start, end in never_copied(first_copies.get(p), backfilled.get(p, ())))
