"""The console's lists show what matters (issue 33): the Schedules screen a WHEN column
(a weekday standup and a one-off tea looked alike), the delivery log the text each
attempt sent (it showed the template, ``{date:%A}``)."""

from __future__ import annotations

import random
from datetime import timedelta
from typing import Any

from core.cases import Herald
from core.clock import ManualClock
from core.dispatcher import Dispatcher, DispatcherConfig
from tests.support.channels import RecordingChannel
from tests.tui.conftest import ADMIN, MEMBER, OPERATOR, deliver, run, screen_text, settle
from tui.screens.detail import DetailScreen


async def test_schedules_screen_says_when_in_words(
    console: Any, herald: Herald, seeded: dict[str, Any]
) -> None:
    app = console(ADMIN, mode="schedules")
    async with run(app, size=(120, 40)) as pilot:
        await settle(pilot)
        lines = screen_text(app).splitlines()
    [header] = [line for line in lines if " state " in line and " text" in line]
    assert " when " in header
    [standup] = [line for line in lines if "Standup" in line and "slack:C0STANDUP" in line]
    assert "every weekday at 09:00" in standup
    [release] = [line for line in lines if "Release" in line and "discord:" in line]
    assert " once " in release


async def test_delivery_log_shows_the_text_as_sent(
    console: Any, herald: Herald, clock: ManualClock
) -> None:
    await herald.create_schedule(
        MEMBER, to="log:", when="every day at 13:00", text="Happy {date:%A}, team!", tz="UTC"
    )
    config = DispatcherConfig(max_attempts=4, backoff_base=5, backoff_cap=60, max_lateness=3600)
    dispatcher = Dispatcher(
        herald.store, {"log": RecordingChannel()}, clock=clock, config=config, rng=random.Random(7)
    )
    clock.advance(timedelta(hours=1))  # Monday 2 March 2026, 13:00 UTC
    assert (await dispatcher.drain()).outcomes["delivered"] == 1
    app = console(ADMIN, mode="deliveries")
    async with run(app, size=(120, 40)) as pilot:
        await settle(pilot)
        text = screen_text(app)
    assert "Happy Monday, team!" in text
    assert "{date" not in text


async def test_a_schedules_detail_shows_its_webhook_to_its_owner_and_the_admins(
    console: Any, herald: Herald
) -> None:
    """Four hooks looked alike (``webhook:http://127.0.0.1/…``) even to their owner."""
    await herald.set_role(ADMIN, OPERATOR, "operator")
    s, _ = await herald.create_schedule(
        MEMBER, to="webhook:http://127.0.0.1:8080/deploy?token=s3cret", when="in 1 hour", text="x"
    )
    assert s.id is not None
    seen = {}
    for who in (MEMBER, ADMIN, OPERATOR):
        app = console(who, mode="schedules")
        async with run(app, size=(120, 40)) as pilot:
            await settle(pilot)
            app.push_screen(DetailScreen(schedule_id=s.id))
            await settle(pilot)
            seen[who] = screen_text(app)
    for who in (MEMBER, ADMIN):
        assert "To webhook:http://127.0.0.1:8080/deploy?… · zone" in seen[who]
    assert "To webhook:http://127.0.0.1/… · zone" in seen[OPERATOR]
    assert not any("s3cret" in text for text in seen.values())


#: A hook whose path ends in a token and whose query holds another.
HOOK = "webhook:http://127.0.0.1:8080/deploy/a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6?token=s3cret"


async def test_the_lists_show_a_webhook_to_its_owner_and_the_admins(
    console: Any, herald: Herald, clock: ManualClock
) -> None:
    """The Schedules, Queue, Delivery log and Dead letters lists showed
    ``webhook:http://127.0.0.1/…`` to everyone: now the owner and the admins see its
    port and path, another operator its host only, and nobody a secret in it. At 80
    columns the TO column is too narrow for a path (``webhook:htt…``): the highlighted
    row's detail pane shows it."""
    await herald.set_role(ADMIN, OPERATOR, "operator")
    await herald.create_schedule(MEMBER, to=HOOK, when="in 1 minute", text="Ship it", tz="UTC")
    clock.advance(61)
    assert await deliver(herald, clock, fail=True, error="HTTP 410 Gone") == 1
    await herald.create_schedule(MEMBER, to=HOOK, when="in 1 hour", text="Ship it", tz="UTC")
    seen: dict[tuple[str, str], str] = {}
    for who in (MEMBER, ADMIN, OPERATOR):
        for mode in ("schedules", "queue", "deliveries", "dead"):
            app = console(who, mode=mode)
            async with run(app, size=(80, 24)) as pilot:
                await settle(pilot)
                seen[who, mode] = screen_text(app)
    for (who, mode), text in seen.items():
        assert "Ship it" in text, (who, mode)
        assert "a1b2c3" not in text and "s3cret" not in text, (who, mode)
        if who == OPERATOR:
            assert "webhook:http://127.0.0.1/…" in text, (who, mode)
            assert "8080" not in text and "/deploy" not in text, (who, mode)
        else:
            assert "webhook:http://127.0.0.1:8080/deploy/…?…" in text, (who, mode)
