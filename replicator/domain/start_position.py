"""Where a route resumes on a source partition it was just given.

Never a silent jump (as MirrorMaker 2 does when retention deleted records it had
not copied yet): the decision says which records were lost, and why.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Reason(StrEnum):
    """Why the route starts where it starts."""

    RESUME = "resume"  # from the route's committed offset
    NEW = "new"  # never replicated: the route's `start` setting decides
    RETENTION = "retention"  # records vanished before they were copied
    RESET = "reset"  # committed offset beyond the log end: the topic was recreated or truncated


@dataclass(frozen=True, slots=True)
class StartDecision:
    """The offset to start at; ``lost`` is the half-open source range ``[from, to)`` never copied."""

    offset: int
    reason: Reason
    lost: tuple[int, int] | None = None


def start_position(
    committed: int | None, low: int, high: int, start: str, timestamp_offset: int | None = None
) -> StartDecision:
    """Decide from the route's committed offset and the partition's ``[low, high)`` watermarks.

    ``start`` is ``earliest``, ``latest`` or ``timestamp`` (then ``timestamp_offset`` is the
    first offset at or after the route's start time, or None if there is none yet).
    """
    if committed is None:
        if start == "latest":
            return StartDecision(high, Reason.NEW)
        if start == "timestamp":
            return StartDecision(high if timestamp_offset is None else timestamp_offset, Reason.NEW)
        return StartDecision(low, Reason.NEW)
    if committed < low:
        return StartDecision(low, Reason.RETENTION, (committed, low))
    if committed > high:
        return StartDecision(low, Reason.RESET)
    return StartDecision(committed, Reason.RESUME)
