"""Block Kit for Herald's replies: schedules, lists, details, notices.

Times are Slack date tokens (``<!date^EPOCH^{date_short_pretty} {time}|fallback>``), so
each reader sees them in their own zone; the fallback is the schedule's zone. User
text is escaped before it is shown (no accidental mention or link).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Protocol
from zoneinfo import ZoneInfo

from bot.slack import templated
from bot.slack.grammar import escape, unescape
from core import calendars, limits, routing, until_done, verbs, views
from core.actors import Actor
from core.cases import ScheduleDetail, describe_before
from core.channels import parse_destination
from core.errors import HeraldError, InvalidInput
from core.models import Feed, Schedule, ScheduleState, Template
from core.preferences import NORMAL
from core.views import describe

Blocks = list[dict[str, Any]]


class Warned(Protocol):
    """A save's warning (core's ``SaveWarning``, :func:`core.views.warnings_of`)."""

    @property
    def text(self) -> str: ...


class AgendaRow(Protocol):
    """One schedule of a channel's agenda (core's ``AgendaEntry``)."""

    @property
    def schedule(self) -> Schedule: ...
    @property
    def author(self) -> str: ...
    @property
    def when(self) -> str: ...
    @property
    def next_at(self) -> datetime | None: ...


#: A reply: the notification text and its blocks.
Reply = tuple[str, Blocks]

NEXT_COUNT = 3
#: Recipients a schedule's summary names before "and N more" (a reply after a create
#: names them all).
SHOWN_RECIPIENTS = 10
#: Schedules on a list page: each takes a divider, a section and its buttons (3 blocks),
#: the page a heading, a context and the page buttons; 15 * 3 + 3 = 48, within the 50
#: blocks of a message (limits.SLACK_MESSAGE_BLOCKS).
LIST_PAGE = 15
PAGE_PREVIOUS = "herald_list_previous"
PAGE_NEXT = "herald_list_next"
QUOTE_LIMIT = 300
#: Warnings (duplicates, congestion) a reply names before "and N more".
SHOWN_WARNINGS = 5
#: Schedules a channel's agenda shows, one section each: with its heading and the
#: "and N more" line, 42 blocks, within a message's 50.
AGENDA_SHOWN = 40
#: How much of each message an agenda quotes.
AGENDA_QUOTE = 150
#: Schedules of a channel's agenda read to count them: core is asked for one more, and
#: past this many the reply says "more than" instead of a count it does not know.
AGENDA_COUNTED = 200
#: The verbs a schedule's buttons carry (core/verbs.py: those Slack offers on one
#: schedule at its version, with a label), by action id: ``herald_pause``.
SCHEDULE_ACTIONS = {
    f"herald_{v.name}": v
    for v in verbs.offered(verbs.SLACK)
    if v.takes == "schedule_id+version" and v.label
}


def date_token(at: datetime, zone: str = "UTC") -> str:
    """``at`` as a Slack date token; the fallback is written in ``zone``."""
    local = at.astimezone(ZoneInfo(zone))
    fallback = f"{local:%a %d %b %Y %H:%M} {zone}"
    return f"<!date^{int(at.timestamp())}^{{date_short_pretty}} {{time}}|{fallback}>"


def where(destination: str, *, full: bool = False) -> str:
    """A destination as Slack shows it: ``<#C0123>`` for a Slack channel; a webhook's
    scheme and host, or with ``full`` (its owner, an admin) its host, port and path
    with its secrets hidden (:func:`core.views.sees_destination`)."""
    try:
        parsed = parse_destination(destination)
    except HeraldError:
        return f"`{escape(destination)}`"
    if parsed.is_dm:  # a reminder: a direct message to that person
        return (
            f"<@{parsed.target[1:]}> (direct message)"
            if parsed.kind == "slack"
            else f"`{escape(str(parsed))}` (direct message)"
        )
    if parsed.kind == "slack":
        channel, _, thread = parsed.target.partition("/")
        return f"<#{channel}>" + (" (in a thread)" if thread else "")
    return f"`{escape(parsed.for_owner() if full else parsed.redacted())}`"


def recipients_line(schedule: Schedule, *, full: bool = False, most: int | None = None) -> str:
    """Every recipient of ``schedule``, in order, as Slack shows them: "<#C1>, <#C2>,
    <@U1> (direct message) or `email:alice@example.com`" (:func:`core.routing.describe`
    with :func:`where`); with ``most``, the first ``most`` and "and N more"."""
    recipients = views.recipients_of(schedule)
    shown = recipients if most is None else recipients[:most]
    text = ", ".join(routing.describe(r, lambda d: where(d, full=full)) for r in shown)
    if len(shown) < len(recipients):
        text += f" and {len(recipients) - len(shown)} more"
    return text


_SLACK_USER = re.compile(r"\bslack:@([UW][A-Z0-9]+)")
_SLACK_CHANNEL = re.compile(r"\bslack:([CG][A-Z0-9]+)")


def their_times(schedule: Schedule) -> str | None:
    """When each recipient reading the time in their own zone gets the next occurrence
    (:func:`core.views.recipient_times`), Slack's members and channels as mentions and
    links; None when no recipient reads it in their own zone."""
    times = views.recipient_times(schedule, shown=_mention, most=SHOWN_RECIPIENTS)
    return None if times is None else "Their times: " + times


def _mention(destination: str) -> str:
    """A destination in a sentence: a Slack member or channel as its mention, anything
    else as :func:`core.views.destination` says it, escaped."""
    if (user := _SLACK_USER.fullmatch(destination)) is not None:
        return f"<@{user[1]}>"
    if (room := _SLACK_CHANNEL.fullmatch(destination)) is not None:
        return f"<#{room[1]}>"
    return escape(views.destination(destination))


def ladder_line(rule: until_done.UntilDone) -> str:
    """A schedule's ladder in words (:func:`core.until_done.describe`), its people and
    channels as mentions and links: "Until done, nag every 15 minutes, escalate to
    <@U1> after 1 hour"."""
    words = escape(until_done.describe(rule))
    words = _SLACK_USER.sub(lambda m: f"<@{m[1]}>", words)
    words = _SLACK_CHANNEL.sub(lambda m: f"<#{m[1]}>", words)
    return ":bell: " + words[:1].upper() + words[1:]


