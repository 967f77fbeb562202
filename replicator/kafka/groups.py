"""Consumer groups of a cluster: their ids, and asking again while a fresh coordinator settles (the runbooks,
and a worker's start, ask). How many members each has: replicator.kafka.group_members."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from replicator.errors import ClusterError

T = TypeVar("T")

# A fresh cluster's (or a new group's) coordinator answers these for a few seconds.
SETTLING = ("NOT_COORDINATOR", "COORDINATOR_LOAD_IN_PROGRESS", "COORDINATOR_NOT_AVAILABLE")
# A cluster that did not answer (down, cut off): worth asking again later, whatever librdkafka's flag says.
UNANSWERED = ("_TIMED_OUT", "_TRANSPORT", "_ALL_BROKERS_DOWN")


def settled(call: Callable[[], T], what: str, patience: float = 20.0) -> T:
    """``call()``, asked again while the coordinator settles; other Kafka errors as ClusterError naming ``what``."""
    deadline = time.monotonic() + patience
    while True:
        try:
            return call()
        except KafkaException as exc:
            error = exc.args[0]
            if error.name() in SETTLING and time.monotonic() < deadline:
                time.sleep(0.5)
                continue
            raise ClusterError(f"{what}: {error.name()}: {error.str()}",
                               retriable=error.retriable() or error.name() in SETTLING + UNANSWERED) from None


def list_groups(admin: AdminClient, what: str, timeout: float = 15.0) -> list[str]:
    """Every consumer group id of the cluster (``what`` names it in errors), sorted. A broker that answers
    with an error (its coordinator still loading, say) counts as the whole call failing: the list would
    lack that broker's groups."""
    def listing() -> list[str]:
        result = admin.list_consumer_groups(request_timeout=timeout).result(timeout + 5)
        if result.errors:
            raise KafkaException(result.errors[0])
        return sorted({g.group_id for g in result.valid})

    return settled(listing, f"{what}: list consumer groups")
