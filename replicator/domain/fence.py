"""A write fence on a cluster's topics: which ACLs deny the writers, and whether a write got past them.

At a failover's cutover the applications must stop writing to the old primary, or
what they write is neither on the backup nor counted in the RPO. The fence denies
WRITE on each topic to every principal the cluster's ACLs let write it (an ALLOW of
WRITE or ALL on a pattern covering the topic), except the ones the config exempts.
Kafka has no "everyone but" in an ACL and a DENY beats any ALLOW, so:

- with no principal exempt, the fence is one ``DENY User:* WRITE`` per topic;
- with some exempt, it is one DENY per writer that is not exempt; a topic every
  principal may write (``ALLOW User:* WRITE``) cannot then be fenced without
  fencing the exempt ones too: refused before anything changes, naming the ACL.

A fence only ever adds DENY entries on topics that already have ACLs (a writer's
ALLOW covers them), so it takes no other right away: Kafka denies every operation
on a topic with ACLs but no ALLOW, and a topic without any ACL is left alone (only
super users can write it, unless the broker allows everyone on such topics: then
the fence is refused too, see :func:`plan_fence`). Super users pass every ACL: the
watch after the fence (:func:`bypassed`) is what catches them.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from replicator.domain.acl_spec import ALLOW, DENY, LITERAL, TOPIC, WILDCARD, AclSpec
from replicator.domain.checkpoint import Partition
from replicator.domain.run_json import parse_time, plain, required_time

EVERYONE = "User:*"
WRITES = ("WRITE", "ALL")


@dataclass(frozen=True, slots=True)
class FencePlan:
    """The DENY ACLs to add (those not already there) and why a topic cannot be fenced (empty: it can)."""

    acls: tuple[AclSpec, ...]
    problems: tuple[str, ...] = ()
    unguarded: tuple[str, ...] = ()  # topics no ACL lets anyone write: only super users can, the watch sees them

    def describe(self) -> str:
        """``DENY WRITE to User:app, User:etl on orders, payments``: for the run's detail."""
        if not self.acls:
            return "no DENY needed (each is there already, or no ACL lets anyone write)"
        principals = sorted({a.principal for a in self.acls})
        topics = sorted({a.name for a in self.acls})
        return f"DENY WRITE to {', '.join(principals)} on {', '.join(topics)}"


def writers(topic: str, acls: Iterable[AclSpec]) -> set[str]:
    """The principals an ALLOW of WRITE (or ALL) lets write ``topic``."""
    return {a.principal for a in acls
            if a.permission == ALLOW and a.operation in WRITES and a.covers_topic(topic)}


def fence_acl(topic: str, principal: str) -> AclSpec:
    """The one DENY entry the fence adds for ``principal`` on ``topic``."""
    return AclSpec(TOPIC, topic, LITERAL, principal, WILDCARD, "WRITE", DENY)


def plan_fence(cluster: str, topics: Sequence[str], acls: Collection[AclSpec], exempt: Collection[str],
               everyone_if_no_acl: bool = False, new_only: bool = True) -> FencePlan:
    """The ACLs that fence ``topics`` on ``cluster`` against every writer but ``exempt``.

    ``everyone_if_no_acl``: the broker's ``allow.everyone.if.no.acl.found``; a topic
    without any ACL is then open to all, and a DENY on it would also take away every
    other right (reads included): refused, naming the topic. ``new_only``: leave out the DENY entries already
    there (False: every one the fence consists of, to lift it).
    """
    wanted: list[AclSpec] = []
    problems: list[str] = []
    unguarded: list[str] = []
    for topic in sorted(set(topics)):
        has_acls = any(a.covers_topic(topic) for a in acls)
        if not has_acls:
            if everyone_if_no_acl:
                problems.append(
                    f"cluster {cluster!r}: topic {topic!r} has no ACL and the broker lets everyone use such topics "
                    "(allow.everyone.if.no.acl.found=true): a DENY on it would take every right away, reads too. "
                    "Grant its readers and writers ACLs first, then fence it")
            else:
                unguarded.append(topic)
            continue
        allowed = writers(topic, acls)
        if EVERYONE in allowed and exempt:
            problems.append(
                f"cluster {cluster!r}: topic {topic!r}: every principal may write it (ALLOW {EVERYONE} WRITE): a "
                f"DENY for {EVERYONE} would fence the exempt ones too ({', '.join(sorted(exempt))}). Narrow that "
                "ACL to the principals that write, or fence with no principal exempt")
            continue
        targets = {EVERYONE} if not exempt else allowed - set(exempt)
        wanted += [fence_acl(topic, p) for p in sorted(targets)]
    present = set(acls) if new_only else set()
    return FencePlan(tuple(a for a in wanted if a not in present), tuple(problems), tuple(unguarded))


@dataclass(frozen=True, slots=True)
class Bypass:
    """Records written to a fenced partition after its fence took hold."""

    topic: str
    partition: int
    records: int
    first_offset: int  # the end when the watch began
    last_end: int  # the end when it ended

    def describe(self) -> str:
        """``orders-0: 12 records (offsets 340..363)``."""
        last = self.last_end - 1
        return f"{self.topic}-{self.partition}: {self.records} records (offsets {self.first_offset}..{last})"


def moved(before: Mapping[Partition, int], after: Mapping[Partition, int]) -> dict[Partition, tuple[int, int]]:
    """The partitions whose end moved during the watch -> (end before, end after)."""
    return {key: (before[key], end) for key, end in sorted(after.items()) if key in before and end > before[key]}


def bypassed(ranges: Mapping[Partition, tuple[int, int]], records: Mapping[Partition, int]) -> tuple[Bypass, ...]:
    """The partitions where records (not transaction markers: ``records`` counts those read) got past the fence."""
    return tuple(Bypass(t, p, records[(t, p)], *ranges[(t, p)]) for t, p in sorted(ranges) if records.get((t, p)))


def describe_bypass(found: Sequence[Bypass]) -> str:
    """All of them on a line: ``21 records on 2 partition(s): orders-0: 12 records (...), ...``."""
    return (f"{sum(b.records for b in found)} records on {len(found)} partition(s): "
            + ", ".join(b.describe() for b in found))


@dataclass(frozen=True, slots=True)
class FenceRecord:
    """A fence a run raised: where, the ACLs it added (only those: others were there before), what got past."""

    cluster: str
    acls: tuple[AclSpec, ...]
    raised_at: dt.datetime
    bypass: tuple[Bypass, ...] = ()
    lifted_at: dt.datetime | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON (the run's column, the DAG's hand-over)."""
        data: dict[str, Any] = plain(self)
        return data

    def split(self, topics: Collection[str] | None) -> tuple[tuple[AclSpec, ...], FenceRecord | None]:
        """Its ACLs on ``topics`` (None: all), and the record of what stays raised (None: nothing)."""
        on = tuple(a for a in self.acls if topics is None or a.name in topics)
        rest = tuple(a for a in self.acls if a not in on)
        return on, (replace(self, acls=rest) if rest else None)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> FenceRecord:
        """The record :meth:`to_dict` wrote."""
        return cls(data["cluster"], tuple(AclSpec(**a) for a in data["acls"]),
                   required_time(data["raised_at"], "fence: raised_at"), tuple(Bypass(**b) for b in data["bypass"]),
                   parse_time(data["lifted_at"]))