def skipping(schedule: Schedule, skipped: list[tuple[datetime, str]]) -> str | None:
    """A line about the schedule's skip calendars: the next occurrences they skip
    (``skipped``, from :func:`core.calendars.schedule_upcoming`), each with the event's
    name; None when it has none."""
    if not schedule.skip_calendars:
        return None
    count = len(schedule.skip_calendars)
    line = f"Skips the event dates of {count} calendar{'s' if count != 1 else ''}"
    if not skipped:
        return line + "."
    days = ", ".join(f"{date_token(t, schedule.timezone)} ({escape(n)})" for t, n in skipped)
    return f"{line}; next skipped: {days}"


def quote(body: str, limit: int = QUOTE_LIMIT) -> str:
    """The message body as a block quote, cut at ``limit`` characters. The body is
    already in Slack's escaped form (it is posted as is)."""
    shown = body if len(body) <= limit else body[: limit - 1] + "…"
    return "\n".join(f">{line}" for line in shown.splitlines() or [""])


def summary(
    schedule: Schedule,
    *,
    owner: bool = False,
    read_back: bool = False,
    viewer: Actor | None = None,
) -> str:
    """Id, destination, the time in words, the next times, the message quoted.
    ``read_back``: the words tell a time of day Herald chose (a create or an edit);
    ``viewer``: who reads it (its owner and the admins see a webhook's path)."""
    times, skipped = calendars.schedule_upcoming(schedule, NEXT_COUNT)
    words = views.read_back(schedule) if read_back else describe(schedule)
    full = views.sees_destination(viewer, schedule.owner)
    to = recipients_line(schedule, full=full, most=SHOWN_RECIPIENTS)
    lines = [f"*#{schedule.id}* to {to}: {escape(words)}"]
    if schedule.state != ScheduleState.ACTIVE.value:
        lines.append(f"_{schedule.shown_state}_")
    elif times:
        label = "Next" if len(times) == 1 else "Next times"
        lines.append(f"{label}: " + ", ".join(date_token(t, schedule.timezone) for t in times))
    if (skips := skipping(schedule, skipped)) is not None:
        lines.append(skips)
    if read_back and (theirs := their_times(schedule)) is not None:
        lines.append(theirs)
    if (schedule.priority or NORMAL) != NORMAL:  # issue 37: urgent or bulk
        lines.append(f"Priority: *{escape(schedule.priority)}*")
    if (rule := until_done.of_options(schedule.options)) is not None:
        lines.append(ladder_line(rule))
    if schedule.private:
        lines.append(":lock: Private: left out of its channel's list (`/schedule list here`)")
    if owner:
        lines.append(f"Owner: <@{schedule.owner.partition(':')[2]}>")
    lines.extend(message_lines(schedule))
    return "\n".join(lines)


