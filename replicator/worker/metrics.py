"""Prometheus metrics of a worker (``--metrics-port``), all prefixed ``mirrorflow_``.

The hot path counts into plain dicts and publishes once per loop iteration: a
prometheus_client call per record would cost more than the copy itself.
"""

from __future__ import annotations

import contextlib
from collections import Counter as Tally
from collections.abc import Iterable

from prometheus_client import Counter, Gauge, Histogram, start_http_server

RECORDS = Counter("mirrorflow_records_replicated", "Records acknowledged by the target", ["route", "topic"])
BYTES = Counter("mirrorflow_bytes_replicated", "Value bytes acknowledged by the target", ["route", "topic"])
LATENCY = Histogram(
    "mirrorflow_replication_latency_seconds",
    "Target acknowledgement time minus the source record's timestamp (sampled)",
    ["route"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300),
)
LAG = Gauge("mirrorflow_partition_lag", "Source end offset minus committed offset", ["route", "topic", "partition"])
ERRORS = Counter("mirrorflow_errors", "Errors by kind", ["route", "kind"])
COMMITS = Counter("mirrorflow_commits", "Offset commits to the source cluster", ["route", "result"])
LOST = Counter("mirrorflow_records_lost_to_retention",
               "Source records deleted by retention before the route copied them", ["route", "topic"])
RECREATED = Counter("mirrorflow_topics_recreated",
                    "Source partitions whose topic was deleted and created again (copied anew)", ["route", "topic"])
DEAD_LETTERS = Counter("mirrorflow_dead_letter_records",
                       "Source records the target could not take, written to the dead-letter topic", ["route", "topic"])
TRANSACTIONS = Counter("mirrorflow_transactions", "Transactions of an exactly-once route on the target, by outcome "
                       "(committed, aborted)", ["route", "result"])
GUARANTEE = Gauge("mirrorflow_route_guarantee", "1 for the delivery guarantee a running route gives",
                  ["route", "guarantee"])
OWNED = Gauge("mirrorflow_partition_owned", "1 for each source partition the group gave this worker (by its label: "
              "--worker-id@host:pid); the series goes when the partition is revoked or lost",
              ["route", "worker", "topic", "partition"])
ASSIGNED = Gauge("mirrorflow_assigned_partitions", "Source partitions assigned to this worker", ["route"])
RATE_LIMIT = Gauge("mirrorflow_rate_limit_bytes_per_second",
                   "This worker's share of the route's max_bytes_per_second (keys and values)", ["route"])
STUCK = Counter("mirrorflow_stuck_partitions_total", "Partitions found stuck (fetch position still while the "
                "source's end moved on for stuck_after s), by the remedy taken", ["route", "remedy"])
STUCK_NOW = Gauge("mirrorflow_partitions_stuck", "Owned partitions found stuck and not fetching since", ["route"])
HELD_APART = Gauge("mirrorflow_partitions_held_apart", "Owned partitions held apart: the target acknowledged none of "
                   "their records for 5 s; the others go on (worker.held_apart)", ["route"])
STATES = Gauge("mirrorflow_partitions_in_state", "Owned partitions per state (COPYING, CATCHING_UP, PAUSED, STUCK; "
               "see domain.partition_state)", ["route", "state"])
PAUSED = Gauge("mirrorflow_paused_partitions", "Assigned source partitions of topics the operator paused", ["route"])
# A turn waits at most ~50 ms when there is nothing to do (or the queue is full): longer turns are stalls.
LOOP_TURN = Histogram("mirrorflow_loop_turn_seconds", "Time of one turn of the worker's copy loop", ["route"],
                      buckets=(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30))
LOOP_TURN_REFRESHING = Histogram("mirrorflow_loop_turn_while_refreshing_seconds",
                                 "Time of one turn of the copy loop while a topic refresh runs beside it",
                                 ["route"], buckets=(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5))
TOPIC_REFRESH = Histogram("mirrorflow_topic_refresh_seconds",
                          "Time of one look at the clusters' topics (in a thread of its own, beside the loop)",
                          ["route"], buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60))


def serve(port: int) -> None:
    """Expose /metrics on ``port`` (all interfaces, as Prometheus scrapers expect)."""
    start_http_server(port)


def owned(route: str, worker: str, keys: Iterable[tuple[str, int]]) -> None:
    """These partitions are the worker's now."""
    for topic, partition in keys:
        OWNED.labels(route, worker, topic, str(partition)).set(1)


def disowned(route: str, worker: str, keys: Iterable[tuple[str, int]]) -> None:
    """These partitions are no longer the worker's: their series go (a gauge left behind would show a partition
    owned twice, and the old owner's last lag for it, on every dashboard that reads them)."""
    for topic, partition in keys:
        with contextlib.suppress(KeyError):  # never set (placing never finished): nothing to remove
            OWNED.remove(route, worker, topic, str(partition))
        with contextlib.suppress(KeyError):
            LAG.remove(route, topic, str(partition))


class RouteMeter:
    """Per-iteration tallies of one route, published in one go."""

    __slots__ = ("bytes", "records", "route")

    def __init__(self, route: str) -> None:
        self.route = route
        self.records: Tally[str] = Tally()
        self.bytes: Tally[str] = Tally()

    def publish(self) -> None:
        """Add the tallies to the exported counters and start over."""
        for topic, count in self.records.items():
            RECORDS.labels(self.route, topic).inc(count)
        for topic, size in self.bytes.items():
            BYTES.labels(self.route, topic).inc(size)
        self.records.clear()
        self.bytes.clear()
