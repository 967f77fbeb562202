"""ACLs, source -> target: topic ACLs follow the replicas, group ACLs are copied.

- A topic ACL of the source that applies to a topic the route replicates (by name,
  by prefix or ``*``) becomes a literal ACL on that topic's replica, named by the
  route's policy. Literal, not the source's pattern: a prefix or ``*`` on the target
  would also grant on topics that are not replicas of this route.
- Replicas are written by the replicator only, so ``ALLOW WRITE`` is not copied and
  ``ALLOW ALL`` becomes ``ALLOW READ`` (as MirrorMaker 2 does), unless the route sets
  ``sync.grant_write`` (consumers *and* producers fail over to an identity replica).
  ``DENY`` entries are copied as they are.
- Group ACLs are copied as they are: consumer groups keep their names across
  clusters (their offsets are translated, not renamed).
- Principals are mapped by ``sync.principals`` (``User:app: User:app-dr``); unmapped
  principals stay as they are. ACLs on other resources (cluster, transactional ids,
  tokens) are not a route's business and are left alone.
- ACLs are only ever added: the target may grant more than the source.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace

from replicator.domain.acl_spec import ALLOW, GROUP, TOPIC, AclSpec
from replicator.domain.sync_plan import CreateAcl

WRITE, ALL, READ = "WRITE", "ALL", "READ"


def entry_for_replica(acl: AclSpec, grant_write: bool) -> AclSpec | None:
    """The entry a replica gets for ``acl``: None for ALLOW WRITE, READ for ALLOW ALL."""
    if grant_write or acl.permission != ALLOW:
        return acl
    if acl.operation == WRITE:
        return None
    return replace(acl, operation=READ) if acl.operation == ALL else acl


def map_principal(acl: AclSpec, principals: Mapping[str, str]) -> AclSpec:
    """``acl`` with its principal mapped (unchanged when not in ``principals``)."""
    return replace(acl, principal=principals.get(acl.principal, acl.principal))


def target_acls(
    source_acls: Iterable[AclSpec],
    replicated: Iterable[str],
    target_topic: Callable[[str], str],
    principals: Mapping[str, str] | None = None,
    grant_write: bool = False,
) -> dict[AclSpec, AclSpec]:
    """Every ACL the target should have, each with the source ACL it comes from."""
    topics = sorted(set(replicated))
    wanted: dict[AclSpec, AclSpec] = {}
    for acl in sorted(source_acls):
        mapped = map_principal(acl, principals or {})
        if acl.resource_type == GROUP:
            wanted.setdefault(mapped, acl)
        if acl.resource_type != TOPIC:
            continue
        entry = entry_for_replica(mapped, grant_write)
        if entry is None:
            continue
        for topic in topics:
            if acl.covers_topic(topic):
                wanted.setdefault(entry.on_topic(target_topic(topic)), acl)
    return wanted


def plan_acls(
    source_acls: Iterable[AclSpec],
    target_existing: Iterable[AclSpec],
    replicated: Iterable[str],
    target_topic: Callable[[str], str],
    principals: Mapping[str, str] | None = None,
    grant_write: bool = False,
) -> list[CreateAcl]:
    """A ``CreateAcl`` for each wanted ACL the target does not list yet."""
    existing = set(target_existing)
    wanted = target_acls(source_acls, replicated, target_topic, principals, grant_write)
    return [CreateAcl(acl, origin) for acl, origin in sorted(wanted.items()) if acl not in existing]
