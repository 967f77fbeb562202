"""Which source topics a route copies now (pure): its patterns, plus topics added by hand,
minus removed ones and cycles."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from replicator.domain.replication_policy import ReplicationPolicy
from replicator.domain.topic_filter import TopicFilter


@dataclass(frozen=True, slots=True)
class TopicSelection:
    """The route's source topics now: name -> partition count."""

    partitions: Mapping[str, int]

    @property
    def names(self) -> list[str]:
        """Sorted source topic names."""
        return sorted(self.partitions)


def select_topics(
    source_partitions: Mapping[str, int],
    topic_filter: TopicFilter,
    policy: ReplicationPolicy,
    target_cluster: str,
    added: Iterable[str] = (),
    removed: Iterable[str] = (),
) -> TopicSelection:
    """Pure: the config's topics plus those added by hand, minus removed, cycles and absent ones."""
    removed_set = set(removed)
    wanted = set(topic_filter.select(source_partitions)) | (set(added) & set(source_partitions))
    chosen = {
        t: source_partitions[t]
        for t in wanted
        if t not in removed_set and not policy.is_cycle(t, target_cluster)
    }
    return TopicSelection(chosen)
