"""When an at-least-once worker commits the offsets it stored (pure).

librdkafka's auto-commit walks every assigned partition at each interval, whether an offset
was stored or not, and looks each one's topic up in a list: at 2,500 topics x 4 a worker with
nothing to copy spent 10 % of a core on it (``bench/scale.py``), at 2,000 x 1 about 1 %. The
worker commits itself instead: at most once per interval (``auto.commit.interval.ms``, the
window of duplicates after a crash, as before), and only when an offset was stored since its
last commit, or that commit failed. The first offset stored after a quiet spell is committed
at once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

INTERVAL_KEY = "auto.commit.interval.ms"  # librdkafka's name for the same wish, in a route's or cluster's properties


def interval_of(value: str) -> float:
    """Seconds between commits for the ``auto.commit.interval.ms`` ``value``; ValueError saying what is wrong."""
    text = str(value).strip()
    if not re.fullmatch(r"[0-9]+", text):
        raise ValueError(f"{value!r}: the worker commits what it stored this often; give a whole number of "
                         "milliseconds, 0 or more")
    return int(text) / 1000


@dataclass(slots=True)
class CommitPace:
    """Whether a commit of the stored offsets is due (times in seconds, monotonic)."""

    interval: float
    pending: bool = False  # stored since the last commit asked, or that commit failed
    next_at: float = 0.0  # no commit before this

    def stored(self) -> None:
        """An offset was stored: it waits for the next commit."""
        self.pending = True

    def failed(self) -> None:
        """A commit failed: what it carried is committed again at the next turn (its offsets are still stored)."""
        self.pending = True

    def due(self, now: float) -> bool:
        """True when a commit should be asked now (it is then counted as asked)."""
        if not self.pending or now < self.next_at:
            return False
        self.pending, self.next_at = False, now + self.interval
        return True
