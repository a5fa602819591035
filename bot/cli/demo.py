"""``herald demo``: a local demo on a fresh SQLite file, no chat tokens needed.

It seeds a few schedules to ``log:`` (one every few seconds, one recurring every
minute) and one to a destination that always fails, then runs the dispatcher in the
foreground and prints each delivery, retry and dead letter as it happens.
"""

from __future__ import annotations

import asyncio
import shutil
import sys
from pathlib import Path
from typing import TextIO

from core.cases import Herald
from core.models import Schedule
from core.settings import Settings
from core.store import Settled
from core.views import local

DEMO_DB = "herald-demo.db"
FAILING = "webhook:http://127.0.0.1:9/hook"  # nothing listens there: every try fails


def herald_command() -> tuple[str, str | None]:
    """How to type ``herald`` here: the word itself when it is on PATH; else the
    installed console script's path (relative when it is under this folder, as
    ``.venv/bin/herald`` after ``make demo``) and how to put it on PATH."""
    script = shutil.which("herald", path=str(Path(sys.executable).parent))
    if script is None:  # not installed as a console script (a source tree): nothing better
        return "herald", None
    found = shutil.which("herald")
    if found is not None and Path(found).resolve() == Path(script).resolve():
        return "herald", None
    folder = Path(script).parent.absolute()
    try:
        shown = Path(script).absolute().relative_to(Path.cwd()).as_posix()
    except ValueError:
        shown = str(Path(script).absolute())
    hint = f'export PATH="{folder}:$PATH"'
    if (folder / "activate").is_file():
        hint += f"   (or: source {Path(shown).parent.as_posix()}/activate)"
    return shown, hint


def _next_steps(out: TextIO) -> None:
    """The commands to look around with after the demo, typed as they work here."""
    herald, path_hint = herald_command()
    out.write(f"  HERALD_DATABASE_URL=sqlite:///{DEMO_DB} {herald} list --state delivered\n")
    out.write(f"  HERALD_DATABASE_URL=sqlite:///{DEMO_DB} {herald} dead list\n")
    if path_hint is not None:
        out.write(f"`herald` is not on your PATH; to type just `herald`:\n  {path_hint}\n")
    out.write(
        "Your own schedules go to your own database (`herald info` says where): "
        'README.md, section "Five minutes to a first message".\n'
    )


async def seed(herald: Herald, actor: str, out: TextIO) -> None:
    """The demo's schedules, as ``actor``."""
    plan = [
        ("in 3 seconds", "log:", "Hello from Herald: scheduled 3 seconds ahead."),
        ("in 8 seconds", "log:", "Standup in 5 minutes!"),
        ("in 15 seconds", "log:", "Deploy window opens now."),
        (
            "every minute",
            "log:",
            "Recurring: a message at the top of every minute ({date:%A}, schedule #{schedule.id}).",
        ),
        ("in 5 seconds", FAILING, "This webhook has no receiver: it will fail."),
    ]

    def said(s: Schedule, when: str, to: str) -> None:
        out.write(f"  #{s.id:<3} {when:<14} -> {to:<31} next {local(s.next_run_at, 'UTC')} UTC\n")

    for when, to, text in plan:
        s, _ = await herald.create_schedule(actor, to=to, when=when, text=text, tz="UTC")
        said(s, when, to)
    # a named template, written once and scheduled with data (docs/routing.md: Templates)
    await herald.add_template(
        actor,
        "standup",
        "Stand-up for {{ team }} in {{ minutes }} minutes ({{ date | date: '%A' }}).",
        variables={"team": "text", "minutes": "number"},
        description="the daily stand-up call",
    )
    s, _ = await herald.create_schedule(
        actor,
        to="log:",
        when="in 10 seconds",
        text="",
        tz="UTC",
        template="standup",
        data={"team": "platform", "minutes": 5},
    )
    said(s, "in 10 seconds", "log: (template standup)")


