"""One route's whole sync plan, from a view of each cluster: topics, configs, ACLs.

``plan_sync`` is pure; ``replicator.runbooks.sync`` reads the views, calls it and applies
the result. The steps can be planned apart (``topics`` is the discovery step,
``configs`` and ``acls`` the metadata step) or together (``mirrorflow sync``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from replicator.domain.acl_sync import plan_acls
from replicator.domain.cluster_view import ClusterView
from replicator.domain.config_sync import ConfigFilter, plan_configs
from replicator.domain.fence import plan_fence
from replicator.domain.sync_plan import CreateAcl, ProtectReplica, SyncAction, SyncPlan
from replicator.domain.topic_sync import plan_topics


class Step(StrEnum):
    """What a sync run looks at."""

    TOPICS = "topics"
    CONFIGS = "configs"
    ACLS = "acls"


ALL_STEPS = frozenset(Step)
DISCOVERY_STEPS = frozenset({Step.TOPICS})
METADATA_STEPS = frozenset({Step.CONFIGS, Step.ACLS})


@dataclass(frozen=True, slots=True)
class SyncRules:
    """A route's sync settings, in domain terms (see ``RouteConfig.sync``)."""

    exclude_configs: tuple[str, ...] = ()
    acls: bool = True
    principals: Mapping[str, str] = field(default_factory=dict)
    grant_write: bool = False
    delete_topics: bool = False
    read_only: bool = False  # deny WRITE on replicas to every writer but ``writers`` (the replicator's)
    writers: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class SyncScope:
    """The route being synced: its name, the topics it replicates and how they are named."""

    route: str
    selected: Mapping[str, int]
    target_topic: Callable[[str], str]
    replicated_before: frozenset[str] = frozenset()


def plan_sync(
    scope: SyncScope,
    source: ClusterView,
    target: ClusterView,
    rules: SyncRules = SyncRules(),
    steps: Iterable[Step] = ALL_STEPS,
) -> SyncPlan:
    """Every action that brings the target in step for ``steps``, and notes on what is left."""
    wanted = frozenset(steps)
    config_filter = ConfigFilter(rules.exclude_configs)
    actions: list[SyncAction] = []
    notes: list[str] = []
    if Step.TOPICS in wanted:
        topics = plan_topics(scope.selected, scope.target_topic, source, target, config_filter,
                             rules.delete_topics, scope.replicated_before)
        actions += topics.actions
        notes += topics.notes
    if Step.CONFIGS in wanted:
        pairs = [(t, scope.target_topic(t)) for t in sorted(scope.selected)]
        actions += plan_configs(pairs, source.configs, target.configs, config_filter)
    if Step.ACLS in wanted and rules.acls:
        if source.acl_error or target.acl_error:
            pass  # the run reports the read failure; nothing is planned without both sides
        elif source.acls is None:
            notes.append("ACLs not synced: the source cluster has no authorizer")
        else:
            acls = plan_acls(source.acls, target.acls or (), scope.selected, scope.target_topic,
                             rules.principals, rules.grant_write)
            if acls and target.acls is None:
                notes.append("the target cluster has no authorizer: its ACLs cannot be created")
            actions += acls
            if rules.read_only:
                protect, more = _read_only(scope, target, acls, rules.writers)
                actions += protect
                notes += more
    return SyncPlan(scope.route, tuple(actions), tuple(notes))


def _read_only(scope: SyncScope, target: ClusterView, planned: list[CreateAcl],
               writers: tuple[str, ...]) -> tuple[list[ProtectReplica], list[str]]:
    """The DENY WRITE entries that leave only ``writers`` able to write the replicas (the fence's rule: a DENY per
    principal an ACL lets write, or one for ``User:*`` when no writer is named); notes for what cannot be."""
    if target.acls is None:
        return [], ["read-only replicas: the target cluster has no authorizer, nothing denies writes to them"]
    replicas = [scope.target_topic(t) for t in sorted(scope.selected)]
    # Without the broker's allow.everyone.if.no.acl.found at hand, a replica with no ACL at all is left alone
    # (a DENY there could take every other right too): noted, not denied.
    plan = plan_fence("target", replicas, set(target.acls) | {a.acl for a in planned}, writers,
                      everyone_if_no_acl=True)
    return [ProtectReplica(a, a) for a in plan.acls], [f"read-only replicas: {p}" for p in plan.problems]
