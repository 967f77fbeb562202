"""Checkpoints: a consumer group's committed source offsets, translated to the target.

For each source partition a group committed, the route's offset syncs of that
partition and the route's own committed offset there (``replicated_end``: every
record before it is on the target) give, through :func:`~replicator.domain.
offset_sync.translate`, where the group resumes on the target topic:

- ``exact``: at exactly the record after the last one it consumed;
- ``behind``: the route has not copied up to the group yet; resuming at the end of
  what was copied skips nothing and repeats at most ``max_repeats`` records (once
  the route copies them) -- never a skip;
- ``before-first-sync``: the group is before the first record the route copied
  (the route started later, or retention ran ahead of it): it resumes at that
  first copied record, the earlier ones were never on the target;
- ``unknown``: no sync of the partition yet (the route copied nothing of it), so
  no target offset. Such a checkpoint is reported, never stored or committed.

Checkpoint records (topic ``mirrorflow-checkpoints.<route>.internal`` on the target,
compacted) are keyed by group, source topic and partition, so compaction keeps the
latest checkpoint of each.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TypeAlias

from replicator.domain.offset_sync import (
    BeforeFirstSync,
    Behind,
    Exact,
    OffsetSync,
    Translation,
    Unknown,
    translate,
)
from replicator.domain.record_json import dump_json, load_json, name_field, offset_field

Partition: TypeAlias = tuple[str, int]  # (topic, partition)


class CheckpointStatus(StrEnum):
    """How good the translated offset is (see the module docstring)."""

    EXACT = "exact"
    BEHIND = "behind"
    BEFORE_FIRST_SYNC = "before-first-sync"
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """Group ``group`` committed ``source_offset`` on a source partition; it resumes at ``target_offset``."""

    group: str
    topic: str
    partition: int
    source_offset: int
    target_topic: str
    target_offset: int | None  # None only when ``status`` is unknown
    status: CheckpointStatus
    max_repeats: int = 0  # records that may be read twice (``behind`` only)

    @property
    def translated(self) -> bool:
        """True when the checkpoint has a target offset (anything but ``unknown``)."""
        return self.target_offset is not None

    def describe(self) -> str:
        """A few words for a table: ``exact``, ``<=3 may repeat``, ..."""
        if self.status == CheckpointStatus.BEHIND:
            return f"≤{self.max_repeats} may repeat"
        if self.status == CheckpointStatus.BEFORE_FIRST_SYNC:
            return "before first copied record"
        if self.status == CheckpointStatus.UNKNOWN:
            return "unknown: no offset sync yet"
        return "exact"


def to_checkpoint(
    group: str, partition: Partition, source_offset: int, target_topic: str, translation: Translation
) -> Checkpoint:
    """The checkpoint that ``translation`` of ``source_offset`` makes."""
    topic, number = partition
    if isinstance(translation, Exact):
        status, target, repeats = CheckpointStatus.EXACT, translation.target_offset, 0
    elif isinstance(translation, Behind):
        status, target, repeats = CheckpointStatus.BEHIND, translation.target_offset, translation.max_repeats
    elif isinstance(translation, BeforeFirstSync):
        status, target, repeats = CheckpointStatus.BEFORE_FIRST_SYNC, translation.target_offset, 0
    elif isinstance(translation, Unknown):
        status, target, repeats = CheckpointStatus.UNKNOWN, None, 0
    else:  # pragma: no cover - Translation is a closed union
        raise TypeError(f"not a translation: {translation!r}")
    return Checkpoint(group, topic, number, source_offset, target_topic, target, status, repeats)


def checkpoints_of_group(
    group: str,
    committed: Mapping[Partition, int],
    syncs: Mapping[Partition, Sequence[OffsetSync]],
    replicated_end: Mapping[Partition, int | None],
    target_topics: Mapping[str, str],
) -> list[Checkpoint]:
    """The group's checkpoints on the route, sorted by topic and partition.

    ``committed``: the group's committed source offsets (negative = none, skipped);
    ``syncs``: the route's syncs per source partition; ``replicated_end``: the route's
    committed offset per source partition; ``target_topics``: source topic -> its
    replica, for the route's topics only (the group's other topics are not the route's).
    """
    out = []
    for partition, offset in sorted(committed.items()):
        target_topic = target_topics.get(partition[0])
        if offset < 0 or target_topic is None:
            continue
        translation = translate(syncs.get(partition, ()), offset, replicated_end.get(partition))
        out.append(to_checkpoint(group, partition, offset, target_topic, translation))
    return out


def encode_checkpoint(checkpoint: Checkpoint, checkpointed_at_ms: int) -> tuple[bytes, bytes]:
    """Key and value of a translated checkpoint for the compacted checkpoints topic."""
    if checkpoint.target_offset is None:
        raise ValueError(f"checkpoint of group {checkpoint.group!r} {checkpoint.topic}-{checkpoint.partition} "
                         "has no target offset: only translated checkpoints are stored")
    key = [checkpoint.group, checkpoint.topic, checkpoint.partition]
    value = {
        "target_topic": checkpoint.target_topic,
        "source_offset": checkpoint.source_offset,
        "target_offset": checkpoint.target_offset,
        "status": checkpoint.status.value,
        "max_repeats": checkpoint.max_repeats,
        "checkpointed_at_ms": checkpointed_at_ms,
    }
    return dump_json(key), dump_json(value)


def decode_checkpoint(key: bytes, value: bytes) -> tuple[Checkpoint, int]:
    """The checkpoint and its time (epoch ms) of a checkpoints-topic record; ValueError naming the fault."""
    parts = load_json(key, "checkpoint key")
    if not (isinstance(parts, list) and len(parts) == 3):
        raise ValueError(f"checkpoint key: expected [group, topic, partition], got {parts!r}")
    group, topic, partition = parts
    fields = load_json(value, "checkpoint value")
    if not isinstance(fields, dict):
        raise ValueError(f"checkpoint value: expected an object, got {fields!r}")
    status = fields.get("status")
    if status not in {s.value for s in CheckpointStatus} or status == CheckpointStatus.UNKNOWN:
        raise ValueError(f"checkpoint value status: expected exact, behind or before-first-sync, got {status!r}")
    checkpoint = Checkpoint(
        name_field(group, "checkpoint key group"), name_field(topic, "checkpoint key topic"),
        offset_field(partition, "checkpoint key partition"),
        offset_field(fields.get("source_offset"), "checkpoint value source_offset"),
        name_field(fields.get("target_topic"), "checkpoint value target_topic"),
        offset_field(fields.get("target_offset"), "checkpoint value target_offset"),
        CheckpointStatus(status), offset_field(fields.get("max_repeats"), "checkpoint value max_repeats"),
    )
    return checkpoint, offset_field(fields.get("checkpointed_at_ms"), "checkpoint value checkpointed_at_ms")
