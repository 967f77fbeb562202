"""Where an exactly-once route resumes: the source positions its transactions commit on the target (pure).

An exactly-once route commits, in the same transaction as the records, the offsets of
a consumer group *on the target* (the route's membership group, see
``naming.positions_group_id``) for the target partitions it wrote: the committed
offset is the target's next offset, and its metadata names, for every source
partition copied into that target partition (several for a merged topic), the next
source offset to copy and the id of the topic it counts records of. Records and
positions become visible together, or not at all.

Metadata format (JSON, within the broker's ``offset.metadata.max.bytes``, 4 KiB by
default)::

    {"v": 1, "at": <epoch ms>, "s": [[<source topic>, <partition>, <next offset>, <topic id or null>], ...]}

A partition's resume point takes the furthest of two known positions: the target
group's (committed with the records) and the source group's (an at-least-once worker's
commit, or the copy an exactly-once worker writes there after each transaction for
``status``, lag and checkpoints). Both only ever name a record whose predecessors are on
the target, so the furthest repeats none and skips none; that is what makes switching
a route between the two guarantees safe in both directions. A position noted with
another topic id counts records of a deleted topic of the same name and is set aside.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from replicator.domain.commit_metadata import CommitNote, belongs_to_other_topic

VERSION = 1
TP = tuple[str, int]


@dataclass(frozen=True, slots=True)
class SourcePosition:
    """The next record to copy of one source partition, and the id of the topic it counts records of."""

    offset: int
    topic_id: str | None


def encode_positions(stored_at_ms: int, positions: Mapping[TP, SourcePosition]) -> str:
    """The metadata string carrying ``positions`` (sorted, so equal inputs encode equally)."""
    rows = [[topic, partition, p.offset, p.topic_id] for (topic, partition), p in sorted(positions.items())]
    return json.dumps({"v": VERSION, "at": stored_at_ms, "s": rows}, separators=(",", ":"))


def decode_positions(metadata: str | None) -> dict[TP, SourcePosition]:
    """The positions ``encode_positions`` wrote; empty for metadata it did not write (foreign or damaged:
    the caller then falls back to the source group's position)."""
    try:
        fields = json.loads(metadata or "")
    except ValueError:
        return {}
    if not isinstance(fields, dict) or fields.get("v") != VERSION or not isinstance(fields.get("s"), list):
        return {}
    found = {}
    for row in fields["s"]:
        if not (isinstance(row, list) and len(row) == 4):
            return {}
        topic, partition, offset, topic_id = row
        if not (isinstance(topic, str) and _offset(partition) and _offset(offset)
                and (topic_id is None or isinstance(topic_id, str))):
            return {}
        found[(topic, partition)] = SourcePosition(offset, topic_id)
    return found


def stored_at(metadata: str | None) -> int | None:
    """When the positions were committed (epoch ms), or None."""
    try:
        fields = json.loads(metadata or "")
    except ValueError:
        return None
    at = fields.get("at") if isinstance(fields, dict) else None
    return at if _offset(at) else None


def resume_position(candidates: Iterable[SourcePosition | None], current_topic_id: str | None) -> SourcePosition | None:
    """The furthest of the known positions of one partition that count records of the current topic; when
    every one counts records of a deleted topic, the furthest of those (the caller reports the recreation)."""
    known = [c for c in candidates if c is not None]
    usable = [c for c in known if not belongs_to_other_topic(CommitNote(None, c.topic_id), current_topic_id)]
    return max(usable or known, key=lambda c: c.offset, default=None)


def _offset(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0
