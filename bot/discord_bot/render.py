"""Text for Discord: schedule cards, lists, autocomplete labels and dead-letter alerts.

Plain functions over core records; no discord.py. Times in replies are Discord timestamps
(``<t:EPOCH:F>``, ``<t:EPOCH:R>``), which every reader sees in their own local time.
Autocomplete labels cannot hold those, so they show the schedule's own zone instead.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from core import calendars, limits, routing, timeexpr, until_done, views
from core.actors import Actor
from core.cases import AgendaEntry, ScheduleDetail, describe_before
from core.channels import parse_destination
from core.errors import HeraldError
from core.models import Feed, Schedule, ScheduleState
from core.preferences import NORMAL
from core.store import Settled
from core.views import describe

#: Discord's limits (core.limits): a message's content, an autocomplete choice's name.
MAX_MESSAGE = limits.DISCORD_CONTENT.size
MAX_CHOICE = limits.DISCORD_CHOICE_NAME.size
OPEN_STATES = (ScheduleState.ACTIVE.value, ScheduleState.PAUSED.value)


def wall(at: datetime, zone: str) -> str:
    """``Tue 3 Mar 2026 09:00`` in ``zone``, as core words it (whatever the locale)."""
    local = at.astimezone(ZoneInfo(zone))
    return f"{timeexpr.format_day(local)} {timeexpr.format_clock(local)}"


def stamp(at: datetime) -> str:
    """``<t:EPOCH:F> (<t:EPOCH:R>)``: the full date and time, and how far away it is."""
    epoch = int(at.timestamp())
    return f"<t:{epoch}:F> (<t:{epoch}:R>)"


def where(destination: str, *, full: bool = False) -> str:
    """A destination as a reader should see it: ``<#id>`` for a Discord channel,
    the redacted URI (no webhook token) for anything else; with ``full`` (its owner,
    an admin: :func:`core.views.sees_destination`) a webhook's host, port and path,
    its secrets still hidden."""
    try:
        parsed = parse_destination(destination)
    except HeraldError:
        return "an unknown destination"
    if parsed.is_dm:  # a reminder: a direct message to that person
        return (
            f"<@{parsed.target[1:]}> (direct message)"
            if parsed.kind == "discord"
            else f"`{parsed}` (direct message)"
        )
    if parsed.kind == "discord":
        return f"<#{parsed.target}>"
    return f"`{parsed.for_owner() if full else parsed.redacted()}`"


def recipients(schedule: Schedule, *, full: bool = False) -> str:
    """Every recipient in order, as :func:`core.views.recipients_text` says them, each
    destination as :func:`where` shows it: "<#1>, <#2>, <@3> (direct message) or
    `email:alice@example.com`"."""
    return ", ".join(
        routing.describe(r, lambda d: where(d, full=full)) for r in views.recipients_of(schedule)
    )


def places(schedule: Schedule, *, full: bool = False, room: int = 62) -> str:
    """The recipients within ``room`` characters for a list row: as many whole ones as
    fit, then "+N more" (a mention is never cut)."""
    shown = [
        routing.describe(r, lambda d: where(d, full=full)) for r in views.recipients_of(schedule)
    ]
    kept: list[str] = []
    for item in shown:
        rest = len(shown) - len(kept) - 1
        tail = f" +{rest} more" if rest else ""
        if len(", ".join([*kept, item])) + len(tail) > room:
            break
        kept.append(item)
    left = len(shown) - len(kept)
    if not kept:  # a long address first: cut inside its backticks
        first = shown[0][: room - (2 if left == 1 else 12)] + "…`"
        return first + (f" +{left - 1} more" if left > 1 else "")
    return ", ".join(kept) + (f" +{left} more" if left else "")


def mention(destination: str) -> str:
    """A destination inside a sentence: a Discord channel or member as its mention
    (``<#id>``, ``<@id>``), anything else as :func:`core.views.destination` says it."""
    if destination.startswith("discord:@") and destination[9:].isdigit():
        return f"<@{destination[9:]}>"
    if destination.startswith("discord:") and destination[8:].isdigit():
        return f"<#{destination[8:]}>"
    return views.destination(destination)


def ladder(rule: until_done.UntilDone) -> str:
    """A schedule's ladder in words (:func:`core.until_done.describe`), each
    escalation's members and channels as their mentions: "until done, nag every 15
    minutes, escalate to <@1> after 1 hour"."""
    levels = tuple(
        until_done.Level(tuple(mention(d) for d in level.to), level.after) for level in rule.levels
    )
    return until_done.describe(until_done.UntilDone(rule.nag, levels))


