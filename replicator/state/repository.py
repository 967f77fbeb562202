"""Repository functions: take a session, return domain objects; writes are upserts."""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection, Iterable, Sequence

from sqlalchemy import ColumnElement, Row, delete, func, select, tuple_
from sqlalchemy.orm import Session

from replicator.config import RouteConfig
from replicator.domain.route_topic import AddedBy, DesiredState, RouteTopic, TopicStatus
from replicator.domain.sync_run import Outcome, SyncChange, SyncRun
from replicator.errors import ConfigError
from replicator.state.models import (
    DataLossRow,
    PartitionOwnerRow,
    PartitionStateRow,
    RouteRow,
    RouteTopicRow,
    SyncChangeRow,
    SyncRunRow,
)
from replicator.state.times import utc


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


def replicating(session: Session, route: str, started: Sequence[str], stopped: Sequence[str]) -> None:
    """A worker's topics now copied (added to the route when new to it) and no longer copied: one read of
    the route's rows and one write each, whatever their number (a route over 2,000 topics starts at once)."""
    route_row = _route_row(session, route)
    rows = {row.topic: row for row in session.scalars(
        select(RouteTopicRow).where(RouteTopicRow.route_id == route_row.id))}
    for topic in started:
        row = rows.get(topic)
        if row is None:
            row = RouteTopicRow(route=route_row, topic=topic, desired_state=DesiredState.REPLICATE,
                                added_by=AddedBy.CONFIG)
            session.add(row)
        row.status, row.status_detail, row.updated_at = TopicStatus.REPLICATING, None, func.now()
    for topic in stopped:
        if topic in rows:
            row = rows[topic]
            row.status, row.status_detail, row.updated_at = TopicStatus.STOPPED, None, func.now()


def route_topics(session: Session, route: str) -> list[RouteTopic]:
    """The topics of ``route``, sorted by name."""
    return _topics(session, route)


def operator_topics(session: Session, route: str) -> list[RouteTopic]:
    """The topics of ``route`` an operator acted on (added with ``mirrorflow topics``, or paused, removed or
    failed over), sorted by name: what a worker's every look asks, without the thousands it found itself."""
    return _topics(session, route, (RouteTopicRow.added_by == AddedBy.CLI.value)
                   | (RouteTopicRow.desired_state != DesiredState.REPLICATE.value))


def _topics(session: Session, route: str, *where: ColumnElement[bool]) -> list[RouteTopic]:
    route_row = _route_row(session, route)
    # Columns, not mapped rows, here and in the other reads of a row per topic or partition: building an ORM
    # object per row cost `mirrorflow status` a tenth of a second at 2,000 partitions (rows: 3-10 times less).
    rows = session.execute(
        select(RouteTopicRow.topic, RouteTopicRow.desired_state, RouteTopicRow.status, RouteTopicRow.added_by,
               RouteTopicRow.status_detail, RouteTopicRow.updated_at)
        .where(RouteTopicRow.route_id == route_row.id, *where).order_by(RouteTopicRow.topic)
    )
    return [_to_domain(route, row) for row in rows]


def _to_domain(route: str, row: RouteTopicRow | Row[str, str, str, str, str | None, dt.datetime]
               ) -> RouteTopic:
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
    """Store the half-open range ``[from, to)`` of records retention deleted before the route copied them.

    Once: the same range reported again (a write retried after its answer was lost, a
    partition placed again) is the same loss.
    """
    same = select(DataLossRow.id).where(
        DataLossRow.route == route, DataLossRow.topic == topic, DataLossRow.partition == partition,
        DataLossRow.from_offset == lost[0], DataLossRow.to_offset == lost[1])
    if session.scalar(same.limit(1)) is None:
        session.add(DataLossRow(route=route, topic=topic, partition=partition, from_offset=lost[0], to_offset=lost[1]))


def data_losses(session: Session, route: str) -> list[tuple[str, int, int, int]]:
    """(topic, partition, from, to) of every loss recorded for ``route``, oldest first."""
    rows = session.execute(select(DataLossRow.topic, DataLossRow.partition, DataLossRow.from_offset,
                                  DataLossRow.to_offset).where(DataLossRow.route == route).order_by(DataLossRow.id))
    return [(topic, partition, start, end) for topic, partition, start, end in rows]


def hold_topics(session: Session, route: RouteConfig, topics: Iterable[str]) -> None:
    """A per-topic failover moved ``topics``: held (subscribed, not fetched) until a failback or a release."""
    register_routes(session, [route])
    for topic in topics:
        known = session.scalar(select(RouteTopicRow).join(RouteRow).where(RouteRow.name == route.name,
                                                                           RouteTopicRow.topic == topic))
        set_topic(session, route.name, topic, DesiredState.FAILED_OVER,
                  AddedBy.CONFIG if known is None else AddedBy(known.added_by))


def release_topics(session: Session, route: str, only: Collection[str] | None = None) -> list[str]:
    """Let the topics a per-topic failover held (of ``only``, when given) be copied again; returns them."""
    held = [t for t in route_topics(session, route) if t.desired_state == DesiredState.FAILED_OVER
            and (only is None or t.topic in only)]
    for t in held:
        set_topic(session, route, t.topic, DesiredState.REPLICATE, t.added_by)
    return [t.topic for t in held]


