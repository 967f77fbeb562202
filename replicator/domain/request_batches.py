"""Requests split so that none carries more than a broker takes (pure).

Kafka's controller refuses a CreateTopics request of more than 10,000 partitions in all
("Excessively large number of partitions per request"): a route whose 2,500 topics of 4
partitions all existed when it started never created its replicas, its every topic refresh
refused whole. Its CreatePartitions takes 10,000 new partitions a request too (its records per
operation) and fails every topic after them. Creations and growths go in requests of at most
``PARTITIONS_PER_REQUEST`` new partitions.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

T = TypeVar("T")

BROKER_PARTITIONS_PER_REQUEST = 10_000  # Kafka's own bound (KRaft's controller)
PARTITIONS_PER_REQUEST = 5_000  # ours: half of it


def weighted_batches(items: Iterable[T], weight: Callable[[T], int],
                     limit: int = PARTITIONS_PER_REQUEST) -> Iterator[list[T]]:
    """``items`` in order, in batches whose weights sum to at most ``limit``; an item heavier than ``limit``
    goes alone (the broker then says what it refuses of it)."""
    batch: list[T] = []
    total = 0
    for item in items:
        heavy = weight(item)
        if batch and total + heavy > limit:
            yield batch
            batch, total = [], 0
        batch.append(item)
        total += heavy
    if batch:
        yield batch
