"""Committed offsets of a group, read and written by a client that never joins the group: the one reader and
writer of them (checkpoints, failover, failback, ``status``).

A consumer that never subscribes reads them with ``committed()`` and writes them with
``commit(offsets=...)`` -- a commit the broker refuses (``UNKNOWN_MEMBER_ID``) when
the group has members, which is what keeps an active group from being overwritten.
Many groups at once (a checkpoint) are read by ``AdminClient.list_consumer_group_offsets``
in a child process (``committed_of_groups``): with confluent-kafka 2.16 that call crashed
the process (SIGSEGV) while a fresh cluster's group coordinator was still loading.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any, TypeVar

from confluent_kafka import Consumer, TopicPartition

from replicator.domain.checkpoint import Partition
from replicator.errors import ClusterError
from replicator.kafka.clients import admin_settings
from replicator.kafka.group_members import ClientDied, committed_offsets
from replicator.kafka.groups import settled

log = logging.getLogger(__name__)

T = TypeVar("T")

# Groups read or written at the same time, one client each: their connections, coordinator look-ups and round
# trips overlap. Beyond a few the run is bound by CPU (each client's and the brokers'), not by waiting: a
# 1,000-group checkpoint on two cores took about as long with 32 at once as with 8 (bench/README.md).
GROUPS_AT_ONCE = 8
# Partitions asked in one ``committed()`` call. librdkafka matches each partition of the answer against the
# request's list one by one, so a call's cost grows with the square of its size: at 2,000 partitions the
# client spent 40 ms of CPU per group, asked 200 at a time 11 ms (bench/README.md, 2026-11-28).
PARTITIONS_PER_REQUEST = 200


def _client(properties: Mapping[str, str], group: str) -> Any:
    return Consumer({**admin_settings(properties), "group.id": group, "enable.auto.commit": "false"})


def read_committed(properties: Mapping[str, str], group: str, partitions: Iterable[Partition],
                   what: str, timeout: float = 15.0) -> dict[Partition, int]:
    """The group's committed offset of each partition that has one (``what`` names the cluster in errors)."""
    return Asked(partitions).committed(properties, group, what, timeout)


class Asked:
    """Partitions whose committed offsets are asked of group after group: their requests are made once."""

    def __init__(self, partitions: Iterable[Partition]) -> None:
        wanted = [TopicPartition(topic, number) for topic, number in sorted(set(partitions))]
        self.requests = [wanted[start:start + PARTITIONS_PER_REQUEST]
                         for start in range(0, len(wanted), PARTITIONS_PER_REQUEST)]

    def answers(self, properties: Mapping[str, str], group: str, what: str, timeout: float = 15.0,
                patience: float = 20.0) -> list[TopicPartition]:
        """The broker's answer for each partition asked: its offset (negative: none), commit metadata and
        error. Asked again for ``patience`` seconds while the group's coordinator settles; ClusterError naming
        ``what`` when the request fails."""
        if not self.requests:
            return []
        consumer = _client(properties, group)
        found: list[TopicPartition] = []
        try:
            for request in self.requests:
                found += settled(partial(consumer.committed, request, timeout=timeout),
                                 f"{what}: committed offsets of group {group!r}", patience)
        finally:
            consumer.close()
        return found

    def committed(self, properties: Mapping[str, str], group: str, what: str,
                  timeout: float = 15.0) -> dict[Partition, int]:
        """The group's committed offset of each partition that has one (``what`` names the cluster in errors)."""
        out = {}
        for tp in self.answers(properties, group, what, timeout):
            if tp.error is not None and tp.error.name() != "UNKNOWN_TOPIC_OR_PART":
                raise ClusterError(f"{what}: committed offset of group {group!r} on {tp.topic}-{tp.partition}: "
                                   f"{tp.error.name()}: {tp.error.str()}", retriable=tp.error.retriable())
            if tp.error is None and tp.offset >= 0:
                out[(tp.topic, tp.partition)] = tp.offset
        return out


def commit(properties: Mapping[str, str], group: str, offsets: Mapping[Partition, int], what: str) -> None:
    """Commit ``offsets`` for ``group`` without joining it; ClusterError when the broker refuses any."""
    if not offsets:
        return
    wanted = [TopicPartition(topic, number, offset) for (topic, number), offset in sorted(offsets.items())]
    consumer = _client(properties, group)
    try:
        done = settled(lambda: consumer.commit(offsets=wanted, asynchronous=False),
                       f"{what}: commit of group {group!r}")
    finally:
        consumer.close()
    refused = [tp for tp in done or () if tp.error is not None]
    if refused:
        first = refused[0]
        raise ClusterError(f"{what}: commit of group {group!r} on {first.topic}-{first.partition}: "
                           f"{first.error.name()}: {first.error.str()}")
    log.info("committed group=%s partitions=%d cluster=%s", group, len(wanted), what)


def committed_of_groups(properties: Mapping[str, str], groups: Iterable[str], partitions: Iterable[Partition],
                        what: str, timeout: float = 15.0) -> dict[str, dict[Partition, int]]:
    """Each group's committed offset of each of ``partitions`` that has one, by group in the groups' order.

    Asked once per group naming no partition, so the broker answers with the group's own (a checkpoint of 1,000
    groups over a route of 2,000 partitions: 0.3-0.7 s instead of 9-11 s, bench/README.md), by a child process
    (``group_members``: the admin call that does it crashed librdkafka on a loading coordinator). When that
    child's client dies, the partitions are asked group by group as ``read_committed`` does."""
    ordered, wanted = list(dict.fromkeys(groups)), set(partitions)
    try:
        found = committed_offsets(properties, ordered, {topic for topic, _ in wanted}, what, timeout)
    except ClientDied as died:
        log.warning("the groups' offsets are read partition by partition: %s", died)
        asked = Asked(wanted)
        return for_each_group(lambda group: asked.committed(properties, group, what, timeout), ordered)
    return {group: {p: offset for p, offset in found[group].items() if p in wanted} for group in ordered}


def for_each_group(work: Callable[[str], T], groups: Iterable[str]) -> dict[str, T]:
    """``work(group)`` for each group, ``GROUPS_AT_ONCE`` at a time; the results by group, in the groups'
    order. The first error ``work`` raised is raised (once every group started has finished)."""
    ordered = list(dict.fromkeys(groups))
    if len(ordered) <= 1:
        return {group: work(group) for group in ordered}
    with ThreadPoolExecutor(min(GROUPS_AT_ONCE, len(ordered)), thread_name_prefix="group") as pool:
        return dict(zip(ordered, pool.map(work, ordered), strict=True))
