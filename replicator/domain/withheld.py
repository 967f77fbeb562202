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
the group and the client said.

The other side of a hand-over can fail too. A member that revoked partitions tells the coordinator so in its next
heartbeat; until the coordinator hears it, it counts them as that member's ("pending revocation": shown in no
member's assignment) and their new owner waits. The exactly-once fault pairs (overlap-eos-28b, a worker joining
while the target restarted) saw a worker revoke three partitions a second after the coordinator came back; their
new owner waited 3 minutes, through three consumers of its own, and took them a second after the worker that had
revoked them joined anew. So a member also watches what it released (``ReleaseWatch``): still awaited by another
member ``after`` s later, it joins anew -- which tells the coordinator afresh what it owns.

A member's client can also miss the revocation itself (``KeptWatch``): the coordinator counts the partitions pending
revocation (in no member's assignment, in another's target) while the client still hands them to the worker. The
fault pairs (a worker leaving or joining while the target was frozen, exactly-once) saw one worker keep all seven
partitions for 90 s while four members joined and waited for them; their own new consumers cured nothing, the
keeping worker's new clients did. Such partitions held ``after`` s, the member joins anew.

The member holding up a hand-over (released unheard, or never told) waits a third less than the member that waits
for the partitions (``HOLDER_SHARE``): the coordinator cannot tell that member's watch whether a partition is
pending revocation elsewhere or withheld from it, and its new consumer would cure nothing (the fault pairs saw both
renew at once, 30 s after, at the cost of an aborted transaction on an exactly-once route). Heard first, the
holder's renewal hands the partitions over before the waiting member's watch is due."""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass

from replicator.domain.checkpoint import Partition

AFTER_S = 30.0  # withheld this long: a new consumer (a partition on its way from another member is not withheld)
HOLDER_SHARE = 2 / 3  # of the withheld watch's wait: a member holding up a hand-over that long renews


@dataclass(frozen=True, slots=True)
class GroupSays:
    """What a group's coordinator says of one member and the others (KIP-848 ConsumerGroupDescribe)."""

    given: frozenset[Partition]  # the member's target assignment
    held_by_others: frozenset[Partition]  # what the other members own
    awaited_by_others: frozenset[Partition]  # in another member's target assignment, owned by no member


def group_says(member: str, described: Iterable[tuple[str, Collection[Partition], Collection[Partition]]]
               ) -> GroupSays | None:
    """What the group says of ``member``, from each member's (id, owned, target assignment); None when the
    group does not know it. A partition pending revocation is in no member's "owned" (Kafka 4.1's describe)."""
    given: set[Partition] | None = None
    held: set[Partition] = set()
    wanted: set[Partition] = set()
    owned_by_any: set[Partition] = set()
    for member_id, owned, target in described:
        owned_by_any.update(owned)
        if member_id == member:
            given = set(target)
        else:
            held.update(owned)
            wanted.update(set(target) - set(owned))
    if given is None:
        return None
    return GroupSays(frozenset(given), frozenset(held), frozenset(wanted - owned_by_any))


class _SeenSince:
    """Since when each partition has been seen in a state, look after look (one not seen in it is forgotten)."""

    def __init__(self, after: float) -> None:
        self.after = after
        self._since: dict[Partition, float] = {}

    def _seen(self, partitions: set[Partition], now: float) -> list[Partition]:
        """The partitions seen in the state for ``after`` s or more as of this look (sorted; empty: none)."""
        self._since = {key: self._since.get(key, now) for key in partitions}
        return sorted(key for key, since in self._since.items() if now - since >= self.after)

    @property
    def watching(self) -> bool:
        """Partitions are seen in the state, not yet for ``after`` s."""
        return bool(self._since)

    def forget(self) -> None:
        """A new consumer: it is watched afresh."""
        self._since = {}


class WithheldWatch(_SeenSince):
    """Since when each withheld partition has been seen withheld."""

    def observe(self, given: Collection[Partition], held_by_others: Collection[Partition],
                handed_over: Collection[Partition], now: float) -> list[Partition]:
        """The partitions withheld for ``after`` s or more as of this look (sorted; empty: none), where ``given`` is
        this member's target assignment, ``held_by_others`` what other members still own, and ``handed_over``
        what the client gave the worker (owned or being placed)."""
        return self._seen(set(given) - set(held_by_others) - set(handed_over), now)


class KeptWatch(_SeenSince):
    """Since when each partition the client still hands the worker has been awaited by another member: the
    coordinator counts it pending revocation, and the client was never told to give it up."""

    def observe(self, awaited_by_others: Collection[Partition], handed_over: Collection[Partition],
                now: float) -> list[Partition]:
        """The partitions kept so for ``after`` s or more as of this look (sorted; empty: none)."""
        return self._seen(set(awaited_by_others) & set(handed_over), now)


class ReleaseWatch:
    """Since when each partition a member's client revoked has been released, and by which member (a worker's
    new member released everything the old one had when the old one left)."""

    def __init__(self, after: float) -> None:
        self.after = after
        self._since: dict[Partition, tuple[str, float]] = {}

    def released(self, member: str, partitions: Iterable[Partition], now: float) -> None:
        """``member``'s client revoked ``partitions`` (handed them back) at ``now``."""
        self._since.update((key, (member, now)) for key in partitions)

    def observe(self, member: str, awaited_by_others: Collection[Partition], held_by_others: Collection[Partition],
                now: float) -> list[Partition]:
        """The partitions ``member`` released ``after`` s ago or more that another member still waits for (sorted;
        empty: none). One released that long ago and not awaited was taken: it is watched no more; so is one seen
        held by another member at any look (the coordinator gives it to no one before it heard the release: the
        long-form fault run saw a partition released, taken, and awaited again 23 s later in the next hand-over,
        and the worker that had released it renewed itself for nothing). One released more recently is kept
        otherwise (a look asked before the release says the member owns it). What an earlier member released is
        forgotten."""
        taken = set(held_by_others)
        mine = {key: since for key, (by, since) in self._since.items() if by == member and key not in taken}
        overdue = sorted(key for key, since in mine.items() if now - since >= self.after and key in awaited_by_others)
        self._since = {key: (member, since) for key, since in mine.items() if now - since < self.after}
        return overdue
