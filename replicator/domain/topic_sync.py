"""Target topics of a route: which to create, which to grow, which (on request) to delete.

A missing replica is created with its source's partition count and copyable
configs; a replica with fewer partitions than its source is grown (never shrunk:
Kafka cannot remove partitions). A replica is deleted only when the route opts in
(``sync.delete_topics``) and only when its source topic is gone from the source
cluster altogether, for topics the route is known to have replicated.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from replicator.domain.cluster_view import ClusterView
from replicator.domain.config_sync import ConfigFilter
from replicator.domain.sync_plan import AddPartitions, CreateTopic, DeleteTopic, SyncAction


@dataclass(frozen=True, slots=True)
class TopicPlan:
    """The topic actions of a run, and what was deliberately left alone."""

    actions: list[SyncAction] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def plan_topics(
    selected: Mapping[str, int],
    target_topic: Callable[[str], str],
    source: ClusterView,
    target: ClusterView,
    config_filter: ConfigFilter,
    delete: bool = False,
    replicated_before: Iterable[str] = (),
) -> TopicPlan:
    """Create/grow the replicas of ``selected`` (source topic -> partitions); delete if asked.

    ``target_topic`` names a source topic on the target (the route's policy);
    ``source.configs`` supplies the overrides a new replica is created with.
    """
    plan = TopicPlan()
    for topic, partitions in sorted(selected.items()):
        _plan_replica(plan, topic, target_topic(topic), partitions, source, target, config_filter)
    if delete:
        for topic in sorted(set(replicated_before) - source.names):
            replica = target_topic(topic)
            if replica in target.names:
                plan.actions.append(DeleteTopic(replica, topic))
    return plan


def _plan_replica(
    plan: TopicPlan, topic: str, replica: str, partitions: int,
    source: ClusterView, target: ClusterView, config_filter: ConfigFilter,
) -> None:
    if replica not in target.names:
        if topic in source.unreadable:
            return  # created by a later run, with its configs; the read failure is reported
        configs = tuple(sorted(config_filter.copyable(source.overrides(topic)).items()))
        plan.actions.append(CreateTopic(replica, topic, partitions, configs))
    elif replica not in target.partitions:
        plan.notes.append(f"target topic {replica}: its metadata reports an error; left for the next run")
    elif target.partitions[replica] < partitions:
        plan.actions.append(AddPartitions(replica, target.partitions[replica], partitions))
    elif target.partitions[replica] > partitions:
        plan.notes.append(
            f"target topic {replica} has {target.partitions[replica]} partitions, source {topic} has"
            f" {partitions}: left as is (Kafka cannot remove partitions)"
        )
