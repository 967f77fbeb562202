"""A sync plan: the actions that bring a route's target in step with its source.

Planners (``topic_sync``, ``config_sync``, ``acl_sync``) return actions; the adapter
applies them one by one. Every action names its ``kind``, the ``resource`` it
changes and a readable ``detail`` (a config change reads ``old -> new``), and can
tell whether a fresh view of the target shows it done (``is_done``), which is how
an apply waits until the brokers' metadata caught up.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from replicator.domain.acl_spec import AclSpec
from replicator.domain.cluster_view import ClusterView

UNSET = "(unset)"  # a config with no topic-level override: the cluster's default applies


@dataclass(frozen=True, slots=True, order=True)
class ConfigChange:
    """One topic config, ``old -> new``; None is "no override" (the target's default)."""

    name: str
    old: str | None
    new: str | None

    def __str__(self) -> str:
        return f"{self.name}: {_shown(self.old)} -> {_shown(self.new)}"


def _shown(value: str | None) -> str:
    return UNSET if value is None else value


@dataclass(frozen=True, slots=True)
class TopicAction:
    """What the actions on one target topic share: the topic, which is the resource they change."""

    topic: str

    @property
    def resource(self) -> str:
        """The target topic."""
        return f"topic {self.topic}"


@dataclass(frozen=True, slots=True)
class CreateTopic(TopicAction):
    """Create a missing target topic with the source's partition count and configs."""

    kind: ClassVar[str] = "create topic"
    source_topic: str
    partitions: int
    configs: tuple[tuple[str, str], ...] = ()

    @property
    def detail(self) -> str:
        """Partitions and configs it is created with."""
        configs = ", ".join(f"{k}={v}" for k, v in self.configs)
        return f"from {self.source_topic}, {self.partitions} partitions" + (f", {configs}" if configs else "")

    def is_done(self, target: ClusterView) -> bool:
        """The topic exists with its partitions and configs."""
        overrides = target.overrides(self.topic)
        return target.partitions.get(self.topic, 0) >= self.partitions and all(
            overrides.get(k) == v for k, v in self.configs
        )


@dataclass(frozen=True, slots=True)
class AddPartitions(TopicAction):
    """Grow a target topic to the source's partition count (partitions are never removed)."""

    kind: ClassVar[str] = "add partitions"
    current: int
    wanted: int

    @property
    def detail(self) -> str:
        """``partitions: 3 -> 6``."""
        return f"partitions: {self.current} -> {self.wanted}"

    def is_done(self, target: ClusterView) -> bool:
        """The topic has at least the wanted partitions."""
        return target.partitions.get(self.topic, 0) >= self.wanted


@dataclass(frozen=True, slots=True)
class AlterTopicConfig(TopicAction):
    """Set or remove topic-level configs of a target topic."""

    kind: ClassVar[str] = "alter configs"
    changes: tuple[ConfigChange, ...]

    @property
    def detail(self) -> str:
        """Each change as ``name: old -> new``."""
        return "; ".join(str(c) for c in self.changes)

    def is_done(self, target: ClusterView) -> bool:
        """Every changed config reads its new value (or no override)."""
        overrides = target.overrides(self.topic)
        return all(overrides.get(c.name) == c.new for c in self.changes)


@dataclass(frozen=True, slots=True)
class CreateAcl:
    """Grant (or deny) on the target what the source grants (or denies)."""

    kind: ClassVar[str] = "create acl"
    acl: AclSpec
    source: AclSpec

    @property
    def resource(self) -> str:
        """The target resource."""
        return self.acl.resource

    @property
    def detail(self) -> str:
        """The entry, and where it comes from when it is not a plain copy."""
        origin = "" if self.acl == self.source else f" (source: {self.source.resource}: {self.source.entry})"
        return self.acl.entry + origin

    def is_done(self, target: ClusterView) -> bool:
        """The target lists the binding."""
        return target.acls is not None and self.acl in target.acls


@dataclass(frozen=True, slots=True)
class ProtectReplica(CreateAcl):
    """Deny a writer WRITE on a replica (``sync.read_only``): only the replicator writes replicas."""

    kind: ClassVar[str] = "protect replica"

    @property
    def detail(self) -> str:
        """The entry, and why."""
        return f"{self.acl.entry} (sync.read_only: only the replicator writes replicas)"


@dataclass(frozen=True, slots=True)
class DeleteTopic(TopicAction):
    """Delete a replica whose source topic is gone (only when the route opts in)."""

    kind: ClassVar[str] = "delete topic"
    source_topic: str

    @property
    def detail(self) -> str:
        """Why it goes."""
        return f"source topic {self.source_topic} is gone"

    def is_done(self, target: ClusterView) -> bool:
        """The target no longer lists the topic."""
        return self.topic not in target.names


SyncAction = CreateTopic | AddPartitions | AlterTopicConfig | CreateAcl | ProtectReplica | DeleteTopic

# The order actions are shown and applied in: topics exist before their configs,
# deletions come last.
KIND_ORDER = (CreateTopic.kind, AddPartitions.kind, AlterTopicConfig.kind, CreateAcl.kind, ProtectReplica.kind,
              DeleteTopic.kind)


def _sort_key(action: SyncAction) -> tuple[int, str, str]:
    return KIND_ORDER.index(action.kind), action.resource, action.detail


@dataclass(frozen=True, slots=True)
class SyncPlan:
    """What one run of a route's sync will change, in apply order; ``notes`` say what it leaves."""

    route: str
    actions: tuple[SyncAction, ...] = ()
    notes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "actions", tuple(sorted(self.actions, key=_sort_key)))

    @property
    def is_empty(self) -> bool:
        """True when the target is already in step: nothing to do."""
        return not self.actions

    def rows(self) -> list[tuple[str, str, str]]:
        """(action, resource, change) per action, in apply order."""
        return [(a.kind, a.resource, a.detail) for a in self.actions]

    def render(self) -> str:
        """The plan as an aligned text table (or ``nothing to do``), then its notes."""
        body = render_table(("action", "resource", "change"), self.rows()) if self.actions else "nothing to do"
        return "\n".join([body, *(f"note: {n}" for n in self.notes)])


def render_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Rows aligned under their headers."""
    cells = [list(headers), *([str(v) for v in row] for row in rows)]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=False)).rstrip() for row in cells)
