"""``herald when``: how a time expression reads, as ``herald schedule`` would store it.

It answers at once: bot/cli/main.py sends ``when`` here without importing
bot/cli/commands.py, and nothing at the top of this module loads the tables, the store,
SQLAlchemy or the channels. The database is opened (through the composition root,
lazily) only to read the member's own zone: not with ``--tz``, nor while the SQLite
file does not exist yet (no member can have a zone there). A test checks that
``herald when --tz …`` imports no database code.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TextIO

from bot.cli.parser import EXIT_ERROR
from core import timeexpr
from core.errors import HeraldError, InvalidInput
from core.instants import iso, local
from core.preview import Preview, ZoneSource, build_preview
from core.zones import resolve_zone

if TYPE_CHECKING:
    from core.settings import Settings

#: The terminal's tenant (``core.models.LOCAL_TENANT``, not imported: it brings the
#: tables; a test keeps the two equal).
LOCAL_TENANT = "local"


def run(args: argparse.Namespace, settings: Settings | None = None) -> int:
    """``herald when``: print the reading. Returns the exit status."""
    from core.settings import load_settings

    try:
        cfg = settings or load_settings()
        when(args, cfg, sys.stdout)
    except HeraldError as exc:
        print(f"herald: error: {exc}", file=sys.stderr)  # noqa: T201 - CLI output
        return EXIT_ERROR
    return 0


def when(args: argparse.Namespace, settings: Settings, out: TextIO) -> None:
    """Read a time as ``herald schedule`` would store it for this member: in ``--tz``,
    else the member's zone (``herald timezone``), else Herald's default, with the
    tenant's default time and the calendars of ``… except … from URL``."""
    a = args
    now = _parse_now(a.now) if a.now else datetime.now(UTC)
    if a.count < 1:
        raise InvalidInput("--count must be at least 1.")
    shown: Preview
    if a.tz is None and _may_hold_members(settings.database_url):
        import asyncio

        _configure_logging(settings)
        shown = asyncio.run(_preview_as_member(a, settings, now))
    else:
        from core.calendars import split_skip_phrase

        tz = resolve_zone(a.tz).key if a.tz else timeexpr.zone(settings.default_tz).key
        expression, urls = split_skip_phrase(a.expression)
        default = settings.default_time_for(LOCAL_TENANT)
        reading = timeexpr.parse_when(expression, tz=tz, now=now, default_time=default)
        skips = None
        if urls:
            import asyncio

            from bot.cli.calendars import preview_skips

            _configure_logging(settings)
            skips = asyncio.run(preview_skips(urls, now, tz, settings))
        source = ZoneSource.GIVEN if a.tz else ZoneSource.DEFAULT
        shown = build_preview(reading, source, count=a.count, calendars=urls, skips=skips)
    _print(a, shown, out)


def _configure_logging(settings: Settings) -> None:
    """The service's logging (format, level, secret scrubber), for the paths that open
    the database or fetch a calendar; reading a phrase in a given zone logs nothing."""
    from bot.logs import configure_logging

    configure_logging(settings, default_level="WARNING")


def _print(a: argparse.Namespace, shown: Preview, out: TextIO) -> None:
    reading, tz, urls = shown.reading, shown.zone, shown.calendars
    if a.json:
        data: dict[str, Any] = {
            "expression": reading.expression,
            "timezone": tz,
            "zone_source": shown.source.value,
            "recurring": reading.recurring,
            "rule": reading.rule,
            "description": reading.description,
            "default_time": None if (d := reading.default_time) is None else f"{d:%H:%M}",
            "occurrences": [iso(t) for t in shown.occurrences],
        }
        if urls:
            data["skip_calendars"] = urls
            data["skipped"] = [{"at": iso(t), "event": n} for t, n in shown.skipped]
        out.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")
        return
    lines = [reading.read_back]
    lines += [f"  {local(t, tz)} {tz}   ({iso(t)})" for t in shown.occurrences]
    if urls:
        lines.append(f"Skips the dates of {', '.join(urls)}" + (":" if shown.skipped else "."))
    lines += [f"  {local(t, tz)} {tz}   skipped: {name}" for t, name in shown.skipped]
    if shown.source is ZoneSource.MEMBER:
        lines.append(f"Read in {tz}, your zone (herald timezone changes it).")
    elif shown.source is ZoneSource.DEFAULT:
        lines.append(f"Read in {tz}, Herald's default zone (set yours with herald timezone).")
    out.write("\n".join(lines) + "\n")


async def _preview_as_member(a: argparse.Namespace, settings: Settings, now: datetime) -> Preview:
    """``herald when`` through the use case, in the member's zone (at ``--now``)."""
    from bot.cli.commands import open_herald
    from core.actors import Principal, Surface
    from core.clock import ManualClock

    actor = Principal(settings.local_actor, surface=Surface.CLI)
    clock = ManualClock(now) if a.now else None
    async with open_herald(settings, clock) as herald:
        return await herald.preview_when(actor, a.expression, count=a.count)


def _may_hold_members(url: str) -> bool:
    """Whether the database at ``url`` may hold a member's zone: not a SQLite file that
    does not exist yet (read without opening it, which would create it)."""
    scheme, sep, rest = url.partition("://")
    if not scheme.startswith("sqlite") or not sep:
        return True
    path = rest.partition("?")[0]
    if not path.startswith("/") or path in ("/", "/:memory:"):
        return False  # sqlite:// and :memory: start empty
    return os.path.exists(path[1:])


def _parse_now(text: str) -> datetime:
    try:
        value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError as exc:
        raise InvalidInput(f"--now {text!r} is not an ISO-8601 time.") from exc
    if value.tzinfo is None:
        raise InvalidInput("--now needs an offset or Z, e.g. 2026-03-30T07:00:00Z.")
    return value.astimezone(UTC)
