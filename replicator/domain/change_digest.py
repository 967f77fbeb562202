"""The changes of a set of partitions, told at a bounded rate (pure).

Partitions held apart come and go one look at a time: at 1,000 partitions a target that restarts, or that is slow
to create their logs, held some and let others go every second, and each look was a warning line (a worker's log of
a fault run at 250 topics x 4: 262 of its 380 lines). A ``ChangeDigest`` tells at once when the set stops being
empty and when it becomes empty again -- the start and the end of the trouble -- and in between at most one digest
per ``every`` s of what came and went.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

TP = tuple[str, int]


@dataclass(frozen=True, slots=True)
class Digest:
    """What to tell: the partitions that came (``added``) and went (``removed``) since the last digest, and how
    many are in the set now. ``first``: the set was empty at the last digest; a partition both came and went in
    between is in both."""

    added: tuple[TP, ...]
    removed: tuple[TP, ...]
    size: int
    first: bool
    seconds: float  # since the last digest

    @property
    def empty(self) -> bool:
        """Nothing is in the set now."""
        return self.size == 0


@dataclass(slots=True)
class ChangeDigest:
    """``note`` each look's changes; it answers a ``Digest`` when there is one to tell."""

    every: float = 10.0
    _added: set[TP] = field(default_factory=set)
    _removed: set[TP] = field(default_factory=set)
    _told_size: int = 0  # the set's size at the last digest
    _told_at: float | None = None

    def note(self, added: Iterable[TP], removed: Iterable[TP], size: int, now: float) -> Digest | None:
        """Record ``added`` and ``removed`` (``size``: the set's size after them); a digest when the set stopped
        being empty, became empty, or ``every`` s have passed since the last one with changes pending."""
        self._added.update(added)
        self._removed.update(removed)
        if not self._added and not self._removed:
            return None
        since = None if self._told_at is None else now - self._told_at
        due = (self._told_size == 0 and size > 0) or size == 0 or since is None or since >= self.every
        if not due:
            return None
        digest = Digest(tuple(sorted(self._added)), tuple(sorted(self._removed)), size,
                        first=self._told_size == 0, seconds=0.0 if since is None else since)
        self._added, self._removed = set(), set()
        self._told_size, self._told_at = size, now
        return digest

    def forget(self, keys: Iterable[TP], size: int) -> None:
        """``keys`` left the worker (revoked, lost): nothing of theirs is told; ``size``: the set's size now."""
        gone = set(keys)
        self._added -= gone
        self._removed -= gone
        self._told_size = min(self._told_size, size)
