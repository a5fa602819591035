from __future__ import annotations

from datetime import UTC, datetime, timedelta

from core.channels.base import UNLIMITED, RateLimit
from core.ratelimit import RateLimiter

T0 = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)


def test_bucket_allows_a_burst_then_paces() -> None:
    limiter = RateLimiter()
    one_per_second = RateLimit(rate=1.0, burst=3)
    waits = [limiter.reserve("slack:C1", one_per_second, T0) for _ in range(5)]
    assert waits == [0.0, 0.0, 0.0, 1.0, 2.0]
    # another destination has its own bucket
    assert limiter.reserve("slack:C2", one_per_second, T0) == 0.0
    # tokens come back with time
    later = T0 + timedelta(seconds=10)
    assert limiter.reserve("slack:C1", one_per_second, later) == 0.0


def test_refund_gives_the_slot_back() -> None:
    limiter = RateLimiter()
    limit = RateLimit(rate=1.0, burst=1)
    assert limiter.reserve("k", limit, T0) == 0.0
    assert limiter.reserve("k", limit, T0) == 1.0
    limiter.refund("k")
    assert limiter.reserve("k", limit, T0) == 1.0


def test_a_provider_pause_holds_only_that_destination() -> None:
    limiter = RateLimiter()
    limiter.pause("discord:1", UNLIMITED, T0 + timedelta(seconds=30))
    assert limiter.reserve("discord:1", UNLIMITED, T0) == 30.0
    assert limiter.reserve("discord:2", UNLIMITED, T0) == 0.0
    assert limiter.paused_until("discord:1", T0) == T0 + timedelta(seconds=30)
    assert limiter.reserve("discord:1", UNLIMITED, T0 + timedelta(seconds=31)) == 0.0
