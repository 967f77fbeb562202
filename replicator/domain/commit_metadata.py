"""What a worker writes into the metadata of each offset it commits on the source.

Two facts travel with the offset: when it was stored (``mirrorflow status`` shows
it as "last replicated") and the id of the topic it counts records of. A topic
deleted and created again under the same name gets a new id, so an offset whose
id differs from the topic's current one belongs to the deleted topic and must
not be used as a position in the new one.

Format: ``<epoch ms>`` or ``<epoch ms> <topic id>``; anything else reads as unknown.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class CommitNote:
    """The decoded metadata of a committed offset (fields None when absent or unreadable)."""

    stored_at_ms: int | None
    topic_id: str | None


def encode_note(stored_at_ms: int, topic_id: str | None) -> str:
    """The metadata string for an offset stored at ``stored_at_ms`` of topic ``topic_id``."""
    return f"{stored_at_ms} {topic_id}" if topic_id else str(stored_at_ms)


def decode_note(metadata: str | None) -> CommitNote:
    """Read what ``encode_note`` wrote; tolerant of empty or foreign metadata."""
    parts = (metadata or "").split()
    if not parts or not parts[0].isdigit() or len(parts) > 2:
        return CommitNote(None, None)
    return CommitNote(int(parts[0]), parts[1] if len(parts) == 2 else None)


def belongs_to_other_topic(note: CommitNote, current_topic_id: str | None) -> bool:
    """True when the offset was committed for an earlier topic of the same name."""
    return note.topic_id is not None and current_topic_id is not None and note.topic_id != current_topic_id
