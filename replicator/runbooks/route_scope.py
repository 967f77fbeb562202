"""Which topics a route copies: by its patterns on the source and the topics added or removed by hand; the state
DB's rows when the source does not answer. Asked before a topic is paused or failed over by name."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from replicator.config import Config, RouteConfig
from replicator.domain.heartbeat import heartbeat_topic
from replicator.domain.route_topic import AddedBy, DesiredState, RouteTopic
from replicator.domain.topic_selection import select_topics
from replicator.errors import ClusterError, UsageError
from replicator.kafka.admin import admin_client
from replicator.kafka.clients import admin_settings
from replicator.kafka.topics import source_partitions


def check_copied(config: Config, route: RouteConfig, topics: Sequence[str], rows: Mapping[str, RouteTopic]) -> None:
    """UsageError naming each of ``topics`` the route does not copy (its heartbeat topic included: it is the
    route's own, not an application's)."""
    problems = [f"route {route.name}: {t!r} is the route's heartbeat topic, not an application's"
                for t in topics if t == heartbeat_topic(route.name)]
    added = {t for t, r in rows.items() if r.added_by == AddedBy.CLI and r.desired_state != DesiredState.REMOVED}
    removed = {t for t, r in rows.items() if r.desired_state == DesiredState.REMOVED}
    try:
        admin = admin_client(admin_settings(config.cluster(route.source).client_properties()))
        copied = set(select_topics(source_partitions(admin), route.topic_filter, config.policy(route),
                                   route.target, added, removed).partitions)
        where = f"on {route.source!r}"
    except ClusterError as exc:
        copied = {t for t, r in rows.items() if r.desired_state != DesiredState.REMOVED}
        where = f"known to the state DB ({route.source!r} does not answer: {exc})"
    problems += [f"route {route.name} does not copy topic {t!r}: no such topic {where} matches its topics "
                 f"{list(route.topics)} (or was added by hand)" for t in topics
                 if t not in copied and t != heartbeat_topic(route.name)]
    if problems:
        raise UsageError("\n".join(problems))
