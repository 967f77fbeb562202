"""Pause or resume one topic of a route (``mirrorflow topics pause|resume``, the DAG ``mirrorflow_topic_pause``).

The wish goes to the state DB; the route's running workers read it at their next look
(every few seconds) and stop or start fetching the topic's partitions, each other
partition staying where it is (no rebalance). A paused topic stays on the route.
"""

from __future__ import annotations

from collections.abc import Mapping

from replicator.config import Config
from replicator.domain.route_topic import DesiredState, RouteTopic
from replicator.errors import UsageError


def pause_topic(config: Config, route_name: str, topic: str, pause: bool) -> str:
    """Pause (``pause``) or resume ``topic`` of the route; what changed, in words. UsageError naming an unknown
    route or a topic the route does not copy, or one a per-topic failover holds."""
    from replicator.domain.route_topic import AddedBy
    from replicator.runbooks.route_scope import check_copied
    from replicator.state.repository import register_routes, route_topics, set_topic
    from replicator.state.store import StateStore
    from replicator.worker.subscription import REFRESH_SECONDS

    route = config.route(route_name)
    with StateStore(config.state.url) as store:
        with store.session() as session:
            register_routes(session, [route])
            rows = {r.topic: r for r in route_topics(session, route.name)}
            check_copied(config, route, [topic], rows)
            refuse_failed_over(route.name, topic, rows)
            row = rows.get(topic)
            if not pause and (row is None or row.desired_state != DesiredState.PAUSED):
                return f"route {route.name}: topic {topic} is not paused: nothing to resume"
            if pause and row is not None and row.desired_state == DesiredState.PAUSED:
                return f"route {route.name}: topic {topic} is paused already"
            wanted = DesiredState.PAUSED if pause else DesiredState.REPLICATE
            set_topic(session, route.name, topic, wanted, AddedBy.CONFIG if row is None else row.added_by)
    return (f"route {route.name}: topic {topic} {'paused' if pause else 'resumed'}: its workers follow within "
            f"{REFRESH_SECONDS:g} s, the other partitions copy on")


def refuse_failed_over(route: str, topic: str, rows: Mapping[str, RouteTopic]) -> None:
    """A topic a per-topic failover moved is the failover's until a failback or a release: UsageError."""
    row = rows.get(topic)
    if row is not None and row.desired_state == DesiredState.FAILED_OVER:
        raise UsageError(f"route {route}: topic {topic} was failed over to the route's target: its applications "
                         f"use the replica now. Fail it back (`mirrorflow failback --route {route} --topic {topic}`), "
                         f"or after a drill `mirrorflow failover --route {route} --release`")
