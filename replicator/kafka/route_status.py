"""Where each route stands: per source partition, end offset, committed offset, lag, last copy."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from confluent_kafka import KafkaException, TopicPartition
from confluent_kafka.admin import OffsetSpec

from replicator.config import Config, RouteConfig
from replicator.domain.commit_metadata import decode_note
from replicator.domain.naming import group_id
from replicator.domain.partition_state import Facts, PartitionState, state_of
from replicator.domain.route_topic import DesiredState
from replicator.domain.topic_selection import select_topics
from replicator.errors import ClusterError, ConfigError
from replicator.kafka.admin import ANSWER_GRACE_S, connected_admin
from replicator.kafka.clients import admin_settings
from replicator.kafka.group_offsets import Asked
from replicator.kafka.groups import SETTLING
from replicator.kafka.topics import source_partitions

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

    from replicator.state.transaction_counts import TransactionTotals



@dataclass(frozen=True, slots=True)
class PartitionStatus:
    """One source partition of a route."""

    route: str
    topic: str
    partition: int
    end_offset: int
    committed: int | None
    last_replicated: dt.datetime | None
    guarantee: str = "at-least-once"  # the route's: exactly-once positions commit with the records

    @property
    def lag(self) -> int:
        """Records on the source not yet copied (all of them when nothing was committed)."""
        return self.end_offset - (self.committed or 0)


def route_status(config: Config, route: RouteConfig, timeout: float = 15.0) -> list[PartitionStatus]:
    """Ask the source cluster for the route's committed offsets and the partitions' ends."""
    try:
        admin = connected_admin(admin_settings(config.cluster(route.source).client_properties()), min(timeout, 5.0))
    except ClusterError as exc:  # refused (named), or not answering
        raise ClusterError(f"route {route.name}: source {route.source!r} "
                           f"({config.cluster(route.source).bootstrap_servers}): {exc}",
                           retriable=exc.retriable) from None
    policy = config.policy(route)
    try:
        added, removed = _manual_topics(config, route)
        topics = select_topics(source_partitions(admin, timeout), route.topic_filter, policy, route.target,
                               added, removed)
        partitions = [TopicPartition(t, p) for t, n in topics.partitions.items() for p in range(n)]
        if not partitions:
            return []
        # confluent-kafka leaves OffsetSpec.latest() unannotated.
        latest = OffsetSpec.latest()  # type: ignore[no-untyped-call]
        # Asked first: the ends are read by the admin's own thread while the group's offsets are.
        ends = admin.list_offsets({tp: latest for tp in partitions}, request_timeout=timeout)
        committed = Asked((tp.topic, tp.partition) for tp in partitions).answers(
            config.cluster(route.source).client_properties(), group_id(route),
            f"route {route.name}: source {route.source!r}", timeout, patience=0.0)
        end_of = {(tp.topic, tp.partition): f.result(timeout + ANSWER_GRACE_S).offset for tp, f in ends.items()}
    except TimeoutError:
        raise ClusterError(f"route {route.name}: source {route.source!r}: no answer in "
                           f"{timeout + ANSWER_GRACE_S:.0f} s", retriable=True) from None
    except KafkaException as exc:
        error = exc.args[0]
        raise ClusterError(f"route {route.name}: source {route.source!r}: {error.str()}",
                           retriable=error.retriable() or error.name() in SETTLING) from None
    return [
        PartitionStatus(route.name, tp.topic, tp.partition, end_of[(tp.topic, tp.partition)],
                        tp.offset if tp.offset >= 0 else None, _stored_at(tp.metadata), route.guarantee)
        for tp in sorted(committed, key=lambda t: (t.topic, t.partition))
    ]


def _manual_topics(config: Config, route: RouteConfig) -> tuple[set[str], set[str]]:
    """Topics added or removed by ``mirrorflow topics`` (the workers read the same rows)."""
    from replicator.state.route_link import StateLink
    from replicator.state.store import StateStore

    with StateStore(config.state.url) as store:
        return StateLink(route, store).manual_topics()


def retention_losses(config: Config, route: RouteConfig) -> dict[tuple[str, int], list[tuple[int, int]]] | None:
    """Per source partition, the offset ranges [from, to) retention deleted before the route copied them, as its
    workers recorded them in the state DB (None when the DB does not answer)."""
    from replicator.state.route_link import StateLink
    from replicator.state.store import StateStore

    with StateStore(config.state.url) as store:
        rows = StateLink(route, store).data_losses()
    if rows is None:
        return None
    out: dict[tuple[str, int], list[tuple[int, int]]] = {}
    for topic, partition, lost_from, lost_to in rows:
        out.setdefault((topic, partition), []).append((lost_from, lost_to))
    return out


def transaction_totals(config: Config, route: RouteConfig) -> TransactionTotals | None:
    """An exactly-once route's transactions committed and aborted, as its workers stored them in the state DB
    (None when the DB does not answer)."""
    from replicator.state.route_link import StateLink
    from replicator.state.store import StateStore

    with StateStore(config.state.url) as store:
        return StateLink(route, store).transaction_totals()


def _stored_at(metadata: str | None) -> dt.datetime | None:
    """The workers put the store time (epoch ms) in the commit metadata."""
    millis = decode_note(metadata).stored_at_ms
    return None if millis is None else dt.datetime.fromtimestamp(millis / 1000, tz=dt.UTC)


def partition_owners(config: Config, route: RouteConfig) -> dict[tuple[str, int], str]:
    """(topic, partition) -> the running worker that placed it (empty when none, or the state DB is away)."""
    from replicator.state import repository
    from replicator.state.route_link import StateLink
    from replicator.state.store import StateStore

    with StateStore(config.state.url) as store:
        found = StateLink(route, store).read(lambda session: repository.partition_owners(session, route.name))
    return {key: worker for key, (worker, _) in (found or {}).items()}


def partition_states(config: Config, route: RouteConfig, rows: list[PartitionStatus],
                     losses: dict[tuple[str, int], list[tuple[int, int]]] | None
                     ) -> dict[tuple[str, int], tuple[PartitionState, str | None]]:
    """Each row's state in the one vocabulary (``domain.partition_state``): the lag measured now, and what the
    state DB holds -- a failover's hold, the operator's pauses, what workers found (FAULTED, STUCK), losses,
    recreated topics. The DB away: states from the lag alone."""
    from replicator.state import repository
    from replicator.state.failovers import route_hold
    from replicator.state.route_link import StateLink
    from replicator.state.store import StateStore

    def read(session: Session) -> tuple[str | None, set[str], set[str], dict[str, str], dict[tuple[str, int], Any]]:
        hold = route_hold(session, route.name)
        held = None if hold is None else (f"to {hold.target!r} by failover run {hold.run_id} since "
                                          f"{hold.stopped_at.isoformat(timespec='seconds')}")
        try:
            topics = repository.route_topics(session, route.name)
        except ConfigError:
            topics = []
        paused = {t.topic for t in topics if t.desired_state == DesiredState.PAUSED}
        moved = {t.topic for t in topics if t.desired_state == DesiredState.FAILED_OVER}
        recreated = {t.topic: t.status_detail for t in topics
                     if t.status_detail and "created again" in t.status_detail}
        return held, paused, moved, recreated, repository.partition_states(session, route.name)

    with StateStore(config.state.url) as store:
        known = StateLink(route, store).read(read)
    held, paused, moved, recreated, recorded = known if known is not None else (None, set(), set(), {}, {})
    out = {}
    for s in rows:
        key = (s.topic, s.partition)
        found = recorded.get(key)
        out[key] = state_of(Facts(
            s.lag, s.committed, held or ("its topic, by a per-topic failover" if s.topic in moved else None),
            None if found is None else (PartitionState(found[0]), found[1]),
            s.topic in paused, (losses or {}).get(key, ()), recreated.get(s.topic)))
    return out
