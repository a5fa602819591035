"""docs/images/console-*.svg: the console's own screenshots (Textual's SVG export),
taken of the real app over a fresh SQLite database seeded with a small team's
schedules, at a fixed instant (:data:`NOW`, a :class:`~core.clock.ManualClock`), so
taking them again gives the same files unless the console changed.

The console is driven as its tests drive it (tests/tui/: ``run`` and ``settle``), and
delivered and dead jobs are recorded as they do (``deliver``): no network, no
dispatcher.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from textual.widgets import Input, TextArea

from core.cases import Herald
from core.clock import ManualClock
from core.settings import Settings
from core.store import Store
from docs.gen import ROOT
from tests.tui.conftest import deliver, run, settle
from tui.app import HeraldConsole, make_app

#: Monday 2 March 2026, 08:15 UTC; the console opens at 09:00, the stand-up is due at 09:30.
NOW = datetime(2026, 3, 2, 8, 15, tzinfo=UTC)
SIZE = (120, 36)
IMAGES = "docs/images"

ADMIN, OPERATOR, MEMBER = "local:ada", "local:olive", "local:bob"
GONE_HOOK = "webhook:https://hooks.example.com/old-endpoint"
GENERAL = "slack:C0GENERAL"


#: What was sent this morning, one round every six minutes.
SENT_THIS_MORNING = [
    (ADMIN, "slack:C0DEPLOYS", "Deploy window opens at 10:00"),
    (OPERATOR, "email:oncall@example.com", "On-call handover: see the runbook"),
    (MEMBER, "discord:123456789012345678", "Game night poll is open"),
    (OPERATOR, "slack:C0DEPLOYS", "Build 1431 passed"),
    (MEMBER, "slack:C0STANDUP", "Stand-up notes are in the doc"),
    (ADMIN, "webhook:https://hooks.example.com/metrics", "Queue depth report"),
    (OPERATOR, "email:team@example.com", "Maintenance tonight at 22:00"),
]


def settings(database_url: str) -> Settings:
    """The console's settings, from these values only (not this machine's environment)."""
    return Settings.model_validate(
        {
            "HERALD_DATABASE_URL": database_url,
            "HERALD_ADMINS": ADMIN,
            "HERALD_DEFAULT_TZ": "UTC",
            "USER": "ada",
        }
    )


async def seed(herald: Herald, clock: ManualClock) -> None:
    """A team's week: messages sent this morning, two that could not be, recurring
    ones, and forty release notes due at 17:00 in one Slack channel (a crowded minute
    for the forecast; made first, so the newest schedules lead the Schedules list)."""
    await herald.set_role(ADMIN, OPERATOR, "operator")
    for i in range(1, 41):
        await herald.create_schedule(
            ADMIN, to=GENERAL, when="at 5pm", text=f"Release notes, part {i}", tz="UTC"
        )
    for round_, (actor, to, text) in enumerate(SENT_THIS_MORNING):
        for copy in range(1 + round_ % 3):  # one to three at a time, for the plot
            await herald.create_schedule(
                actor, to=to, when="in 1 minute", text=f"{text} ({copy + 1})", tz="UTC"
            )
        clock.advance(61)
        await deliver(herald, clock, fail=False)
        clock.advance(5 * 60)
    await herald.create_schedule(
        OPERATOR, to=GONE_HOOK, when="in 1 minute", text="Build 1432 passed", tz="UTC"
    )
    clock.advance(61)
    await deliver(herald, clock, fail=True, error="HTTP 410 Gone")
    await herald.create_schedule(
        MEMBER, to="slack:C0ARCHIVED", when="in 1 minute", text="Retro at 3pm", tz="UTC"
    )
    clock.advance(61)
    await deliver(herald, clock, fail=True, error="channel_not_found")
    recurring = [
        (MEMBER, "slack:C0STANDUP", "every weekday at 9:30", "Stand-up in the usual room"),
        (OPERATOR, "email:team@example.com", "every friday at 4pm", "Weekly report is due"),
        (ADMIN, "webhook:https://hooks.example.com/metrics", "every day at 8am", "Daily digest"),
        (MEMBER, "discord:123456789012345678", "every monday at 6pm", "Game night tonight"),
    ]
    for actor, to, when, text in recurring:
        await herald.create_schedule(actor, to=to, when=when, text=text, tz="UTC")
    await herald.create_schedule(
        OPERATOR, to="slack:C0DEPLOYS", when="in 2 hours", text="Release 4.2 is out", tz="UTC"
    )
    clock.advance(60)  # the console opens a little after the last failure


async def fill_form(pilot: Any) -> None:
    """A new schedule typed into the form, its preview shown."""
    await pilot.press("n")
    await settle(pilot)
    form = pilot.app.screen
    form.query_one("#to", Input).value = "slack:C0STANDUP"
    form.query_one("#when", Input).value = "every weekday at 9:30"
    form.query_one("#text", TextArea).text = "Stand-up in 5 minutes: bring one blocker."
    await settle(pilot)


#: Each screenshot: the console's mode it opens in, and what is done there first.
SHOTS: dict[str, tuple[str, Callable[[Any], Awaitable[None]] | None]] = {
    "console-overview.svg": ("overview", None),
    "console-schedules.svg": ("schedules", None),
    "console-queue.svg": ("queue", None),
    "console-dead-letters.svg": ("dead", None),
    "console-forecast.svg": ("forecast", None),
    "console-form.svg": ("schedules", fill_form),
}


async def take(app: HeraldConsole, before: Callable[[Any], Awaitable[None]] | None) -> str:
    async with run(app, size=SIZE) as pilot:
        await settle(pilot)
        if before is not None:
            await before(pilot)
        for field in [*app.screen.query(Input), *app.screen.query(TextArea)]:
            field.cursor_blink = False  # a blinking cursor is caught on or off at random
        await settle(pilot)
        return app.export_screenshot(title="Herald console")


async def take_all(folder: Path) -> dict[str, str]:
    """Each screenshot's SVG text, by file name."""
    url = f"sqlite:///{(folder / 'herald.db').as_posix()}"
    store = await Store.open(url)
    try:
        clock = ManualClock(NOW)
        herald = Herald(store, settings(url), clock)
        await seed(herald, clock)
        shots = {}
        for name, (mode, before) in SHOTS.items():
            app = make_app(herald.settings, herald, ADMIN, refresh_interval=3600, mode=mode)
            shots[name] = await take(app, before)
        return shots
    finally:
        await store.close()


def write_all() -> list[str]:
    """Take every screenshot and write it to docs/images/; returns the paths written."""
    with tempfile.TemporaryDirectory() as folder:
        shots = asyncio.run(take_all(Path(folder)))
    written = []
    for name, svg in shots.items():
        target = ROOT / IMAGES / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(svg, encoding="utf-8")
        written.append(f"{IMAGES}/{name}")
    return written
