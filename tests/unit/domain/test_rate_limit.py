"""The rate limit's token bucket on a clock of our own: the average holds, large records pay their debt."""

from __future__ import annotations

from replicator.domain.rate_limit import BURST_SECONDS, TokenBucket, share


def sent_in(bucket: TokenBucket, size: int, seconds: float, step: float = 0.001) -> int:
    """Bytes a sender offering ``size``-byte records at every ``step`` gets through in ``seconds``."""
    sent, now = 0, 0.0
    while now < seconds:
        if bucket.ready(now):
            bucket.spend(size)
            sent += size
        now += step
    return sent


def test_the_average_never_exceeds_the_rate_whatever_the_record_size() -> None:
    for size in (100, 5_000, 250_000):  # smaller than the bucket, about it, far larger
        bucket = TokenBucket.full(100_000, 0.0)
        sent = sent_in(bucket, size, 10.0)
        assert sent <= 100_000 * 10 + 100_000 * BURST_SECONDS + size, size
        assert sent >= 100_000 * 10 * 0.9 - size, size  # and it does use the rate


def test_a_record_larger_than_the_bucket_goes_then_its_debt_is_paid() -> None:
    bucket = TokenBucket.full(1_000, 0.0)
    assert bucket.ready(0.0)
    bucket.spend(5_000)  # 5 s worth
    assert not bucket.ready(4.0) and bucket.wait(4.0) > 0
    assert bucket.ready(5.01) and bucket.wait(5.01) == 0.0


def test_a_new_rate_applies_from_now_and_a_worker_gets_its_share_of_the_partitions() -> None:
    bucket = TokenBucket.full(1_000, 0.0)
    bucket.spend(100)  # empty
    bucket.set_rate(10_000, 0.0)
    assert not bucket.ready(0.0) and bucket.ready(0.001)  # 10 bytes earned in a ms at the new rate
    assert share(90_000, 3, 9) == 30_000 and share(90_000, 0, 9) == 90_000 and share(90_000, 2, 0) == 90_000
