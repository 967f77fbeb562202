"""Kafka transactions as a FakeCluster keeps them: a transaction coordinator, producer epochs, markers.

What the fakes mirror of Kafka (KIP-98, KIP-447):

- ``init`` registers a transactional id and bumps its epoch: the open transaction of the
  previous holder is aborted, and that holder is fenced from then on.
- A transaction's records are written to the logs at once (tagged with its number), but
  a ``read_committed`` reader stops at the first record of a transaction still open in
  that partition (the last stable offset) and skips aborted records.
- Ending a transaction writes a marker (an offset with no record) after its records in
  each partition it wrote; a commit also makes the offsets sent to it committed in their
  groups, an abort leaves them as they were. While they are pending, a ``committed()``
  of those partitions does not answer (Kafka's ``require_stable``).
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from confluent_kafka import KafkaException

if TYPE_CHECKING:
    from replicator.testing.cluster import FakeCluster

TP = tuple[str, int]
Offsets = dict[TP, tuple[int, str | None]]


@dataclass(slots=True)
class FakeTransaction:
    """One transaction of one producer epoch: the partitions it wrote and the group offsets sent to it."""

    number: int  # the records it wrote carry it
    transactional_id: str
    epoch: int
    partitions: set[TP] = field(default_factory=set)
    offsets: dict[str, Offsets] = field(default_factory=lambda: defaultdict(dict))
    state: str = "open"  # "open", "committed" or "aborted"


class Coordinator:
    """The transactional ids of one cluster, their epochs and open transactions, and what was aborted."""

    def __init__(self, cluster: FakeCluster) -> None:
        self.cluster = cluster
        self.epochs: dict[str, int] = {}
        self.open: dict[str, FakeTransaction] = {}  # by transactional id (at most one each)
        self.aborted: set[int] = set()  # numbers of aborted transactions: their records are never visible
        self.committed = 0  # how many transactions committed
        self._numbers = itertools.count(1)

    def init(self, transactional_id: str) -> int:
        """A producer starts with ``transactional_id``: the earlier holder's open transaction is aborted and
        the holder fenced. Returns the new epoch."""
        with self.cluster.lock:
            previous = self.open.get(transactional_id)
            if previous is not None:
                self.end(previous, commit=False)
            self.epochs[transactional_id] = self.epochs.get(transactional_id, -1) + 1
            return self.epochs[transactional_id]

    def fenced(self, transactional_id: str, epoch: int) -> bool:
        """True once a newer producer started with the same transactional id."""
        with self.cluster.lock:
            return self.epochs.get(transactional_id) != epoch

    def begin(self, transactional_id: str, epoch: int) -> FakeTransaction:
        """Open a transaction for the producer of ``epoch``."""
        with self.cluster.lock:
            txn = FakeTransaction(next(self._numbers), transactional_id, epoch)
            self.open[transactional_id] = txn
            return txn

    def end(self, txn: FakeTransaction, commit: bool) -> None:
        """Write the markers, then make the records and the offsets visible (commit), or neither (abort)."""
        with self.cluster.lock:
            for topic, partition in sorted(txn.partitions):
                try:
                    self.cluster.append_marker(topic, partition, txn.number)
                except KafkaException:  # the topic was deleted meanwhile
                    continue
            if commit:
                for group_id, offsets in txn.offsets.items():
                    self.cluster.group(group_id).committed.update(offsets)
                self.committed += 1
            else:
                self.aborted.add(txn.number)
            txn.state = "committed" if commit else "aborted"
            if self.open.get(txn.transactional_id) is txn:
                del self.open[txn.transactional_id]

    def pending(self, group_id: str, key: TP) -> bool:
        """True while an open transaction holds offsets of ``group_id`` for ``key``."""
        with self.cluster.lock:
            return any(key in txn.offsets.get(group_id, {}) for txn in self.open.values())