def message_lines(schedule: Schedule) -> list[str]:
    """What a schedule sends, quoted: its own text; or for a template (issue 39) the
    template, its version and data, and its next message as it will be sent (the
    template's source, said to be one, when it has no next message)."""
    used = templated.line(schedule)
    if used is None:
        return [quote(schedule.body)]
    rendered = templated.next_text(schedule)
    if rendered is None:
        return [f"{used}; its text, filled in when sent:", quote(schedule.body)]
    several = len(views.recipients_of(schedule)) > 1
    return [f"{used}; its next message{' to the first' if several else ''}:", quote(rendered)]


def button(
    label: str, action_id: str, value: str, *, style: str | None = None, confirm: str | None = None
) -> dict[str, Any]:
    element: dict[str, Any] = {
        "type": "button",
        "text": {"type": "plain_text", "text": label},
        "action_id": action_id,
        "value": value,
    }
    if style:
        element["style"] = style
    if confirm:
        element["confirm"] = {
            "title": {"type": "plain_text", "text": "Are you sure?"},
            "text": {"type": "mrkdwn", "text": confirm},
            "confirm": {"type": "plain_text", "text": label},
            "deny": {"type": "plain_text", "text": "Keep it"},
            "style": "danger" if style == "danger" else "primary",
        }
    return element


def buttons(schedule: Schedule, *, full: bool = False, one: bool = False) -> dict[str, Any] | None:
    """Edit and Cancel (and with ``full``, Pause or Resume and Skip) for a live schedule.
    ``one``: the message shows only this schedule, so a click may replace it."""
    state = schedule.state
    if state not in (ScheduleState.ACTIVE.value, ScheduleState.PAUSED.value):
        return None
    sid = str(schedule.id)

    def of(name: str, **look: Any) -> dict[str, Any]:
        return button(verbs.verb(name).label, f"herald_{name}", sid, **look)

    elements = [of("edit")]
    if full and state == ScheduleState.ACTIVE.value:
        elements.append(of("pause"))
        elements.append(of("send-now", confirm=f"Schedule #{sid}'s next message goes out now."))
        if schedule.rrule is not None:
            elements.append(of("skip"))
    if full and state == ScheduleState.PAUSED.value:
        elements.append(of("resume"))
    elements.append(of("cancel", style="danger", confirm=f"Schedule #{sid} will stop for good."))
    block_id = f"schedule:{sid}:one" if one else f"schedule:{sid}"
    return {"type": "actions", "block_id": block_id, "elements": elements}


def section(text: str) -> dict[str, Any]:
    """A section of mrkdwn, cut (with an ellipsis) to what Slack shows in one."""
    return {"type": "section", "text": {"type": "mrkdwn", "text": clip(text)}}


def context(text: str) -> dict[str, Any]:
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": clip(text)}]}


def clip(text: str, limit: int = limits.SLACK_SECTION_TEXT.size) -> str:
    """Display text cut to ``limit``, never inside an escape (``&amp;``) or a Slack
    token (``<!date^…|…>``, ``<#C0123>``), which would then show as garbage."""
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    for opener, closer in (("<", ">"), ("&", ";")):
        start = cut.rfind(opener)
        if start != -1 and closer not in cut[start:]:
            cut = cut[:start]
    return cut + "…"


