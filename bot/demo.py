"""``herald demo``: a local demo on a fresh SQLite file, no chat tokens needed."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path
from typing import TextIO

from core.clock import SystemClock
from core.settings import Settings
from core.store import Store
from core.usecases import Herald

DEMO_DB = "herald-demo.db"


async def _seed(herald: Herald, actor: str, out: TextIO) -> None:
    now = herald.clock.now()
    plan = [
        (5, "log:", "Hello from Herald: this one was scheduled 5 seconds ahead."),
        (15, "log:", "Standup in 5 minutes!"),
        (30, "webhook:https://example.invalid/hook", "Deploy window opens now."),
    ]
    for seconds, to, text in plan:
        when = (now + timedelta(seconds=seconds)).isoformat()
        schedule, _ = await herald.create_schedule(actor, to=to, when=when, text=text, tz="UTC")
        out.write(f"scheduled #{schedule.id} to {to} at {when}: {text}\n")
    rows = await herald.list_schedules(actor)
    out.write(f"\n{len(rows)} schedules waiting:\n")
    for s in rows:
        out.write(f"  #{s.id} {s.state} next {s.next_run_at:%H:%M:%S} UTC -> {s.destination}\n")


def run_demo(settings: Settings, out: TextIO) -> int:
    """Seed a fresh demo database and show what is waiting. Returns the exit status."""
    for suffix in ("", "-wal", "-shm"):
        Path(DEMO_DB + suffix).unlink(missing_ok=True)
    url = f"sqlite:///{DEMO_DB}"
    demo_settings = settings.model_copy(update={"database_url": url})

    async def go() -> None:
        store = await Store.open(url)
        try:
            await _seed(Herald(store, demo_settings, SystemClock()), settings.local_actor, out)
        finally:
            await store.close()

    out.write(f"Herald demo on {DEMO_DB} (SQLite).\n\n")
    asyncio.run(go())
    out.write(
        "\nTry: HERALD_DATABASE_URL=sqlite:///herald-demo.db herald list\n"
        "(The dispatcher that delivers these arrives next; see the README.)\n"
    )
    return 0
