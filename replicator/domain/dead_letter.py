"""Records the target refuses, set aside in a dead-letter topic with where they came from.

A route with ``on_refused_record: dead-letter`` checks each record against the
limit of its target topic (``max.message.bytes``) before producing it. A record
that cannot fit goes to the dead-letter topic on the target instead, carrying its
key, its headers and, when the dead-letter topic can hold it, its value; headers
named ``mirrorflow.dead-letter.*`` say which source record it is and why.

The size checked is the record *before* compression: a record that only fits
once compressed goes to the dead-letter topic too (the producer's codec is not
something to bet a record on).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

HEADER_PREFIX = "mirrorflow.dead-letter."
# A record batch's header (61 bytes) plus one record's framing: length, attributes,
# timestamp and offset deltas, key and value lengths, header count (varints, at most 21).
BATCH_OVERHEAD = 61 + 21
HEADER_OVERHEAD = 10  # two length varints per header, rounded up

Headers = Sequence[tuple[str, bytes | None]] | None


def record_size(key: bytes | None, value: bytes | None, headers: Headers) -> int:
    """An upper bound of the bytes one record takes in a batch of its own, uncompressed."""
    size = BATCH_OVERHEAD + len(key or b"") + len(value or b"")
    for name, header_value in headers or ():
        size += len(name.encode()) + len(header_value or b"") + HEADER_OVERHEAD
    return size


def may_not_fit(value_length: int, limit: int) -> bool:
    """Cheap first test for the hot path: only a value over half the limit needs ``record_size``."""
    return value_length > limit // 2


def dead_letter_topic_name(route: str, configured: str | None = None) -> str:
    """The route's dead-letter topic on the target (``*.internal``: never replicated by default)."""
    return configured or f"mirrorflow-dead-letter.{route}.internal"


@dataclass(frozen=True, slots=True)
class RefusedRecord:
    """Which source record was set aside, and why."""

    source_cluster: str
    topic: str
    partition: int
    offset: int
    timestamp: int | None
    size: int
    reason: str


def dead_letter_headers(refused: RefusedRecord, original: Headers,
                        value_kept: bool) -> list[tuple[str, bytes | None]]:
    """The record's own headers, then ours (later headers never shadow the record's)."""
    ours = {
        "source-cluster": refused.source_cluster,
        "topic": refused.topic,
        "partition": str(refused.partition),
        "offset": str(refused.offset),
        "timestamp": "" if refused.timestamp is None else str(refused.timestamp),
        "size": str(refused.size),
        "reason": refused.reason,
        "value": "kept" if value_kept else "omitted",
    }
    return [*(original or ()), *((HEADER_PREFIX + name, text.encode()) for name, text in ours.items())]
