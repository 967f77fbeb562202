"""Closing a route worker's clients of the group: bounded, and a client whose close does not return is left
behind, its late callbacks ignored.

A consumer that stopped getting answers may block in its close for good (its leave, or its last commit, waiting
for a coordinator; seen: an exactly-once worker's source consumer after a clean restart of the source broker).
The worker gives each close a bound and goes on without one that does not return.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from confluent_kafka import Consumer, KafkaException

from replicator.kafka.clients import close_within

if TYPE_CHECKING:
    from replicator.config import RouteConfig
    from replicator.worker.timeouts import WorkerTimeouts

log = logging.getLogger(__name__)


class ClientCloser:
    """GroupMember's base: closing its clients. The attributes below are the worker's (set in its ``__init__``)."""

    route: RouteConfig
    timeouts: WorkerTimeouts
    _abandoned: set[int]  # ids of clients whose close did not return (left behind): their late callbacks ignored
    closing: bool  # a client of the group is being closed: its callbacks run in that close (``closing_a_client``)

    def _close_client(self, client: Consumer, what: str, wedged: bool, hands_over: bool = True) -> None:
        """Close a consumer of this worker. One that stopped getting answers may block in its close for good (seen:
        an exactly-once worker's source consumer after a clean restart of the source broker): given
        ``timeouts.close`` s (after the hand-over's, for a group member: ``hands_over``), then left behind, its
        late callbacks ignored; the worker goes on with a new one."""
        if not wedged:
            try:
                with self.closing_a_client():
                    client.close()
            except (KafkaException, RuntimeError) as exc:  # a consumer a fatal error left unusable
                log.debug("closing %s route=%s error=%s", what, self.route.name, exc)
            return
        # Its revocation (served by the close) hands over within ``handover`` s first: waited for, so that no
        # callback of it runs once the worker goes on. A consumer assigned by hand has no revocation to wait for.
        wait = (self.timeouts.handover if hands_over else 0.0) + self.timeouts.close
        if not self._close_within(client, wait):
            log.warning("%s did not close in %.0f s: left behind, a new one takes over route=%s", what, wait,
                        self.route.name)

    def _close_to_stop(self, client: Consumer, what: str) -> None:
        """Close a client as the worker stops, given ``handover + close`` s: one that stopped getting answers can
        block in its close for good (its leave, or its last commit, waiting for a coordinator), and a stop must
        end. The worker then stops without it: the group gives its partitions to others once its session
        times out, and they copy from the last commit (duplicates, no loss)."""
        wait = self.timeouts.handover + self.timeouts.close
        if not self._close_within(client, wait):  # left behind: what it still calls back changes nothing
            log.warning("%s did not close in %.0f s: stopping without it; its partitions go to others once its "
                        "session times out route=%s", what, wait, self.route.name)

    def _close_within(self, client: Consumer, wait: float) -> bool:
        """``close_within``; a client that did not close in time is left behind before ``closing`` is unset, so that
        none of its late callbacks runs as a live client's."""
        with self.closing_a_client():
            closed = close_within(client.close, wait)
            if not closed:
                self._abandoned.add(id(client))
            return closed

    @contextmanager
    def closing_a_client(self) -> Iterator[None]:
        """Around every close of a client of the group: the callbacks that close serves must not call librdkafka's
        ``memberid`` (see ``Watches._released``) or ``consumer_group_metadata`` (see
        ``TargetMember._member_metadata``), which would wait for the close that waits for them."""
        self.closing = True
        try:
            yield
        finally:
            self.closing = False

    def _left_behind(self, client: Consumer) -> bool:
        """True for a client left behind by ``_close_client``: what it still calls back is not this worker's."""
        return id(client) in self._abandoned
