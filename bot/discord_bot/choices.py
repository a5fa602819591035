"""Autocomplete for the ``when``, ``id`` and ``timezone`` options, and reading ``id``.

Plain functions over ``Herald`` returning ``(label, value)`` pairs (Discord shows the
label, sends the value); no discord.py here.
"""

from __future__ import annotations

import re

from bot.discord_bot import render
from core import calendars, limits
from core.actors import ActorRef
from core.cases import Herald
from core.errors import HeraldError, InvalidInput
from core.models import Schedule, ScheduleState
from core.zones import meanings, resolve_zone, zone_names

MAX_CHOICES = limits.DISCORD_CHOICES.size
EXAMPLES = (
    "in 30 minutes",
    "tomorrow at 9am",
    "friday at 17:30",
    "every weekday at 09:00",
    "every monday at 10am",
    "every month on the 1st at 08:00",
    "0 9 * * 1-5",
)
COMMON_ZONES = (
    "UTC",
    "Europe/London",
    "Europe/Berlin",
    "Europe/Paris",
    "Europe/Madrid",
    "Europe/Kyiv",
    "America/New_York",
    "America/Chicago",
    "America/Denver",
    "America/Los_Angeles",
    "America/Sao_Paulo",
    "Asia/Kolkata",
    "Asia/Singapore",
    "Asia/Tokyo",
    "Australia/Sydney",
    "Pacific/Auckland",
)
_ID = re.compile(r"^\s*#?(\d{1,18})(?:\D.*)?$", re.DOTALL)


def parse_schedule_id(value: str) -> int:
    """A schedule id from what the member typed or picked: ``12``, ``#12``, ``#12 · …``."""
    match = _ID.match(value)
    if match is None:
        shown = render.clip(value, 40)
        raise InvalidInput(
            f'"{shown}" is not a schedule id: pick one from the list or type its number, '
            "e.g. 12 (`/schedule list` shows them)."
        )
    return int(match.group(1))


async def reading_zone(
    herald: Herald, actor: ActorRef, *, tz: str | None = None, schedule_id: int | None = None
) -> str:
    """The zone a ``when`` is read in: the command's, the schedule's (edit), the
    member's, else the server default."""
    if tz:
        try:
            return resolve_zone(tz).key
        except HeraldError:
            pass
    if schedule_id is not None:
        try:
            return (await herald.show_schedule(actor, schedule_id)).schedule.timezone
        except HeraldError:
            pass
    member = await herald.actor(actor)
    return member.timezone or herald.settings.default_tz


async def when_choices(
    herald: Herald,
    actor: ActorRef,
    typed: str,
    *,
    tz: str | None = None,
    schedule_id: int | None = None,
) -> list[tuple[str, str]]:
    """``when`` autocomplete, as (label, value) pairs: how the typed text reads and
    when it first fires, or what was not understood; examples while empty."""
    text = typed.strip()
    if not text:
        return [(example, example) for example in EXAMPLES]
    if len(text) > render.MAX_CHOICE:
        return []  # too long to offer back; the typed text is sent as it is
    zone = await reading_zone(herald, actor, tz=tz, schedule_id=schedule_id)
    try:
        when, urls = calendars.split_skip_phrase(text)
        reading = herald.read_when(when, zone, actor=actor)
    except HeraldError as exc:
        return [(render.clip(f"Not understood: {exc}", render.MAX_CHOICE), text)]
    label = render.when_label(reading)
    if urls:
        label = render.clip(f"{label} · except a calendar's event dates", render.MAX_CHOICE)
    return [(label, text)]


async def id_choices(herald: Herald, actor: ActorRef, typed: str) -> list[tuple[str, str]]:
    """``id`` autocomplete: the member's active and paused schedules whose id, text or
    time expression contains what was typed, soonest first."""
    needle = typed.strip().lstrip("#").lower()
    found: list[Schedule] = []
    for state in (ScheduleState.ACTIVE, ScheduleState.PAUSED):
        found += await herald.list_schedules(actor, state=state.value)
    hits = [
        s
        for s in found
        if not needle
        or needle in str(s.id)
        or needle in s.body.lower()
        or needle in s.expression.lower()
    ]
    hits.sort(key=lambda s: (s.next_run_at is None, s.next_run_at or s.starts_at))
    return [(render.choice_label(s), str(s.id)) for s in hits[:MAX_CHOICES]]


def zone_choices(typed: str) -> list[str]:
    """``timezone`` autocomplete: IANA names (at most 25). First what the text means
    as a whole (:func:`core.zones.meanings`: a city, or each meaning of an abbreviation
    such as EST), then the names and cities that start with it, then those holding it."""
    needle = typed.strip().replace(" ", "_").lower()
    if not needle:
        return list(COMMON_ZONES[:MAX_CHOICES])
    zones = zone_names()
    first = meanings(typed)
    first += [z for z in zones if z.lower().startswith(needle)]
    first += [z for z in zones if z.rsplit("/", 1)[-1].lower().startswith(needle)]
    rest = [z for z in zones if needle in z.lower()]
    return list(dict.fromkeys(first + rest))[:MAX_CHOICES]
