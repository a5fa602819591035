"""Per-destination token buckets, and pauses a provider asks for (Retry-After)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from core.channels.base import RateLimit


@dataclass
class _Bucket:
    limit: RateLimit
    tokens: float
    updated: datetime
    paused_until: datetime | None = None


class RateLimiter:
    """Hands out send slots per destination. Not thread-safe; one per event loop."""

    def __init__(self) -> None:
        self._buckets: dict[str, _Bucket] = {}

    def reserve(self, key: str, limit: RateLimit, now: datetime) -> float:
        """Take one slot for ``key`` and return how many seconds to wait before using
        it (0 when it may send now). Reserving is committing: the caller must wait
        that long, or :meth:`refund` the slot."""
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = _Bucket(limit, max(limit.burst, 1.0), now)
            self._buckets[key] = bucket
        wait = 0.0
        if bucket.paused_until is not None and bucket.paused_until > now:
            wait = (bucket.paused_until - now).total_seconds()
        if limit.unlimited:
            return wait
        elapsed = max(0.0, (now - bucket.updated).total_seconds())
        bucket.tokens = min(max(limit.burst, 1.0), bucket.tokens + elapsed * limit.rate)
        bucket.updated = now
        bucket.tokens -= 1.0
        if bucket.tokens < 0:
            wait = max(wait, -bucket.tokens / limit.rate)
        return wait

    def refund(self, key: str) -> None:
        """Give back a slot reserved but not used."""
        bucket = self._buckets.get(key)
        if bucket is not None and not bucket.limit.unlimited:
            bucket.tokens += 1.0

    def pause(self, key: str, limit: RateLimit, until: datetime) -> None:
        """Send nothing to ``key`` before ``until`` (the provider said so)."""
        bucket = self._buckets.setdefault(key, _Bucket(limit, 0.0, until))
        if bucket.paused_until is None or until > bucket.paused_until:
            bucket.paused_until = until

    def paused_until(self, key: str, now: datetime) -> datetime | None:
        bucket = self._buckets.get(key)
        if bucket is None or bucket.paused_until is None or bucket.paused_until <= now:
            return None
        return bucket.paused_until
