"""A consumer group as a KIP-848 coordinator runs it, for the fakes.

The coordinator keeps a target assignment (sticky, balanced by partition count). A
member is told to revoke what it owns but should not; a partition is given to its new
owner only once the old owner has revoked it, so two members never own one partition
at once — unless a member's session expired: its partitions move at once, and the
member learns it lost them the next time it polls (a "zombie" that wakes up), and
rejoins with a new member epoch. Commits of an expired member are refused, as the
broker refuses a stale member epoch; a commit from a consumer that never joined (a
"simple" commit) is taken only while the group has no live member.

What a member must revoke is pending revocation until it has: shown in no member's
assignment (as Kafka 4.1's ConsumerGroupDescribe shows it), given to no other member.
A member's releases can go unheard (``lose_releases``): what it revokes the coordinator
still counts as its own, pending revocation, until the member leaves. A member's client
can miss the revocation itself (``lose_revocations``): it is never told to revoke, and
keeps the partitions until it leaves (see ``replicator.domain.withheld``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from confluent_kafka import KafkaError, KafkaException

if TYPE_CHECKING:
    from replicator.testing.cluster import FakeCluster

TP = tuple[str, int]


def id_still_used() -> KafkaException:
    """librdkafka's fatal error when the coordinator refuses a static id it still gives to a member
    (UNRELEASED_INSTANCE_ID)."""
    return KafkaException(KafkaError(KafkaError._FATAL, "Fatal error: Broker: The instance ID is still used by "
                                     "another member in the consumer group", fatal=True))


@dataclass(slots=True)
class Member:
    """What the coordinator knows of one member."""

    topics: list[str]
    token: int  # which client holds this membership (a static id may move to a new process)
    owned: set[TP] = field(default_factory=set)
    expired: bool = False
    epoch: int = 1  # bumped when it rejoins after its session expired
    releases_unheard: bool = False  # what it revokes stays pending revocation (``FakeGroup.lose_releases``)
    pending: set[TP] = field(default_factory=set)  # revoked by its client, not heard of by the coordinator
    revocations_unheard: bool = False  # never told to revoke (``FakeGroup.lose_revocations``)


class FakeGroup:
    """Members, their assignment, and the committed offsets of one group."""

    def __init__(self, cluster: FakeCluster, group_id: str) -> None:
        self.cluster, self.group_id = cluster, group_id
        self.members: dict[str, Member] = {}
        self.owner: dict[TP, str] = {}  # the target assignment
        self.committed: dict[TP, tuple[int, str | None]] = {}

    # -- membership ----------------------------------------------------------------

    def join(self, member_id: str, topics: list[str], token: int = 0) -> None:
        """A member joins (or changes its subscription). A static id still held by another client whose
        session has not expired is refused, as KIP-848 refuses it (UNRELEASED_INSTANCE_ID)."""
        with self.cluster.lock:
            member = self.members.get(member_id)
            if member is not None and member.token != token:
                if not member.expired:
                    raise id_still_used()
                member = None  # the crashed holder timed out: a new member takes the id
            if member is None:
                member = self.members[member_id] = Member(list(topics), token)
            member.topics = list(topics)

    def leave(self, member_id: str) -> None:
        """A member left cleanly (it revoked what it owned before)."""
        with self.cluster.lock:
            self.members.pop(member_id, None)

    def lose_releases(self, member_id: str) -> None:
        """The coordinator no longer hears this member's acknowledgements of a revocation (a heartbeat lost across
        a coordinator's restart, say): what it revokes from now on stays its own until it leaves."""
        with self.cluster.lock:
            self.members[member_id].releases_unheard = True

    def lose_revocations(self, member_id: str) -> None:
        """This member's client no longer hears that it must revoke partitions (an answer to a heartbeat it never
        took up): it keeps them, and the coordinator counts them pending revocation, until it leaves."""
        with self.cluster.lock:
            self.members[member_id].revocations_unheard = True

    def expire(self, member_id: str) -> None:
        """The member's session timed out: its partitions move now; it is told when it polls again."""
        with self.cluster.lock:
            member = self.members.get(member_id)
            if member is not None:
                member.expired = True

    def alive(self) -> list[str]:
        """Members whose session is valid, sorted."""
        return sorted(m for m, state in self.members.items() if not state.expired)

    # -- assignment ----------------------------------------------------------------

    def _rebalance(self) -> None:
        live = self.alive()
        wanted = {tp for m in live for tp in self.cluster.partitions_of(self.members[m].topics)}
        self.owner = {tp: m for tp, m in self.owner.items() if m in live and tp in wanted
                      and tp[0] in self.members[m].topics}
        if not live:
            return
        quota = {m: len(wanted) // len(live) + (1 if i < len(wanted) % len(live) else 0)
                 for i, m in enumerate(live)}
        for member in live:
            mine = sorted(tp for tp, m in self.owner.items() if m == member)
            for tp in mine[quota[member]:]:
                del self.owner[tp]
        for tp in sorted(wanted - set(self.owner)):
            takers = [m for m in live if tp[0] in self.members[m].topics
                      and sum(1 for o in self.owner.values() if o == m) < quota[m]]
            if takers:
                self.owner[tp] = takers[0]

    def events(self, member_id: str) -> tuple[str, list[TP]] | None:
        """The next rebalance event for this member: ("lost"|"revoke"|"assign", partitions), or None."""
        with self.cluster.lock:
            member = self.members.get(member_id)
            if member is None:
                return None
            if member.expired:  # it learns now; it then rejoins as a new member would
                lost, member.owned, member.expired = sorted(member.owned), set(), False
                member.pending, member.releases_unheard = set(), False  # a new epoch: its full state is heard
                member.epoch += 1
                return ("lost", lost) if lost else None
            self._rebalance()
            revoke = sorted(tp for tp in member.owned if self.owner.get(tp) != member_id)
            if revoke and not member.revocations_unheard:
                return "revoke", revoke
            held = {tp for m, state in self.members.items() if m != member_id and not state.expired
                    for tp in state.owned | state.pending}
            assign = sorted(tp for tp, m in self.owner.items()
                            if m == member_id and tp not in member.owned and tp not in held)
            if assign:
                member.owned.update(assign)
                return "assign", assign
            return None

    def described(self) -> list[tuple[str, list[TP], list[TP]]]:
        """Each live member: (member id, what it owns, its target assignment), as ConsumerGroupDescribe says: what
        it must revoke is pending revocation, in no member's assignment."""
        with self.cluster.lock:
            self._rebalance()
            return [(m, sorted(tp for tp in self.members[m].owned if self.owner.get(tp) == m),
                     sorted(tp for tp, o in self.owner.items() if o == m)) for m in self.alive()]

    def revoked(self, member_id: str, partitions: list[TP]) -> None:
        """The member finished revoking ``partitions``: they may go to their new owner."""
        with self.cluster.lock:
            member = self.members.get(member_id)
            if member is not None:
                member.owned.difference_update(partitions)
                if member.releases_unheard:
                    member.pending.update(partitions)

    # -- offsets -------------------------------------------------------------------

    def live_epoch(self, member_id: str) -> int | None:
        """The member's epoch while its session is valid, else None."""
        with self.cluster.lock:
            member = self.members.get(member_id)
            return None if member is None or member.expired else member.epoch

    def commit(self, member_id: str | None, offsets: dict[TP, tuple[int, str | None]]) -> None:
        """Store committed offsets; refused for a member the group no longer knows, and for a consumer that
        never joined (``member_id`` None) while the group has live members."""
        with self.cluster.lock:
            if member_id is None:
                known = not self.alive()
            else:
                known = self.live_epoch(member_id) is not None
            if not known:
                raise KafkaException(KafkaError(KafkaError.UNKNOWN_MEMBER_ID, "member fenced"))
            self.committed.update(offsets)
