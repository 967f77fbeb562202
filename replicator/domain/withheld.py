"""Partitions the group gave a worker that its consumer never handed over.

Under KIP-848 the coordinator computes each member's target assignment, and the member's client takes it up
and acknowledges it; until it does, the coordinator keeps the partition for that member. The fault harness
(seed 26) saw one partition of a topic created minutes before copied by no one for 4.5 minutes after a worker
left, with no error anywhere: the coordinator kept it for a member whose client never handed it to the worker,
until that worker happened to rejoin. Why the client did not take it up is not known (a topic id librdkafka
did not resolve is one reading; in later runs with its debug logs on, it resolved every new topic's id within
a second). A partition still owned by another member is on its way (that member revokes it first) and is not
counted.

A worker that finds such partitions for ``after`` seconds joins anew with a new consumer (the same remedy as
for a consumer that stopped getting answers), whatever the cause. Pure: the caller passes the clock and what
the group and the client said."""

from __future__ import annotations

from collections.abc import Collection

from replicator.domain.checkpoint import Partition

AFTER_S = 30.0  # withheld this long: a new consumer (a partition on its way from another member is not withheld)


class WithheldWatch:
    """Since when each withheld partition has been seen withheld."""

    def __init__(self, after: float) -> None:
        self.after = after
        self._since: dict[Partition, float] = {}

    def observe(self, given: Collection[Partition], held_by_others: Collection[Partition],
                handed_over: Collection[Partition], now: float) -> list[Partition]:
        """The partitions withheld for ``after`` s or more as of this look (sorted; empty: none), where ``given`` is
        this member's target assignment, ``held_by_others`` what other members still own, and ``handed_over``
        what the client gave the worker (owned or being placed)."""
        withheld = set(given) - set(held_by_others) - set(handed_over)
        self._since = {key: self._since.get(key, now) for key in withheld}
        return sorted(key for key, since in self._since.items() if now - since >= self.after)

    @property
    def watching(self) -> bool:
        """Partitions are seen withheld, not yet for ``after`` s."""
        return bool(self._since)

    def forget(self) -> None:
        """A new consumer: it is watched afresh."""
        self._since = {}
