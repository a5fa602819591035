"""Rate limits are the destination's: every dispatcher takes its send slots from one
bucket per destination in the database, and none claims more for a destination than
it can send within ``max_rate_wait``."""

from __future__ import annotations

import random
from collections import Counter
from datetime import timedelta

from core.channels.base import RateLimit
from core.clock import ManualClock
from core.dispatcher import Dispatcher, DispatcherConfig
from core.ratelimit import RateLimits
from core.usecases import Herald
from tests.support.channels import RecordingChannel

ALICE = "local:alice"
FIVE = RateLimit(rate=5.0, burst=5.0)


async def test_two_dispatchers_share_one_bucket(herald: Herald, clock: ManualClock) -> None:
    store, now = herald.store, clock.now()
    first = await store.reserve_slots({"webhook:https://a/": (20, FIVE)}, now=now, window=2)
    second = await store.reserve_slots(
        {"webhook:https://a/": (20, FIVE), "webhook:https://b/": (3, FIVE)}, now=now, window=2
    )
    a1, a2 = first["webhook:https://a/"].times, second["webhook:https://a/"].times
    # the burst of 5, then one every 0.2 s up to 2 s: 15 in all, split between them
    assert (len(a1), len(a2)) == (15, 0)
    assert second["webhook:https://a/"].next_free == now + timedelta(seconds=2.2)
    assert second["webhook:https://b/"].times == [now] * 3  # another destination
    clock.advance(1)  # five more slots come free, whoever asks
    third = await store.reserve_slots({"webhook:https://a/": (20, FIVE)}, now=clock.now(), window=2)
    assert len(third["webhook:https://a/"].times) == 5


def dispatcher(herald: Herald, channel: RecordingChannel) -> Dispatcher:
    config = DispatcherConfig(max_rate_wait=2, rate_limits=RateLimits.parse("log:=5/s:5"))
    return Dispatcher(
        herald.store, {"log": channel}, clock=herald.clock, config=config, rng=random.Random(2)
    )


async def test_a_claim_keeps_only_what_its_destination_takes_in_time(
    herald: Herald, clock: ManualClock
) -> None:
    for i in range(30):
        await herald.create_schedule(ALICE, to="log:", when="in 1 minute", text=f"m{i}")
    clock.advance(60)
    a, b = RecordingChannel(), RecordingChannel()
    first = dispatcher(herald, a)
    assert await first.pump() == 30
    await first.settle()
    # 15 fit within 2 s at 5/s (a burst of 5, then 10); 15 were handed back at once,
    # due when the bucket has room, so no one holds them meanwhile
    assert len(a.deliveries) == 15
    counts = await herald.store.job_counts()
    assert (counts.get("delivered"), counts.get("pending"), counts.get("claimed")) == (15, 15, None)
    second = dispatcher(herald, b)
    assert await second.pump() == 0  # nothing is due for another dispatcher either
    clock.advance(3)
    assert (await second.drain(retry_window=10)).outcomes["delivered"] == 15
    keys = Counter(d.idempotency_key for d in a.deliveries + b.deliveries)
    assert len(keys) == 30 and set(keys.values()) == {1}