def schedule_blocks(
    schedule: Schedule,
    *,
    full: bool = False,
    owner: bool = False,
    one: bool = False,
    read_back: bool = False,
    viewer: Actor | None = None,
) -> Blocks:
    blocks = [section(summary(schedule, owner=owner, read_back=read_back, viewer=viewer))]
    actions = buttons(schedule, full=full, one=one)
    if actions is not None:
        blocks.append(actions)
    return blocks


def schedule_reply(
    schedule: Schedule, headline: str, *, read_back: bool = False, full: bool = False
) -> Reply:
    """A confirmation: what happened, what the save found worth warning of (a line
    each, :func:`warning_blocks`), then the schedule with Edit and Cancel
    (``read_back``: of a time just written, see :func:`summary`; ``full``: with Pause
    or Resume, Send now and Skip too, as after a pause or a resume)."""
    blocks = [
        section(headline),
        *warning_blocks(views.warnings_of(schedule)),
        *schedule_blocks(schedule, full=full, one=True, read_back=read_back),
    ]
    return f"{headline} (#{schedule.id})", blocks


def warning_blocks(found: list[Warned]) -> Blocks:
    """Each warning of a save (:func:`core.views.warnings_of`: the same message already
    scheduled there, a crowded channel) as a context line starting with :warning:, at
    most :data:`SHOWN_WARNINGS` and "and N more"."""
    lines = [context(f":warning: {w.text}") for w in found[:SHOWN_WARNINGS]]
    if len(found) > SHOWN_WARNINGS:
        lines.append(context(f":warning: … and {len(found) - SHOWN_WARNINGS} more."))
    return lines


def duplicate_reply(found: list[Warned], token: str) -> Reply:
    """Nothing saved: the same message is already scheduled there (each duplicate a
    line), with [Create anyway] and [Cancel], whose value is the held request's
    ``token`` (bot.slack.pending)."""
    from bot.slack.pending import ANYWAY, CANCEL

    said = "; ".join(w.text for w in found) + "."
    blocks: Blocks = [
        section(":warning: Nothing is scheduled yet: the same message is already there."),
        *warning_blocks(found),
        context("Create it anyway, or cancel it."),
        {
            "type": "actions",
            "block_id": "herald_duplicate",
            "elements": [
                button("Create anyway", ANYWAY, token, style="primary"),
                button("Cancel", CANCEL, token),
            ],
        },
    ]
    return limits.clip(f"Nothing is scheduled yet: {said}", limits.SLACK_TEXT), blocks


def agenda_reply(entries: list[AgendaRow], destination: str, viewer: str) -> Reply:
    """A channel's agenda (:meth:`core.cases.Herald.agenda`): each schedule with its
    author, its time in words, its next send and its message's start; the first
    :data:`AGENDA_SHOWN`, then how to read them all. ``viewer``: who asked (their own
    say "you")."""
    place = where(destination)
    if not entries:
        return notice(
            f"Nothing is scheduled into {place} that you can see (a schedule marked "
            "`private` is shown to its author only)."
        )
    beyond = len(entries) > AGENDA_COUNTED  # core read one more than counted
    entries = entries[:AGENDA_COUNTED]
    over = "more than " if beyond else ""
    shown = entries[:AGENDA_SHOWN]
    blocks: Blocks = [section(f"*Scheduled into {place}* ({over}{len(entries)})")]
    for entry in shown:
        blocks.append(section(agenda_line(entry, viewer)))
    if len(entries) > len(shown):
        more = f"{over}{len(entries) - len(shown)}"
        blocks.append(context(f"… and {more} more: `herald list --to {escape(destination)}`"))
    return f"Scheduled into {place}: {over}{len(entries)}", blocks


def agenda_line(entry: AgendaRow, viewer: str) -> str:
    """One schedule of an agenda: "*#41* · <@U1> · every weekday at 09:00 (UTC) · next
    <date>" and its message quoted."""
    schedule = entry.schedule
    kind, _, member = schedule.owner.partition(":")
    if schedule.owner == viewer:
        author = "you"
    elif kind == "slack" and member[:1] in ("U", "W"):
        author = f"<@{member}>"
    else:
        author = escape(entry.author)
    at = entry.next_at
    upcoming = f"next {date_token(at, schedule.timezone)}" if at is not None else "nothing left"
    line = f"*#{schedule.id}* · {author} · {escape(entry.when)} · {upcoming}"
    if schedule.private:
        line += " · _private_"
    return f"{line}\n{quote(schedule.body, AGENDA_QUOTE)}"


