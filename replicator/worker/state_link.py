"""The worker's view of the state DB: topics added or removed by hand, statuses, losses.

A state DB hiccup never stops replication: every call logs and carries on.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from replicator.config import RouteConfig
from replicator.domain.route_topic import AddedBy, DesiredState, RouteTopic, TopicStatus
from replicator.errors import ConfigError, StateStoreError
from replicator.state import repository

if TYPE_CHECKING:
    from replicator.state.store import StateStore

log = logging.getLogger(__name__)
T = TypeVar("T")


class StateLink:
    """Reads and writes the route's rows in the process's one StateStore (or none)."""

    def __init__(self, route: RouteConfig, store: StateStore | None) -> None:
        self.route, self._store = route, store

    def manual_topics(self) -> tuple[set[str], set[str]]:
        """Topics added (replicate) and removed/paused by ``mirrorflow topics``."""
        def work(session: Session) -> list[RouteTopic]:
            try:
                return repository.route_topics(session, self.route.name)
            except ConfigError:
                return []  # a route no worker has registered yet: nothing was added or removed by hand

        rows = self._run(work) or []
        added = {r.topic for r in rows if r.desired_state == DesiredState.REPLICATE and r.added_by == AddedBy.CLI}
        return added, {r.topic for r in rows if r.desired_state != DesiredState.REPLICATE}

    def held(self) -> str | None:
        """Why the route must stop now: a failover holds it (None: it may run, or the DB did not answer)."""
        from replicator.state.failovers import route_hold

        hold = self._run(lambda session: route_hold(session, self.route.name))
        if hold is None:
            return None
        return (f"failover run {hold.run_id} moved the applications to {hold.target!r} while this worker ran: "
                f"it stopped (copying {self.route.source!r} onto {hold.target!r} now would mix old records into "
                "what they read)")

    def replicating(self, started: list[str], stopped: list[str]) -> None:
        """Record which topics the route now copies, and which it stopped copying."""
        def work(session: Session) -> None:
            known = {r.topic for r in repository.route_topics(session, self.route.name)}
            for topic in started:
                if topic not in known:
                    repository.set_topic(session, self.route.name, topic, DesiredState.REPLICATE, AddedBy.CONFIG)
                repository.report_status(session, self.route.name, topic, TopicStatus.REPLICATING)
            for topic in set(stopped) & known:
                repository.report_status(session, self.route.name, topic, TopicStatus.STOPPED)

        self._run(work)

    def recreated(self, topic: str, detail: str) -> None:
        """Note on the topic's row that it was deleted and created again, and is copied anew."""
        self._run(lambda session: repository.report_status(
            session, self.route.name, topic, TopicStatus.REPLICATING, detail))

    def data_loss(self, topic: str, partition: int, lost: tuple[int, int]) -> None:
        """Store an exact lost range."""
        self._run(lambda session: repository.record_data_loss(session, self.route.name, topic, partition, lost))

    def _run(self, work: Callable[[Session], T]) -> T | None:
        if self._store is None:
            return None
        try:
            return self._store.run(work)
        except (StateStoreError, SQLAlchemyError) as exc:
            log.warning("state DB write skipped route=%s error=%s", self.route.name, exc)
            return None