def said(text: str) -> str:
    """Core's words with each Discord destination in them (``discord:123``,
    ``discord:@456``) as its mention (``<#123>``, ``<@456>``)."""
    return re.sub(r"discord:@?[0-9]{1,20}\b", lambda m: mention(m.group(0)), text)


def their_times(schedule: Schedule) -> str | None:
    """:func:`core.views.recipient_times` (each person's hour, when the schedule reads
    it in their zone), a direct message said as its mention."""
    return views.recipient_times(schedule, shown=mention)


def clip(text: str, limit: int) -> str:
    """``text`` on one line, cut to ``limit`` characters with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: max(0, limit - 1)] + "…"


def quote(text: str, limit: int = 600) -> str:
    """A Markdown block quote of (at most ``limit`` characters of) ``text``."""
    cut = text if len(text) <= limit else text[: limit - 1] + "…"
    return "\n".join(f"> {line}" for line in cut.splitlines() or [""])


def upcoming(schedule: Schedule, count: int = 3) -> list[datetime]:
    """The schedule's next ``count`` sends (none unless it is active), past the dates
    its skip calendars skip."""
    return calendars.schedule_upcoming(schedule, count)[0]


def skipping(schedule: Schedule, skipped: list[tuple[datetime, str]]) -> str | None:
    """A line about the schedule's skip calendars: the next occurrences they skip
    (``skipped``, from :func:`core.calendars.schedule_upcoming`), each with the event's
    name; None when it has none."""
    if not schedule.skip_calendars:
        return None
    count = len(schedule.skip_calendars)
    line = f"**Skips:** the event dates of {count} calendar{'s' if count != 1 else ''}"
    if not skipped:
        return line
    days = ", ".join(f"<t:{int(at.timestamp())}:D> ({clip(name, 60)})" for at, name in skipped)
    return f"{line}; next skipped: {days}"


def card(schedule: Schedule, heading: str | None = None, *, read_back: bool = False) -> str:
    """One schedule: id, state, destination, the reading in words, next sends, text;
    ``heading`` (e.g. "Scheduled.") goes first. ``read_back``: the words tell a time of
    day Herald chose (the answer to a create or an edit)."""
    lines = [heading] if heading else []
    words = views.read_back(schedule) if read_back else describe(schedule)
    lines += [
        f"**Schedule #{schedule.id}** · {schedule.shown_state} · to {recipients(schedule)}",
        f"**When:** {words}",
    ]
    if (times_theirs := their_times(schedule)) is not None:
        lines.append(f"**Their time:** {times_theirs}")
    if (schedule.priority or NORMAL) != NORMAL:  # issue 37: urgent or bulk
        lines.append(f"**Priority:** {schedule.priority}")
    if (rule := until_done.of_options(schedule.options)) is not None:  # issue 40
        lines.append(f"**Until done:** {ladder(rule)}")
    times, skipped = calendars.schedule_upcoming(schedule, 3)
    if times:
        lines.append(f"**Next:** {stamp(times[0])}")
        if len(times) > 1:
            later = ", ".join(f"<t:{int(at.timestamp())}:F>" for at in times[1:])
            lines.append(f"**Then:** {later}")
    elif schedule.state == ScheduleState.PAUSED.value:
        lines.append("**Next:** none while paused (`/schedule resume` starts it again)")
    if (skips := skipping(schedule, skipped)) is not None:
        lines.append(skips)
    if (used := template_line(schedule)) is not None:
        lines.append(used)
        lines.append(quote(sent_text(schedule, times[0] if times else None)))
    else:
        lines.append(quote(schedule.body))
    return "\n".join(lines)


# --- named templates (issue 39) ------------------------------------------------------------


def data_text(data: Mapping[str, Any]) -> str:
    """Data as the ``data`` option takes it: ``service=api note="big release"`` (a value
    holding a space, a comma or a quote in quotes)."""
    pairs = []
    for name, value in data.items():
        shown = str(value)
        if not shown or any(c.isspace() or c in ",\"'" for c in shown):
            shown = f"'{shown}'" if '"' in shown else f'"{shown}"'
        pairs.append(f"{name}={shown}")
    return " ".join(pairs)


def template_line(schedule: Schedule) -> str | None:
    """``**Template:** `deploy` v3 · service=api version=1.4`` for a schedule sending a
    named template (:func:`core.views.template_of`); None for one with its own text."""
    used = views.template_of(schedule)
    if used is None:
        return None
    line = f"**Template:** `{used['name']}` v{used['version']}"
    if used["data"]:
        line += f" · {clip(data_text(used['data']), 300)}"
    if used["data_by_recipient"]:
        count = len(used["data_by_recipient"])
        line += f" · own data for {count} recipient{'s' if count != 1 else ''}"
    return line


def template_heading(schedule: Schedule) -> str | None:
    """A templated schedule's confirmation: "Scheduled template **deploy** v3 to <#1>
    every Monday at 09:00 (UTC)."; None for one with its own text."""
    used = views.template_of(schedule)
    if used is None:
        return None
    return (
        f"Scheduled template **{used['name']}** v{used['version']} to {recipients(schedule)} "
        f"{describe(schedule)}."
    )


