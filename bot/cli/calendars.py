"""``herald feeds``, ``herald export ics`` and ``herald schedule --skip-calendar``.

Their grammar is in bot/cli/parser.py; bot/cli/commands.py runs them (its handlers
``feeds`` and ``export`` over :func:`cmd_feeds` and :func:`cmd_export`; ``Cli.cmd_schedule``
passes :func:`skip_sources` to core; bot/cli/when.py previews with :func:`preview_skips`).
"""

from __future__ import annotations

import asyncio
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

from core import calendars
from core.calendars import CalendarReader
from core.errors import InvalidInput
from core.settings import Settings


def _split(sources: list[str]) -> tuple[list[str], dict[str, str]]:
    """URLs, and files read as {name: text}."""
    urls = [s for s in sources if calendars.is_url(s)]
    files = {}
    for source in sources:
        if calendars.is_url(source):
            continue
        try:
            files[Path(source).name] = Path(source).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise InvalidInput(f"Cannot read the calendar {source}: {exc}.") from exc
    return urls, files


async def skip_sources(cli: Any) -> tuple[list[str], dict[str, str]]:
    """``herald schedule``'s ``--skip-calendar``s: the URLs, and the files read as
    {name: text} (core reads them all before it creates anything)."""
    sources = list(getattr(cli.args, "skip_calendar", []) or [])
    if not sources:
        return [], {}
    return await asyncio.to_thread(_split, sources)


async def preview_skips(
    urls: list[str], now: datetime, tz: str, settings: Settings
) -> calendars.Blackouts:
    """``herald when``'s preview of ``… except holidays from URL``: the calendars'
    blackout dates read in ``tz`` (fetched through the network guard, within the
    settings' limits; read in a calendar worker; nothing stored). CalendarError when
    one cannot be read."""
    texts = []
    for url in urls:
        got = await calendars.fetch(
            url, guard=settings.network_guard(), limits=settings.calendar_limits()
        )
        assert got.body is not None
        texts.append((url, got.body))
    return await CalendarReader.from_settings(settings).blackouts(texts, now, tz)


async def cmd_feeds(cli: Any, herald: Any) -> None:
    a = cli.args
    if a.feeds_command == "add":
        body = None
        source = a.calendar
        if not calendars.is_url(source):
            body = await asyncio.to_thread(Path(source).read_text)
            source = Path(source).name
        feed = await herald.add_feed(
            cli.actor,
            calendar=source,
            to=a.to,
            before=a.before,
            template=a.template,
            tz=a.tz,
            body=body,
        )
        if a.json:
            cli.emit_json(feed.model_dump(mode="json"))
        else:
            cli.emit(str(feed.id))
    elif a.feeds_command == "list":
        feeds = await herald.list_feeds(cli.actor)
        if a.json:
            cli.emit_json([f.model_dump(mode="json") for f in feeds])
        elif not feeds:
            cli.emit("No feeds.")
        for f in feeds if not a.json else []:
            cli.emit(
                f"{f.id:>4}  calendar {f.calendar_id:<4}  {f.before_s // 60:>4}m before  "
                f"{f.destination}  {f.template}"
            )
    elif a.feeds_command == "remove":
        count = await herald.remove_feed(cli.actor, a.id)
        cli.emit(f"Feed {a.id} removed; {count} waiting reminders cancelled.")
    else:
        report = await herald.refresh_calendars()
        cli.emit(
            f"{len(report.changed)} changed, {len(report.unchanged)} unchanged, "
            f"{len(report.failed)} failed; reminders {report.reminders}"
        )
        for cid, error in report.failed.items():
            print(f"calendar {cid}: {error}", file=sys.stderr)  # noqa: T201 - CLI output


async def cmd_export(cli: Any, herald: Any) -> None:
    a = cli.args
    if a.feed_url:
        token = await herald.calendar_feed_token(cli.actor, rotate=a.rotate)
        base = herald.settings.public_url or (
            f"http://{herald.settings.http_host}:{herald.settings.http_port}"
        )
        cli.emit(f"{base.rstrip('/')}/calendar/{token}.ics")
        return
    if a.to is not None:
        if a.owner is not None:
            raise InvalidInput("Give --to (a channel's agenda) or --owner, not both.")
        data = await herald.agenda_ics(cli.actor, a.to)
    else:
        data = await herald.export_ics(cli.actor, a.owner)
    if a.output:
        await asyncio.to_thread(Path(a.output).write_bytes, data)
    else:
        cli.out.write(data.decode())
