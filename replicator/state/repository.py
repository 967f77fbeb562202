"""Repository functions: take a session, return domain objects; writes are upserts."""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from replicator.config import RouteConfig
from replicator.domain.route_topic import AddedBy, DesiredState, RouteTopic, TopicStatus
from replicator.errors import ConfigError
from replicator.state.models import DataLossRow, RouteRow, RouteTopicRow


def _policy_name(route: RouteConfig) -> str:
    return route.policy if isinstance(route.policy, str) else "mapping"


def register_routes(session: Session, routes: Iterable[RouteConfig]) -> list[str]:
    """Insert or update the routes of the config; returns their names."""
    names = []
    for route in routes:
        row = session.scalar(select(RouteRow).where(RouteRow.name == route.name))
        if row is None:
            row = RouteRow(name=route.name)
            session.add(row)
        row.source_cluster, row.target_cluster = route.source, route.target
        row.policy = _policy_name(route)
        row.updated_at = func.now()
        names.append(route.name)
    session.flush()
    return names


def _route_row(session: Session, route: str) -> RouteRow:
    row = session.scalar(select(RouteRow).where(RouteRow.name == route))
    if row is None:
        raise ConfigError(f"route {route!r} is not registered in the state database")
    return row


def set_topic(
    session: Session, route: str, topic: str, desired: DesiredState, added_by: AddedBy
) -> RouteTopic:
    """Record what the operator wants for ``topic`` on ``route`` (insert or update)."""
    route_row = _route_row(session, route)
    row = session.scalar(
        select(RouteTopicRow).where(RouteTopicRow.route_id == route_row.id, RouteTopicRow.topic == topic)
    )
    if row is None:
        row = RouteTopicRow(route=route_row, topic=topic, status=TopicStatus.PENDING, added_by=added_by)
        session.add(row)
    row.desired_state = desired
    row.updated_at = func.now()
    session.flush()
    session.refresh(row)
    return _to_domain(route, row)


def report_status(
    session: Session, route: str, topic: str, status: TopicStatus, detail: str | None = None
) -> None:
    """Record what a worker observed for ``topic`` on ``route``."""
    route_row = _route_row(session, route)
    row = session.scalar(
        select(RouteTopicRow).where(RouteTopicRow.route_id == route_row.id, RouteTopicRow.topic == topic)
    )
    if row is None:
        raise ConfigError(f"topic {topic!r} is not on route {route!r}")
    row.status, row.status_detail, row.updated_at = status, detail, func.now()


def route_topics(session: Session, route: str) -> list[RouteTopic]:
    """The topics of ``route``, sorted by name."""
    route_row = _route_row(session, route)
    rows = session.scalars(
        select(RouteTopicRow).where(RouteTopicRow.route_id == route_row.id).order_by(RouteTopicRow.topic)
    )
    return [_to_domain(route, row) for row in rows]


def _to_domain(route: str, row: RouteTopicRow) -> RouteTopic:
    return RouteTopic(
        route=route,
        topic=row.topic,
        desired_state=DesiredState(row.desired_state),
        status=TopicStatus(row.status),
        added_by=AddedBy(row.added_by),
        status_detail=row.status_detail,
        updated_at=row.updated_at,
    )


def record_data_loss(session: Session, route: str, topic: str, partition: int, lost: tuple[int, int]) -> None:
    """Store the half-open range ``[from, to)`` of records retention deleted before the route copied them."""
    session.add(DataLossRow(route=route, topic=topic, partition=partition, from_offset=lost[0], to_offset=lost[1]))


def data_losses(session: Session, route: str) -> list[tuple[str, int, int, int]]:
    """(topic, partition, from, to) of every loss recorded for ``route``, oldest first."""
    rows = session.scalars(select(DataLossRow).where(DataLossRow.route == route).order_by(DataLossRow.id))
    return [(r.topic, r.partition, r.from_offset, r.to_offset) for r in rows]