def notice(text: str) -> Reply:
    """A one-line answer (an error sentence from core, a confirmation...)."""
    return text, [section(text)]


def long_notice(text: str) -> Reply:
    """A notice longer than one section holds (3,000 characters, the help): one section
    per run of whole lines that fits."""
    parts: list[str] = []
    for line in text.split("\n"):
        if parts and len(parts[-1]) + 1 + len(line) <= limits.SLACK_SECTION_TEXT.size:
            parts[-1] += "\n" + line
        else:
            parts.append(line)
    return limits.clip(text, limits.SLACK_TEXT), [section(part) for part in parts]


def shown(error: HeraldError) -> str:
    """An error's sentence as mrkdwn: escaped, unless it is mrkdwn already."""
    return str(error) if getattr(error, "mrkdwn", False) else escape(str(error))


def plain(error: HeraldError) -> str:
    """An error's sentence as plain text (a modal's inline error): links made words."""
    text = re.sub(r"<#[A-Z0-9]+(?:\|[^>]*)?>", "that channel", str(error))
    return text if not getattr(error, "mrkdwn", False) else unescape(text)


def refusal(error: HeraldError) -> Reply:
    return notice(f":warning: {shown(error)}")


@dataclass(frozen=True)
class Page:
    """One page of a list, as its Next and Previous buttons carry it: whose list it is
    (the tenant and the Slack user who asked; anyone else's click is refused), which
    list (``everyone``, ``state``) and which page (from 0)."""

    tenant: str
    user: str
    everyone: bool = False
    state: str | None = None
    number: int = 0

    def dumps(self) -> str:
        return json.dumps(
            [self.tenant, self.user, int(self.everyone), self.state, self.number],
            separators=(",", ":"),
        )

    @classmethod
    def loads(cls, value: str) -> Page:
        """A button's value read back; InvalidInput when it is not one of Herald's."""
        try:
            tenant, user, everyone, state, number = json.loads(value)
            page = cls(str(tenant), str(user), bool(everyone), state, int(number))
        except (ValueError, TypeError):
            raise InvalidInput("That button carries no list page.") from None
        if page.number < 0 or not (page.state is None or isinstance(page.state, str)):
            raise InvalidInput("That button carries no list page.")
        return page

    def turned(self, step: int) -> Page:
        return replace(self, number=self.number + step)


