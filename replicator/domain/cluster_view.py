"""What the sync planners know of one cluster: topics, topic-level configs, ACLs.

Read once per run by the adapter (``replicator.runbooks.sync.read``) and handed to the pure
planners, which never ask a cluster anything themselves.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from replicator.domain.acl_spec import AclSpec


@dataclass(frozen=True)
class ClusterView:
    """A snapshot of one cluster, as far as a sync needs it.

    ``partitions`` holds the topics whose metadata is healthy; ``names`` every topic
    the cluster listed, errors included, so that a topic with a passing metadata
    error is never mistaken for a deleted one. ``configs`` holds only the
    topic-level overrides (not broker or built-in defaults) of the topics that
    were described; ``unreadable`` the topics whose configs could not be read, with
    the reason. ``acls`` is None when the cluster has no authorizer (or they were not
    asked for); ``acl_error`` says why they could not be read.
    """

    partitions: Mapping[str, int]
    names: frozenset[str] = frozenset()
    configs: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    acls: frozenset[AclSpec] | None = None
    unreadable: Mapping[str, str] = field(default_factory=dict)
    acl_error: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "names", frozenset(self.names) | frozenset(self.partitions))

    def overrides(self, topic: str) -> Mapping[str, str]:
        """The topic-level config overrides of ``topic`` (empty when none or not described)."""
        return self.configs.get(topic, {})
