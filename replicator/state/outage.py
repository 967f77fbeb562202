"""Whether a running worker's state DB answers: said once when it stops, once when it answers again."""

from __future__ import annotations

import logging
import time

from replicator.domain.secrets import redact_url

RETRY_SECONDS = 5.0  # while away, the DB is asked at most this often (the subscription refresh's period)

log = logging.getLogger(__name__)


class Outage:
    """The state DB's availability for one route, with what was skipped while it was away."""

    def __init__(self, route: str, url: str, retry_seconds: float = RETRY_SECONDS) -> None:
        self.route, self.url, self.retry_seconds = route, redact_url(url), retry_seconds
        self.since: float | None = None
        self.next_ask = 0.0
        self.skipped_reads = self.skipped_writes = 0

    @property
    def away(self) -> bool:
        """The last call failed."""
        return self.since is not None

    def may_ask(self) -> bool:
        """Time to call the DB (always, unless it is away and was asked less than ``retry_seconds`` ago)."""
        return self.since is None or time.monotonic() >= self.next_ask

    def retry_now(self) -> None:
        """Let the next call ask at once (a last attempt before the worker stops)."""
        self.next_ask = 0.0

    def failed(self, exc: BaseException) -> None:
        """A call failed: the first failure of an outage is logged, with its cause."""
        now = time.monotonic()
        self.next_ask = now + self.retry_seconds
        if self.since is None:
            self.since = now
            log.warning("state database unavailable, replication goes on without it route=%s url=%s cause=%r",
                        self.route, self.url, redact_url(str(exc).splitlines()[0] if str(exc) else type(exc).__name__))

    def answered(self) -> None:
        """A call succeeded: the end of an outage is logged, with what was skipped meanwhile."""
        if self.since is None:
            return
        log.warning("state database answers again, writes kept meanwhile are stored route=%s away_s=%.1f "
                    "skipped_writes=%d skipped_reads=%d", self.route, time.monotonic() - self.since,
                    self.skipped_writes, self.skipped_reads)
        self.since, self.skipped_reads, self.skipped_writes = None, 0, 0
