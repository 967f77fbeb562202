"""Which of a route's clusters answer, and which of its chores keep failing: each change logged once.

A worker rides out a cluster that does not answer (librdkafka retries; the loop keeps
what it has); an operator needs one line when that starts and one when it ends, not a
line per retry.
"""

from __future__ import annotations

import logging

from confluent_kafka import KafkaError, KafkaException

from replicator.config import RouteConfig
from replicator.kafka.refusal import refusal
from replicator.worker import metrics

log = logging.getLogger(__name__)

UNREACHABLE = (KafkaError._ALL_BROKERS_DOWN, KafkaError._TRANSPORT, KafkaError._AUTHENTICATION, KafkaError._SSL)


def group_out_of_reach(error: KafkaError) -> bool:
    """Whether ``error`` says the group's coordinator is out of reach: every broker down, the login refused, or
    the coordinator's own connection broken (librdkafka names it "GroupCoordinator"). One broker's connection
    closed while others answer (an idle one, a broker restarting in a cluster of several) is not."""
    code = error.code()
    return code in (KafkaError._ALL_BROKERS_DOWN, KafkaError._AUTHENTICATION) or (
        code == KafkaError._TRANSPORT and error.str().startswith("GroupCoordinator"))


class Links:
    """The state of one route's links to its source and target clusters."""

    def __init__(self, route: RouteConfig) -> None:
        self.route = route
        self.down: set[str] = set()  # "source"/"target" while unreachable
        self.troubles: dict[str, str] = {}  # chores that keep failing (topic refresh, placing) -> last reason

    def error(self, side: str, error: KafkaError) -> str | None:
        """librdkafka reported ``error`` for one side; the reason the route must stop, if it must."""
        if error.code() in UNREACHABLE and side not in self.down:
            self.down.add(side)
            metrics.ERRORS.labels(self.route.name, f"{side}_unreachable").inc()
            cause = refusal(error)
            if cause is not None:  # up, but refusing us (a rotated password, an expired certificate): act on it
                log.error("%s cluster refuses the worker, retrying (nothing new is committed) route=%s cluster=%s"
                          " cause=%r", side, self.route.name, getattr(self.route, side), cause)
            else:
                log.warning("%s cluster unreachable, retrying (nothing new is committed) route=%s cluster=%s"
                            " error=%r", side, self.route.name, getattr(self.route, side), error.str())
        elif error.fatal() or error.code() == KafkaError._FATAL:
            return f"{side} client: {error.str()}"
        return None

    def up(self, side: str) -> None:
        """Something came from ``side``: it answers."""
        if side in self.down:
            self.down.discard(side)
            log.warning("%s cluster reachable again route=%s cluster=%s", side, self.route.name,
                        getattr(self.route, side))

    def trouble(self, what: str, exc: Exception) -> None:
        """A chore failed; it is retried by the caller."""
        reason = exc.args[0].str() if isinstance(exc, KafkaException) else str(exc)
        if what not in self.troubles:
            log.warning("%s failed, retrying (replication of what is placed goes on) route=%s error=%r",
                        what, self.route.name, reason)
        self.troubles[what] = reason

    def clear(self, what: str) -> None:
        """The chore worked."""
        if self.troubles.pop(what, None) is not None:
            log.warning("%s works again route=%s", what, self.route.name)