def list_reply(schedules: list[Schedule], page: Page, viewer: Actor | None = None) -> Reply:
    """Page ``page.number`` of ``schedules`` (:data:`LIST_PAGE` a page), with Previous
    and Next buttons when there are other pages. A page past the end shows the last.
    ``viewer``: who asked (their own and, for an admin, everyone's webhooks are shown
    with their host, port and path)."""
    whose = "Everyone's" if page.everyone else "Your"
    if page.state is not None:
        whose += f" {page.state}"
    if not schedules:
        text = f"{whose} schedule list is empty. Try `/schedule help` to make one."
        return notice(text)
    pages = -(-len(schedules) // LIST_PAGE)
    number = min(page.number, pages - 1)
    first = number * LIST_PAGE
    shown = schedules[first : first + LIST_PAGE]
    where_in = f", {first + 1}–{first + len(shown)}" if pages > 1 else ""
    blocks: Blocks = [section(f"*{whose} schedules* ({len(schedules)}{where_in})")]
    for schedule in shown:
        blocks.append({"type": "divider"})
        blocks.extend(schedule_blocks(schedule, full=True, owner=page.everyone, viewer=viewer))
    if pages > 1:
        here = replace(page, number=number)
        turns = []
        if number > 0:
            turns.append(button("Previous", PAGE_PREVIOUS, here.turned(-1).dumps()))
        if number < pages - 1:
            turns.append(button("Next", PAGE_NEXT, here.turned(1).dumps()))
        blocks.append(context(f"Page {number + 1} of {pages}"))
        blocks.append({"type": "actions", "block_id": "list_pages", "elements": turns})
    return f"{whose} schedules: {len(schedules)}", blocks


def detail_reply(detail: ScheduleDetail) -> Reply:
    """One schedule with its last deliveries."""
    schedule = detail.schedule
    blocks = schedule_blocks(schedule, full=True, owner=True, one=True)
    zone = schedule.timezone
    lines = [
        f"State *{schedule.shown_state}*, version {schedule.version}, "
        f"expression `{escape(schedule.expression)}`"
    ]
    if (fared := views.fared(schedule, detail.jobs)) is not None:
        lines[0] += f"; {escape(fared)}"
    several = len(views.recipients_of(schedule)) > 1
    nxt = schedule.next_run_at
    # occurrences skipped ahead are in the summary's "next skipped"; here what happened
    jobs = [
        j
        for j in detail.jobs
        if not (j.state == "skipped" and nxt is not None and j.occurrence_at > nxt)
    ]
    for job in jobs[:5]:
        line = f"• {date_token(job.occurrence_at, zone)}: {job.state}"
        if job.ladder:  # a step of a message sent until done (issue 40)
            line += f" ({until_done.step_label(job.ladder)})"
        if several:
            line += f" to {where(job.destination or schedule.destination)}"
        if job.attempts:
            line += f" after {job.attempts} attempt{'s' if job.attempts != 1 else ''}"
        if job.last_error:
            line += f" ({escape(job.last_error[:200])})"
        lines.append(line)
    blocks.append(context("\n".join(lines)))
    return f"Schedule #{schedule.id}", blocks


def templates_reply(templates: list[tuple[Template, int]]) -> Reply:
    """``/schedule templates``: each template's name, description, variables and how
    many live schedules use it, with how to schedule one."""
    if not templates:
        return notice(
            "This workspace has no templates yet. Operators and admins add them with "
            "`herald template add` (or the API, or the console)."
        )
    lines = [f"*Templates* ({len(templates)})"]
    for template, count in templates:
        variables = ", ".join(f"{escape(n)} ({k})" for n, k in template.variables.items())
        line = f"• *{escape(template.name)}* v{template.version}"
        if template.description:
            line += f": {escape(template.description[:150])}"
        line += f" · variables: {variables or 'none'}"
        line += f" · used by {count} schedule{'s' if count != 1 else ''}"
        lines.append(line)
    first = templates[0][0]
    example = " ".join([f"template:{first.name}", *(f"{n}=…" for n in list(first.variables)[:5])])
    lines.append(f"Schedule one: `/schedule #general every monday at 9am {escape(example)}`.")
    return f"Templates: {len(templates)}", [section(p) for p in _runs(lines)]


def _runs(lines: list[str]) -> list[str]:
    """``lines`` joined into as few sections as hold them, within a message's blocks
    (the last cut short, "…", when they do not all fit)."""
    parts: list[str] = []
    for line in lines:
        line = clip(line)
        if parts and len(parts[-1]) + 1 + len(line) <= limits.SLACK_SECTION_TEXT.size:
            parts[-1] += "\n" + line
        else:
            parts.append(line)
    most = limits.SLACK_MESSAGE_BLOCKS.size
    if len(parts) > most:
        parts = [*parts[: most - 1], clip(parts[most - 1] + "\n…")]
    return parts


def feed_line(feed: Feed) -> str:
    return (
        f"*#{feed.id}* · {describe_before(feed.before_s)} before each event of calendar "
        f"{feed.calendar_id} · {where(feed.destination)} · `{escape(feed.template[:200])}`"
    )


def feed_added(feed: Feed, url: str) -> Reply:
    before = describe_before(feed.before_s)
    text = (
        f":white_check_mark: Feed #{feed.id}: a reminder {before} before each "
        f"event of {escape(url)} in {where(feed.destination)}, worded "
        f"`{escape(feed.template[:200])}`. `/schedule feed remove {feed.id}` stops it."
    )
    return notice(text)


def feeds_reply(feeds: list[Feed]) -> Reply:
    if not feeds:
        return notice(
            "There are no event feeds. Admins add one with `/schedule feed add URL before 10m`."
        )
    lines = [f"*Event feeds* ({len(feeds)})", *(f"• {feed_line(f)}" for f in feeds)]
    return f"Event feeds: {len(feeds)}", [section("\n".join(lines))]
