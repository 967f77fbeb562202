"""One state per replicated partition, one vocabulary everywhere: ``status``, ``status --json``, ``/metrics``,
the Replication page.

A partition is in exactly one state; when several hold, the first of this order wins
(what needs an operator first):

- ``FAILED_OVER``: a failover holds the route (its workers do not run);
- ``FAULTED``: its worker stopped at a record it must not ride over (the reason);
- ``PAUSED``: the operator paused its topic (``mirrorflow topics pause``);
- ``STUCK``: its worker found it unfetched while the source had records past it;
- ``LOST_RECORDS``: retention deleted source records before they were copied (the
  ranges): the replica lacks them for good;
- ``CATCHING_UP``: more than ``CAUGHT_UP_LAG`` records behind, or never copied yet;
- ``RECREATED``: its source topic was deleted and created again, and is copied anew;
- ``COPYING``: none of the above.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

CAUGHT_UP_LAG = 1_000  # records: a busy partition is always a few batches behind


class PartitionState(StrEnum):
    """The vocabulary, in the order of precedence."""

    FAILED_OVER = "FAILED_OVER"
    FAULTED = "FAULTED"
    PAUSED = "PAUSED"
    STUCK = "STUCK"
    LOST_RECORDS = "LOST_RECORDS"
    CATCHING_UP = "CATCHING_UP"
    RECREATED = "RECREATED"
    COPYING = "COPYING"


# What a worker records in the state DB (the others are derived from what is there already).
RECORDED = (PartitionState.FAULTED, PartitionState.STUCK)


@dataclass(frozen=True, slots=True)
class Facts:
    """What is known of one partition."""

    lag: int | None = None  # None: not measured
    committed: int | None = None
    failed_over: str | None = None  # the hold, in words
    recorded: tuple[PartitionState, str] | None = None  # FAULTED or STUCK, with its detail, from the worker
    paused: bool = False
    losses: Sequence[tuple[int, int]] = ()  # [from, to) ranges retention deleted before the copy
    recreated: str | None = None


def state_of(facts: Facts) -> tuple[PartitionState, str | None]:
    """The partition's state and its detail (None when the state says it all)."""
    if facts.failed_over:
        return PartitionState.FAILED_OVER, facts.failed_over
    if facts.recorded is not None and facts.recorded[0] == PartitionState.FAULTED:
        return facts.recorded
    if facts.paused:
        return PartitionState.PAUSED, None
    if facts.recorded is not None and facts.recorded[0] == PartitionState.STUCK:
        return facts.recorded
    if facts.losses:
        count = sum(to - start for start, to in facts.losses)
        return PartitionState.LOST_RECORDS, f"{count} at " + " ".join(f"[{a},{b})" for a, b in facts.losses)
    if facts.committed is None or (facts.lag is not None and facts.lag > CAUGHT_UP_LAG):
        return PartitionState.CATCHING_UP, None if facts.committed is not None else "nothing copied yet"
    if facts.recreated:
        return PartitionState.RECREATED, facts.recreated
    return PartitionState.COPYING, None