def sent_text(schedule: Schedule, at: datetime | None = None) -> str:
    """What the schedule sends: its own text, or its template filled in as the
    dispatcher fills it (core.dispatcher's ``templated``) for its first recipient at
    ``at`` (its next send; else when it starts). The template's source when it cannot
    be filled in (checked when saved: only if the renderer changed since)."""
    filled = views.filled_text(schedule, at or schedule.starts_at)
    return schedule.body if filled is None else filled


_JOB_MARK = {
    "delivered": "✅",
    "dead": "❌",
    "retrying": "🔁",
    "pending": "⏳",
    "claimed": "📤",
    "skipped": "⏭️",
}


def detail(found: ScheduleDetail) -> str:
    """A card, how the recipients fared (several of them), and the latest sends and how
    they went (each one's place, with several)."""
    schedule = found.schedule
    text = card(schedule)
    if (fare := views.fared(schedule, found.jobs, shown=mention)) is not None:
        text += f"\n**Latest:** {fare}"
    many = len(views.recipients_of(schedule)) > 1
    nxt = schedule.next_run_at
    done = [  # occurrences skipped ahead are in the card's "Skips" line
        job
        for job in found.jobs
        if job.state != "pending"
        and not (job.state == "skipped" and nxt is not None and job.occurrence_at > nxt)
    ][: 6 if many else 3]
    if done:
        rows = []
        for job in done:
            mark = _JOB_MARK.get(job.state, "•")
            at = job.finished_at or job.due_at
            error = f": {clip(job.last_error, 120)}" if job.last_error else ""
            place = f" to {where(job.destination or schedule.destination)}" if many else ""
            rows.append(f"{mark} {job.state}{place} <t:{int(at.timestamp())}:R>{error}")
        text += "\n**Latest sends:**\n" + "\n".join(rows)
    return fit(text)


def line(schedule: Schedule, viewer: Actor | None = None) -> str:
    """One schedule in a list (at most :data:`LINE_MOST` characters), as ``viewer``
    sees it (the owner and the admins: a webhook's host, port and path)."""
    times = upcoming(schedule, count=1)
    when = f"<t:{int(times[0].timestamp())}:R>" if times else schedule.shown_state
    place = places(schedule, full=views.sees_destination(viewer, schedule.owner))
    return (
        f"**#{schedule.id}** · {when} · {clip(describe(schedule), 60)} · "
        f"{place} · {clip(sent_text(schedule, times[0] if times else None), 50)}"
    )


#: A list row's most characters: id (19 digits), timestamp, rule, place and text.
LINE_MOST = 230
#: Rows on a list page: 8 rows, the heading and the page line fit in one message.
PAGE = 8


