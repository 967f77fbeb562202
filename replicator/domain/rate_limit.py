"""A route's rate limit: a token bucket of bytes, refilled at the rate, that may run into debt.

The worker asks ``ready`` before it hands a record to the producer and ``spend``s the
record's bytes after: a record larger than the bucket still goes (once the bucket is
not empty) and its debt is paid back before the next, so the average holds whatever
the record sizes. Pure: the caller passes the clock.
"""

from __future__ import annotations

from dataclasses import dataclass

BURST_SECONDS = 0.1  # the bucket holds this long of the rate: short bursts, a smooth average


@dataclass(slots=True)
class TokenBucket:
    """``rate`` bytes per second; ``tokens`` may go below 0 (a debt) after a large record."""

    rate: float
    tokens: float
    stamp: float

    @classmethod
    def full(cls, rate: float, now: float) -> TokenBucket:
        """A bucket at ``rate``, full at ``now``."""
        return cls(rate, rate * BURST_SECONDS, now)

    def _refill(self, now: float) -> None:
        if now > self.stamp:
            self.tokens = min(self.rate * BURST_SECONDS, self.tokens + (now - self.stamp) * self.rate)
        self.stamp = max(self.stamp, now)

    def ready(self, now: float) -> bool:
        """True when a record may go now."""
        self._refill(now)
        return self.tokens > 0

    def spend(self, size: int) -> None:
        """Take ``size`` bytes out (a debt when there were fewer)."""
        self.tokens -= size

    def set_rate(self, rate: float, now: float) -> None:
        """Change the rate from ``now`` on (what was earned so far stays)."""
        self._refill(now)
        self.rate = rate
        self.tokens = min(self.tokens, rate * BURST_SECONDS)

    def wait(self, now: float) -> float:
        """Seconds until ``ready`` (0 when it is)."""
        self._refill(now)
        return 0.0 if self.tokens > 0 else (-self.tokens + 1) / self.rate if self.rate > 0 else float("inf")


def share(limit: float, owned: int, total: int) -> float:
    """A worker's part of a route's ``limit``: by its share of the route's partitions (all of it when the
    route's partitions are not known yet)."""
    if total <= 0 or owned <= 0:
        return limit
    return limit * min(owned, total) / total