def record_partition_state(session: Session, route: str, topic: str, partition: int, state: str | None,
                           detail: str | None = None) -> None:
    """What a worker found ``topic[partition]`` in (FAULTED, STUCK), since now; None: it copies it again."""
    row = session.scalar(select(PartitionStateRow).where(
        PartitionStateRow.route == route, PartitionStateRow.topic == topic, PartitionStateRow.partition == partition))
    if state is None:
        if row is not None:
            session.delete(row)
        return
    if row is None:
        session.add(PartitionStateRow(route=route, topic=topic, partition=partition, state=state, detail=detail))
    elif (row.state, row.detail) != (state, detail):
        row.state, row.detail, row.since = state, detail, func.now()


def clear_partition_states(session: Session, route: str, partitions: Iterable[tuple[str, int]]) -> None:
    """The worker placed these partitions afresh: what it found them in before is over (one statement per
    500 partitions: a worker placing 2,000 at its start asks once per batch, not once each)."""
    keys = sorted(set(partitions))
    for start in range(0, len(keys), 500):
        session.execute(delete(PartitionStateRow).where(
            PartitionStateRow.route == route,
            tuple_(PartitionStateRow.topic, PartitionStateRow.partition).in_(keys[start:start + 500])))


def record_owner(session: Session, route: str, worker: str, partitions: Iterable[tuple[str, int]]) -> None:
    """``worker`` placed these partitions: their owner from now (500 partitions a statement)."""
    keys = sorted(set(partitions))
    for start in range(0, len(keys), 500):
        batch = keys[start:start + 500]
        session.execute(delete(PartitionOwnerRow).where(
            PartitionOwnerRow.route == route, tuple_(PartitionOwnerRow.topic, PartitionOwnerRow.partition).in_(batch)))
        session.add_all(PartitionOwnerRow(route=route, topic=t, partition=p, worker=worker) for t, p in batch)
        session.flush()


def forget_owner(session: Session, route: str, worker: str) -> None:
    """``worker`` stopped: it owns nothing of the route any more (rows another worker took are left alone)."""
    session.execute(delete(PartitionOwnerRow).where(PartitionOwnerRow.route == route,
                                                    PartitionOwnerRow.worker == worker))


def partition_owners(session: Session, route: str) -> dict[tuple[str, int], tuple[str, dt.datetime]]:
    """(topic, partition) -> (worker, since) of the route's partitions a running worker placed."""
    rows = session.execute(select(PartitionOwnerRow.topic, PartitionOwnerRow.partition, PartitionOwnerRow.worker,
                                  PartitionOwnerRow.since).where(PartitionOwnerRow.route == route))
    return {(topic, partition): (worker, utc(since)) for topic, partition, worker, since in rows}


def partition_states(session: Session, route: str) -> dict[tuple[str, int], tuple[str, str | None, dt.datetime]]:
    """(topic, partition) -> (state, detail, since) of the route's partitions a worker found FAULTED or STUCK."""
    rows = session.execute(select(PartitionStateRow.topic, PartitionStateRow.partition, PartitionStateRow.state,
                                  PartitionStateRow.detail, PartitionStateRow.since)
                           .where(PartitionStateRow.route == route))
    return {(topic, partition): (state, detail, utc(since)) for topic, partition, state, detail, since in rows}


def register_discovered(session: Session, route: str, topics: Iterable[str]) -> list[str]:
    """Add the topics discovery found that the route has no row for yet; returns those added.

    A topic the operator paused or removed keeps its row untouched.
    """
    known = {t.topic for t in route_topics(session, route)}
    added = sorted(set(topics) - known)
    for topic in added:
        set_topic(session, route, topic, DesiredState.REPLICATE, AddedBy.DISCOVERY)
    return added


def replicated_topics(session: Session, route: str) -> frozenset[str]:
    """Source topics the route wants replicated and has copied (or discovery created a replica for)."""
    copied = {TopicStatus.REPLICATING, TopicStatus.STOPPED, TopicStatus.FAILED}
    return frozenset(
        t.topic for t in route_topics(session, route)
        if t.desired_state == DesiredState.REPLICATE and (t.status in copied or t.added_by == AddedBy.DISCOVERY)
    )


def record_sync_run(session: Session, run: SyncRun) -> int:
    """Store an applied sync run with its changes; returns its id."""
    row = SyncRunRow(route=run.route, step=run.step, status=run.status.value, started_at=run.started_at,
                     finished_at=run.finished_at, notes="\n".join(run.notes) or None)
    row.changes = [
        SyncChangeRow(position=i, kind=c.kind, resource=c.resource, detail=c.detail, outcome=c.outcome.value,
                      error=c.error)
        for i, c in enumerate(run.changes)
    ]
    session.add(row)
    session.flush()
    return row.id


def sync_runs(session: Session, route: str, step: str | None = None, limit: int = 20) -> list[SyncRun]:
    """The route's latest sync runs (of ``step`` when given), newest first."""
    query = select(SyncRunRow).where(SyncRunRow.route == route)
    if step is not None:
        query = query.where(SyncRunRow.step == step)
    rows = session.scalars(query.order_by(SyncRunRow.started_at.desc(), SyncRunRow.id.desc()).limit(limit))
    return [_sync_run(row) for row in rows]



def _sync_run(row: SyncRunRow) -> SyncRun:
    return SyncRun(
        route=row.route,
        step=row.step,
        started_at=utc(row.started_at),
        finished_at=utc(row.finished_at),
        changes=tuple(SyncChange(c.kind, c.resource, c.detail, Outcome(c.outcome), c.error) for c in row.changes),
        notes=tuple(row.notes.splitlines()) if row.notes else (),
    )