def listing(
    schedules: list[Schedule],
    *,
    everyone: bool = False,
    state: str | None = None,
    number: int = 0,
    viewer: Actor | None = None,
) -> tuple[str, int, int]:
    """Page ``number`` (from 0; past the end: the last) of the open schedules (active
    and paused), or with ``state`` of those given, soonest first: its text, the page
    shown and how many pages there are; as ``viewer`` sees it (:func:`line`)."""
    shown = sorted(
        (s for s in schedules if state is not None or s.state in OPEN_STATES),
        key=lambda s: (s.next_run_at is None, s.next_run_at or s.starts_at),
    )
    whose = "Everyone's" if everyone else "Your"
    if state is not None:
        whose += f" {state}"
    if not shown:
        return f"{whose} list is empty: nothing is scheduled. Start with `/schedule create`.", 0, 1
    pages = -(-len(shown) // PAGE)
    number = max(0, min(number, pages - 1))
    rows = [line(s, viewer) for s in shown[number * PAGE : (number + 1) * PAGE]]
    head = f"**{whose} schedules** ({len(shown)}):"
    foot = [f"-# Page {number + 1} of {pages}"] if pages > 1 else []
    return fit("\n".join([head, *rows, *foot])), number, pages


_MARKUP = re.compile(r"([\\*_~`|>#\[\]()<:@-])")


def plain(name: str) -> str:
    """A name as text: its Markdown, mentions and links escaped."""
    return _MARKUP.sub(r"\\\1", name)


def agenda_line(entry: AgendaEntry, viewer: str | None = None) -> str:
    """One schedule of a channel's agenda: id, next send, rule in words, author, text
    (``private``: one of the viewer's own they marked private)."""
    s = entry.schedule
    when = f"<t:{int(entry.next_at.timestamp())}:R>" if entry.next_at else "no send ahead"
    mark = " · private" if s.private and s.owner == viewer else ""
    author = "you" if s.owner == viewer else plain(clip(entry.author, 40))
    return (
        f"**#{s.id}** · {when} · {clip(entry.when, 60)} · by {author}"
        f"{mark} · {clip(sent_text(s, entry.next_at), 50)}"
    )


#: Schedules of a channel's agenda read to count them: core is asked for one more, and
#: past this many the reply says "more than" instead of a count it does not know.
AGENDA_COUNTED = 200


def agenda(entries: Sequence[AgendaEntry], channel_id: int, viewer: str | None = None) -> str:
    """``/schedule list channel:``: what is scheduled into the channel, soonest first,
    as many rows as one message holds, then "… and N more" (past
    :data:`AGENDA_COUNTED`, "more than")."""
    if not entries:
        return (
            f"Nothing is scheduled into <#{channel_id}> (a schedule its author marked "
            "private is in their own list only)."
        )
    over = "more than " if len(entries) > AGENDA_COUNTED else ""
    entries = entries[:AGENDA_COUNTED]
    head = f"**Scheduled into <#{channel_id}>** ({over}{len(entries)}):"
    rows = [agenda_line(e, viewer) for e in entries]
    kept = [head]
    size = len(head)
    for n, row in enumerate(rows):
        rest = len(rows) - n - 1
        tail = len(f"\n… and {over}{rest} more") if rest else 0
        if size + 1 + len(row) + tail > MAX_MESSAGE:
            kept.append(f"… and {over}{len(rows) - n} more")
            break
        kept.append(row)
        size += 1 + len(row)
    else:
        if over:  # every row read fits, and core has more
            kept.append("… and more")
    return "\n".join(kept)


def choice_label(schedule: Schedule) -> str:
    """An ``id`` autocomplete entry: ``#12 · next Mon 30 Mar 09:00 · Standup…``."""
    times = upcoming(schedule, count=1)
    if times:
        when = f"next {wall(times[0], schedule.timezone)}"
    else:
        when = schedule.shown_state
    text = sent_text(schedule, times[0] if times else None)
    return clip(f"#{schedule.id} · {when} · {text}", MAX_CHOICE)


def when_label(reading: timeexpr.When) -> str:
    """A ``when`` autocomplete entry: how the text reads and when it first fires."""
    words = reading.read_back
    if reading.recurring:
        words = f"{words} — next {wall(reading.first, reading.timezone)}"
    return clip(words, MAX_CHOICE)


def dead_letter(item: Settled) -> str:
    """The alert posted to the alert channel when a job dies."""
    job = item.job
    error = item.error or (item.attempt.error if item.attempt else None) or "no error recorded"
    return fit(
        "\n".join(
            [
                f"**Dead letter** · job {job.id} · schedule #{job.schedule_id}",
                f"To {where(job.destination)} · due {stamp(job.due_at)} · "
                f"{job.attempts} attempt{'s' if job.attempts != 1 else ''}",
                f"**Error:** {clip(error, 500)}",
                quote(job.body, 400),
                "Retry puts it back in the queue now; Discard gives up on it. "
                "Only Herald admins can decide.",
            ]
        )
    )


def decided(original: str, verb: str, user_id: int, at: datetime) -> str:
    """An alert after a decision: its text, without the call to act, plus who decided."""
    kept = [row for row in original.splitlines() if not row.startswith("Retry puts it back")]
    kept.append(f"**{verb}** by <@{user_id}> <t:{int(at.timestamp())}:R>")
    return fit("\n".join(kept))


def feed_added(feed: Feed, url: str) -> str:
    before = describe_before(feed.before_s)
    return fit(
        f"Feed #{feed.id}: a reminder {before} before each event of <{url}> "
        f"in {where(feed.destination)}, worded `{clip(feed.template, 200)}`. "
        f"`/schedule feed remove id:{feed.id}` stops it."
    )


def feeds(found: list[Feed]) -> str:
    """The event feeds, within one message."""
    if not found:
        return "There are no event feeds. Admins add one with `/schedule feed add`."
    rows = [
        f"**#{f.id}** · {describe_before(f.before_s)} before each event of calendar "
        f"{f.calendar_id} · "
        f"{where(f.destination)} · `{clip(f.template, 80)}`"
        for f in found
    ]
    return fit("\n".join([f"**Event feeds** ({len(found)}):", *rows]))


def fit(text: str) -> str:
    """``text`` cut to fit one Discord message."""
    return text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 1] + "…"
