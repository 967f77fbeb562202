"""The worker's view of the state DB: topics added or removed by hand, statuses, losses."""

from __future__ import annotations

import logging

from typing import TYPE_CHECKING

from replicator.config import RouteConfig
from replicator.domain.route_topic import AddedBy, DesiredState, TopicStatus
from replicator.errors import StateStoreError

if TYPE_CHECKING:
    from replicator.state.store import StateStore

log = logging.getLogger(__name__)


class StateLink:
    """Reads and writes the route's rows; a state DB hiccup never stops replication."""

    def __init__(self, route: RouteConfig, store: StateStore | None) -> None:
        # One store per process, migrated before the workers start (shared by their threads).
        self.route, self._store = route, store

    def manual_topics(self) -> tuple[set[str], set[str]]:
        """Topics added (replicate) and removed/paused by ``mirrorflow topics``."""
        from replicator.state.repository import route_topics

        if self._store is None:
            return set(), set()
        try:
            with self._store.session() as session:
                rows = route_topics(session, self.route.name)
        except StateStoreError as exc:
            log.warning("state DB unavailable, keeping the topic list route=%s error=%s", self.route.name, exc)
            return set(), set()
        added = {r.topic for r in rows if r.desired_state == DesiredState.REPLICATE and r.added_by == AddedBy.CLI}
        return added, {r.topic for r in rows if r.desired_state != DesiredState.REPLICATE}

    def replicating(self, started: list[str], stopped: list[str]) -> None:
        """Record which topics the route now copies, and which it stopped copying."""
        from replicator.state.repository import report_status, route_topics, set_topic

        if self._store is None:
            return
        with self._store.session() as session:
            known = {r.topic: r for r in route_topics(session, self.route.name)}
            for topic in started:
                if topic not in known:
                    set_topic(session, self.route.name, topic, DesiredState.REPLICATE, AddedBy.CONFIG)
                report_status(session, self.route.name, topic, TopicStatus.REPLICATING)
            for topic in stopped:
                if topic in known:
                    report_status(session, self.route.name, topic, TopicStatus.STOPPED)

    def data_loss(self, topic: str, partition: int, lost: tuple[int, int]) -> None:
        """Store an exact lost range."""
        from replicator.state.repository import record_data_loss

        if self._store is not None:
            with self._store.session() as session:
                record_data_loss(session, self.route.name, topic, partition, lost)
