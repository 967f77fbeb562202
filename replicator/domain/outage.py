"""How long the source has been out of a worker's reach, and when that means its partitions may be gone (pure).

A member of a KIP-848 group keeps its partitions only while the group coordinator hears
from it: after the group's session timeout (the broker's ``group.consumer.session.timeout.ms``,
45 s by default and never under ``group.consumer.min.session.timeout.ms``) they go to the
other members. Under that protocol librdkafka keeps no clock of its own for it: a worker cut
off for longer, when its link comes back, fetches and copies its old partitions again until
the answer to its next heartbeat tells it it was fenced (seen on a fleet of hosts: 4,070
records copied again by the host that came back). Past ``hold_after`` seconds out of reach,
the worker holds its copy; it joins the group anew once the source answers.
"""

from __future__ import annotations

from dataclasses import dataclass

HOLD_AFTER_S = 5.0  # under any session timeout a broker allows by default (45 s)


@dataclass(slots=True)
class OutageWatch:
    """Since when the source has been out of reach (None while it answers)."""

    hold_after: float = HOLD_AFTER_S
    since: float | None = None
    answered: float | None = None  # when something last came from the source

    def unreachable(self, now: float) -> None:
        """The source did not answer (a broken connection, all brokers down, a refused login)."""
        if self.since is None:
            self.since = now

    def silent_since(self, asked: float) -> None:
        """A request sent at ``asked`` went unanswered for its whole timeout, without an error (a frozen broker,
        a black hole: connections stay open): out of reach since then, or since the last answer after it."""
        if self.since is None:
            self.since = asked if self.answered is None else max(asked, self.answered)

    def answers(self, now: float) -> None:
        """Something came from the source: it answers."""
        self.since, self.answered = None, now

    def due(self, now: float) -> float | None:
        """The seconds the source has been out of reach, once they reach ``hold_after``; else None."""
        if self.since is None or now - self.since < self.hold_after:
            return None
        return now - self.since
