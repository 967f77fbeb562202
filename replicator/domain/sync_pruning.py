"""Which runs of a partition's offset syncs no translation needs any more, once retention deleted their records.

The syncs topic is compacted with a key per run, so it keeps every run for the route's
life: on an exactly-once route, or from a transactional source, a record per 32
transactions of each busy partition. A run whose records the source no longer has can
go: a group cannot resume inside it (its offset is below the source's log start, where
the group starts over anyway). Tombstones for those keys let compaction drop them.

What may go is decided on the run starts translation itself uses
(:func:`~replicator.domain.offset_sync.run_starts`): the *anchor* is the last of them at
or below the log start. A run goes when every start it stands for lies below the anchor
on both sides: translating any offset at or after the anchor, either way, reads only the
anchor and what follows it, and removing runs that are lower on both sides can neither
drop the anchor nor bring back a start it superseded (proof by property test:
``tests/unit/domain/test_sync_pruning.py``). Groups below the log start then translate
as before the first sync (the anchor's run): on the records the target still has.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence

from replicator.domain.offset_sync import OffsetSync, Run, run_starts


def anchor(runs: Sequence[Run], log_start: int) -> OffsetSync | None:
    """The last run start translation uses at or below ``log_start``; None when it is the first (or none)."""
    starts = run_starts([sync for run in runs for sync in run.syncs()])
    k = bisect.bisect_right([s.source_offset for s in starts], log_start) - 1
    return starts[k] if k > 0 else None


def stale_runs(runs: Sequence[Run], log_start: int) -> list[Run]:
    """Of one partition's runs (the last record of each key), those below the anchor at ``log_start``: no
    translation of a source offset at or after the log start, or of a target position at or after the
    anchor's, reads them."""
    at = anchor(runs, log_start)
    if at is None:
        return []
    return [run for run in runs
            if all(s.source_offset < at.source_offset and s.target_offset < at.target_offset for s in run.syncs())]
