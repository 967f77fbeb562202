"""How a source topic is named on the target, and loop prevention by name.

``prefix`` names a replica ``<source cluster><separator><topic>`` (MirrorMaker 2's
default), so the name alone tells where a topic came from, hop after hop:
``backup.primary.orders`` came from ``backup``, which had it from ``primary``.
``identity`` and explicit mappings keep no trace in the name; for them loops are
stopped by the record header of ``provenance`` instead.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol


class ReplicationPolicy(Protocol):
    """The naming rule of a route, and what a name says about its origin."""

    def format_remote_topic(self, source_cluster: str, topic: str) -> str:
        """The name on the target of ``topic`` replicated from ``source_cluster``."""
        ...

    def topic_source(self, topic: str) -> str | None:
        """The cluster ``topic`` was replicated from, or None for a local topic."""
        ...

    def upstream_topic(self, topic: str) -> str | None:
        """The name of ``topic`` one hop up, or None for a local topic."""
        ...

    def original_topic(self, topic: str) -> str:
        """The name of ``topic`` on the cluster where its records were first written."""
        ...

    def is_cycle(self, topic: str, target_cluster: str) -> bool:
        """True when replicating ``topic`` to ``target_cluster`` sends it back where it was."""
        ...

    def is_remote(self, topic: str) -> bool:
        """True when ``topic`` is a replica of another cluster's topic."""
        ...


@dataclass(frozen=True, slots=True)
class PrefixPolicy:
    """``<source><separator><topic>``; a name is remote only if it starts with a known cluster.

    Requiring a *known* cluster keeps a local ``payments.eu`` local. Cluster names
    may contain the separator (``us.east``), but no cluster name followed by the
    separator may begin another one, or ``us.east.orders`` would have two readings.
    """

    separator: str = "."
    known_clusters: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        if not self.separator:
            raise ValueError("prefix policy: separator must not be empty")
        for cluster in self.known_clusters:
            for other in self.known_clusters:
                if other != cluster and other.startswith(cluster + self.separator):
                    raise ValueError(
                        f"prefix policy: clusters {cluster!r} and {other!r} make topic names"
                        f" ambiguous with separator {self.separator!r}"
                    )

    def format_remote_topic(self, source_cluster: str, topic: str) -> str:
        """``<source_cluster><separator><topic>``; ValueError for an unknown cluster."""
        # An unknown cluster would yield a name that topic_source reads as local,
        # and is_cycle would then let the topic flow back: fail loudly instead.
        if source_cluster not in self.known_clusters:
            raise ValueError(f"prefix policy: unknown source cluster {source_cluster!r}")
        return f"{source_cluster}{self.separator}{topic}"

    def topic_source(self, topic: str) -> str | None:
        """The known cluster ``topic`` starts with (followed by the separator), else None."""
        for cluster in self.known_clusters:
            prefix = cluster + self.separator
            if topic.startswith(prefix) and len(topic) > len(prefix):
                return cluster
        return None

    def upstream_topic(self, topic: str) -> str | None:
        """``topic`` without its first cluster prefix, or None for a local topic."""
        source = self.topic_source(topic)
        if source is None:
            return None
        return topic[len(source) + len(self.separator) :]

    def original_topic(self, topic: str) -> str:
        """``topic`` with every cluster prefix removed: ``b.a.orders`` -> ``orders``."""
        upstream = self.upstream_topic(topic)
        while upstream is not None:
            topic, upstream = upstream, self.upstream_topic(upstream)
        return topic

    def is_cycle(self, topic: str, target_cluster: str) -> bool:
        """True when any hop in the chain of sources of ``topic`` is ``target_cluster``."""
        current: str | None = topic
        while current is not None:
            if self.topic_source(current) == target_cluster:
                return True
            current = self.upstream_topic(current)
        return False

    def is_remote(self, topic: str) -> bool:
        """True when ``topic`` starts with a known cluster and the separator."""
        return self.topic_source(topic) is not None


class _NameCarriesNoOrigin:
    """The answers of a policy whose names say nothing of where a topic came from."""

    __slots__ = ()

    def topic_source(self, topic: str) -> str | None:
        """Always None: the name carries no origin."""
        return None

    def upstream_topic(self, topic: str) -> str | None:
        """Always None: the name carries no origin."""
        return None

    def original_topic(self, topic: str) -> str:
        """``topic`` unchanged."""
        return topic

    def is_cycle(self, topic: str, target_cluster: str) -> bool:
        """Always False: loops are stopped per record by the origin header instead."""
        return False

    def is_remote(self, topic: str) -> bool:
        """Always False: the name carries no origin."""
        return False


@dataclass(frozen=True, slots=True)
class IdentityPolicy(_NameCarriesNoOrigin):
    """Same name on both sides."""

    def format_remote_topic(self, source_cluster: str, topic: str) -> str:
        """``topic`` unchanged."""
        return topic


@dataclass(frozen=True, slots=True, init=False)
class MappingPolicy(_NameCarriesNoOrigin):
    """Explicit target names; topics not in the mapping keep their name."""

    pairs: tuple[tuple[str, str], ...]
    _lookup: dict[str, str] = field(repr=False, compare=False)

    def __init__(self, mapping: Mapping[str, str], merge: bool = False) -> None:
        """Check ``mapping`` and keep it as sorted pairs, so the policy stays hashable."""
        for source, target in mapping.items():
            if not (isinstance(source, str) and isinstance(target, str) and source and target):
                raise ValueError(f"mapping policy: {source!r}: {target!r} is not topic: topic")
        # Two source topics in one target partition interleave their records: allowed only
        # when asked for (a failback merges a replica and a topic of the original's name).
        shared = sorted(t for t, n in Counter(mapping.values()).items() if n > 1)
        if shared and not merge:
            raise ValueError(f"mapping policy: several topics map to {', '.join(shared)}")
        object.__setattr__(self, "pairs", tuple(sorted(mapping.items())))
        object.__setattr__(self, "_lookup", dict(mapping))

    def format_remote_topic(self, source_cluster: str, topic: str) -> str:
        """The mapped name of ``topic``, or ``topic`` itself when it is not mapped."""
        return self._lookup.get(topic, topic)


def policy_for(
    kind: str | Mapping[str, str], separator: str, known_clusters: Iterable[str], merge: bool = False
) -> ReplicationPolicy:
    """The policy named by a route's ``policy``: ``prefix``, ``identity`` or a mapping."""
    if kind == "prefix":
        return PrefixPolicy(separator, frozenset(known_clusters))
    if kind == "identity":
        return IdentityPolicy()
    if isinstance(kind, Mapping):
        return MappingPolicy(kind, merge)
    raise ValueError(f"unknown replication policy {kind!r} (expected prefix, identity, a mapping)")