def _observer(out: TextIO) -> object:
    herald, _ = herald_command()

    def observe(item: Settled) -> None:
        job = item.job
        if item.state == "retrying" and item.retry_at is not None and item.attempt is not None:
            wait = (item.retry_at - item.attempt.finished_at).total_seconds()
            out.write(
                f"[herald] try {job.attempts} of job {job.id} failed ({item.error}); "
                f"retrying in {wait:.1f}s\n"
            )
        elif item.state == "dead":
            out.write(
                f"[herald] job {job.id} is now a dead letter: {item.error}\n"
                f"         (see it: HERALD_DATABASE_URL=sqlite:///{DEMO_DB} {herald} dead list)\n"
            )
        elif item.state == "delivered" and item.next_run is not None:
            again = f"{item.next_run:%H:%M:%S}"
            out.write(f"[herald]   schedule {job.schedule_id} runs again at {again} UTC\n")
        out.flush()

    return observe


def run_demo(settings: Settings, out: TextIO, *, console: bool = False) -> int:
    """Seed a fresh demo database and run the dispatcher until Ctrl-C, printing each
    delivery; with ``console``, open the operator console beside it instead."""
    from bot import service

    for suffix in ("", "-wal", "-shm"):
        Path(DEMO_DB + suffix).unlink(missing_ok=True)
    demo = settings.model_copy(
        update={
            "database_url": f"sqlite:///{DEMO_DB}",
            "max_attempts": 3,
            "backoff_base": 2.0,
            "backoff_cap": 10.0,
            "sweep_seconds": 5.0,
            "webhook_allow_private": True,  # the demo's failing webhook is on 127.0.0.1
            "admins": settings.admins | {settings.local_actor},  # you decide on dead letters
        }
    )
    if console:
        return _with_console(demo)
    out.write(f"Herald demo on {DEMO_DB} (SQLite). Scheduling:\n")

    async def begin(herald: Herald) -> None:
        await seed(herald, demo.local_actor, out)
        out.write(
            "\nDispatching. Deliveries print here as they happen: the log: messages as "
            "they are sent, the failing webhook's retries, then its dead letter. "
            "Press Ctrl-C to stop.\n\n"
        )
        out.flush()

    def ready(herald: Herald, _dispatcher: object) -> None:
        asyncio.get_running_loop().create_task(begin(herald))

    service.run(
        service.serve(
            demo,
            out=out,
            observer=_observer(out),  # type: ignore[arg-type]
            ready=ready,
            serve_http=False,
        ),
        demo,
    )
    out.write(f"\nStopped. Everything is still in {DEMO_DB}: try\n")
    _next_steps(out)
    return 0


DEMO_LOG = "herald-demo.log"
CONSOLE_GREETING = (
    f"Five demo schedules are delivering now: to log: (written to {DEMO_LOG}) and to a "
    "webhook with no receiver, which retries and becomes a dead letter. Press 4 for "
    "the delivery log, 5 for dead letters, ? for every key, q to quit."
)


def _with_console(demo: Settings) -> int:
    """The dispatcher in the background of the console, in one event loop. Deliveries
    and logs go to herald-demo.log so they do not draw over the screen."""
    from bot import service
    from bot.logs import configure_logging
    from tui.app import make_app

    with open(DEMO_LOG, "w", encoding="utf-8") as log_file:
        # the service's own set-up (format, secret scrubber), into the file
        configure_logging(demo, default_level="INFO", stream=log_file)

        async def go() -> int:
            stop = asyncio.Event()
            started: asyncio.Future[Herald] = asyncio.get_running_loop().create_future()

            def ready(herald: Herald, _dispatcher: object) -> None:
                started.set_result(herald)

            running = asyncio.create_task(
                service.serve(demo, out=log_file, stop=stop, ready=ready, serve_http=False)
            )
            await asyncio.wait({started, running}, return_when=asyncio.FIRST_COMPLETED)
            if not started.done():  # the service stopped before it was ready: say why
                await running
                raise RuntimeError("the demo's dispatcher stopped before it started")
            herald = started.result()
            await seed(herald, demo.local_actor, log_file)
            app = make_app(demo, herald, demo.local_actor, greeting=CONSOLE_GREETING)
            try:
                await app.run_async()
            finally:
                stop.set()
                await running
            return app.return_code or 0

        code = asyncio.run(go())
    sys.stdout.write(f"Demo stopped. Deliveries are in {DEMO_LOG}; the data in {DEMO_DB}: try\n")
    _next_steps(sys.stdout)
    return code
