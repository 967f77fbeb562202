"""Whether a copied record is old enough for the target's brokers to forget the producer that wrote it.

A Kafka broker drops a producer's state on a partition once the timestamp of its last batch there is
``producer.id.expiration.ms`` old, at its next look. The copy keeps the source's timestamps, so a record of a
day ago, written today, is forgotten at once: the partition's next batch is then a producer's first, and the
broker takes any sequence number (``InFlight.serial`` and ``docs/operations.md`` say what the worker does
about it). The margin allows for the clocks of the source's producers: an hour, or half of a shorter memory.
"""

from __future__ import annotations

MARGIN_S = 3600.0


def forgettable(timestamp_ms: int, now_s: float, forgets_s: float) -> bool:
    """A record stamped ``timestamp_ms`` (ms since the epoch), written at ``now_s``, to brokers that remember a
    producer ``forgets_s`` after its last record's timestamp: counted as forgotten."""
    return timestamp_ms < (now_s - forgets_s + min(MARGIN_S, forgets_s / 2)) * 1000
