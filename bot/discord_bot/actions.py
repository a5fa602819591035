"""What each ``/schedule`` command, autocomplete and button does, as plain functions.

Each takes primitive values (Discord ids as ints, typed text) plus the use-case object
``herald``, calls it and returns a :class:`Reply`. A :class:`~core.errors.HeraldError`
propagates unchanged: the discord.py glue shows ``str(error)`` to the member, ephemerally.
No discord.py here, so all of it is testable without Discord.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from bot.discord_bot import render
from bot.discord_bot.choices import EXAMPLES
from core import verbs, views
from core.actors import ActorRef, Principal, discord_tenant
from core.cases import Herald, To
from core.errors import InvalidInput, PermissionDenied
from core.models import Schedule, ScheduleState
from core.settings import Settings
from core.store import Settled


@dataclass(frozen=True)
class Button:
    """A button under a reply: ``action`` is a verb of core/verbs.py (on a schedule: edit,
    pause, resume, cancel; on a dead letter: retry, discard); ``target`` the schedule or
    job id."""

    action: str
    target: int


@dataclass(frozen=True)
class ListPage:
    """A page of ``/schedule list`` and whose list it is: the member ``user`` in the
    server ``guild`` who asked (a click by anyone else, or elsewhere, is refused)."""

    guild: int
    user: int
    everyone: bool = False
    state: str | None = None
    number: int = 0


@dataclass(frozen=True)
class Reply:
    """What to show the member: text (Discord Markdown) and buttons; ``pages``: the
    Previous and Next buttons of a list, each with the page it leads to; ``asked``: a
    request kept while its author decides (:mod:`.duplicates`), under Create anyway
    and Cancel."""

    text: str
    buttons: tuple[Button, ...] = ()
    pages: tuple[tuple[str, ListPage], ...] = ()
    asked: str | None = None


@dataclass(frozen=True)
class Saving:
    """How ``/schedule create`` saves (issue 41): ``private`` keeps it out of the
    channel's list; ``duplicates`` what a schedule already sending the same text there
    does ("refuse": :class:`core.cases.channel_view.Duplicated`, nothing saved;
    "ignore": Create anyway); ``seen_in`` the channel the interaction came from (Discord
    signed it: the member is in it)."""

    private: bool = False
    duplicates: Literal["warn", "refuse", "ignore"] = "warn"
    seen_in: str | None = None

    def kwargs(self) -> dict[str, Any]:
        """The keyword arguments of ``create_schedule``."""
        return {"private": self.private, "duplicates": self.duplicates, "seen_in": self.seen_in}


#: A save as core does it when nothing is said: not private, duplicates warned of.
AS_ASKED = Saving()


def actor_id(user_id: int) -> str:
    """The Herald member id of a Discord user: ``discord:<user id>``."""
    return f"discord:{user_id}"


def destination(channel_id: int) -> str:
    """The destination URI of a Discord channel: ``discord:<channel id>``."""
    return f"discord:{channel_id}"


async def sync_member(
    herald: Herald,
    settings: Settings,
    *,
    principal: Principal,
    display_name: str,
    manages_server: bool | None,
) -> Principal:
    """Record the member's name and (only with ``HERALD_DISCORD_ADMINS_FROM_PERMISSION``)
    whether they have Manage Server in this server, which makes them an admin of this
    server's tenant only; count the command against their commands per minute
    (QuotaExceeded past it); returns who they are."""
    from_permission = settings.discord_admins_from_permission and manages_server is not None
    actor = await herald.sync_member(
        principal,
        display_name=display_name,
        platform_admin=manages_server if from_permission else None,
    )
    await herald.count_command(actor)  # the actor just read, not read again
    return principal


def check_can_post(channel_id: int, *, member_can: bool, bot_can: bool) -> None:
    """Refuse a channel where the member, or the bot, cannot send messages."""
    if not member_can:
        raise PermissionDenied(
            f"You cannot send messages in <#{channel_id}>, so Herald will not send there for "
            "you: pick a channel where you can post."
        )
    if not bot_can:
        raise PermissionDenied(
            f"Herald cannot send messages in <#{channel_id}>: ask a server admin to give it "
            "View Channel and Send Messages there, or pick another channel."
        )


def buttons_for(
    schedule: Schedule, *, toggle: bool = False, send_now: bool = False
) -> tuple[Button, ...]:
    """Edit and Cancel, while the schedule can still change; with ``toggle``, Resume
    for a paused schedule or Pause for an active one between them; with ``send_now``,
    Send now before Cancel while it is active with a send ahead (core/verbs.py's
    send-now). At most four: a row holds five."""
    if schedule.id is None or schedule.state not in render.OPEN_STATES:
        return ()
    middle: tuple[Button, ...] = ()
    if toggle:
        paused = schedule.state == ScheduleState.PAUSED.value
        middle = (Button("resume" if paused else "pause", schedule.id),)
    active = schedule.state == ScheduleState.ACTIVE.value and schedule.next_run_at is not None
    if send_now and active:
        middle += (Button("send-now", schedule.id),)
    return (Button("edit", schedule.id), *middle, Button("cancel", schedule.id))


def _answer(
    schedule: Schedule,
    heading: str,
    *,
    read_back: bool = False,
    toggle: bool = False,
    send_now: bool = False,
) -> Reply:
    card = render.card(schedule, heading, read_back=read_back)
    return Reply(render.fit(card), buttons_for(schedule, toggle=toggle, send_now=send_now))


def warned(heading: str, schedule: Schedule) -> str:
    """``heading`` and, under it, what the save found worth a warning (issue 41: a
    duplicate, a crowded destination), a "⚠️ …" line each."""
    lines = [f"⚠️ {w.text}" for w in views.warnings_of(schedule)]
    return "\n".join([heading, *lines])


# --- commands --------------------------------------------------------------------------


def templated(template: str | None, data: Mapping[str, str] | None) -> dict[str, Any]:
    """The arguments of ``create_schedule`` naming a template (none without one)."""
    if template is None:
        return {}
    return {"template": template, "data": dict(data or {})}


async def create(
    herald: Herald,
    actor: ActorRef,
    *,
    channel_id: int | None = None,
    to: To | None = None,
    when: str,
    text: str,
    tz: str | None = None,
    skip: Sequence[str] = (),
    their_time: bool = False,
    priority: str | None = None,
    template: str | None = None,
    data: Mapping[str, str] | None = None,
    until_done: Mapping[str, Any] | None = None,
    saving: Saving = AS_ASKED,
) -> Reply:
    """``/schedule create``: schedule ``text`` (or the named ``template`` filled in with
    ``data``) into the channel, or to every recipient of ``to`` (destinations and
    chains, :func:`core.cases.recipients.wanted_of`; with ``their_time``, each person at
    that hour in their own zone), skipping the event dates of the ``skip`` calendars
    (URLs; or ``when`` ends ``except … from URL``). Without a zone of the command or of
    the member, the server default is used, and the reply says so. A template's reply
    says which one, its version, where and when, and shows the next send filled in.
    ``until_done``: the ladder (:func:`bot.discord_bot.ladders.ladder`). A message held
    for an approver says so. ``saving``: private, duplicates, where it was asked; the
    save's warnings are said under the heading."""
    if to is None:
        if channel_id is None:
            raise ValueError("create needs a channel or recipients")
        to = destination(channel_id)
    member = await herald.actor(actor)
    schedule, created = await herald.create_schedule(
        actor,
        to=to,
        when=when,
        text=text,
        tz=tz,
        skip=skip,
        their_time=their_time,
        priority=priority,
        until_done=until_done,
        **templated(template, data),
        **saving.kwargs(),
    )
    heading = "Scheduled." if created else "Already scheduled."
    if created and template is not None:
        heading = render.template_heading(schedule) or heading
    text_out = render.card(schedule, warned(heading, schedule), read_back=created)
    if tz is None and member.timezone is None:
        text_out += (
            f"\n-# You have not set a time zone, so Herald read this in **{schedule.timezone}** "
            "(the server default). Set yours with `/schedule timezone`; it applies to your "
            "next schedules."
        )
    text_out += await held_note(herald, actor, schedule)
    return Reply(render.fit(text_out), buttons_for(schedule))


async def held_note(herald: Herald, actor: ActorRef, schedule: Schedule) -> str:
    """For a schedule saved awaiting approval (issue 40): why, and that nothing is
    sent until approved ("" for any other)."""
    if schedule.state != ScheduleState.AWAITING.value:
        return ""
    rows = await herald.approvals(actor, kind="send", schedule_id=schedule.id)
    why = next((r.why for r in rows), None) or "it needs a second person's approval"
    said = render.said(why)
    return f"\nHeld for approval: {said}. Nothing is sent until an approver approves it."


async def list_schedules(
    herald: Herald,
    actor: ActorRef,
    *,
    everyone: bool = False,
    state: str | None = None,
    page: ListPage | None = None,
) -> Reply:
    """``/schedule list``: the member's (or everyone's) active and paused schedules, or
    those in ``state`` (core.models.STATE_FILTERS), a page at a time; with ``page``
    (whose list, which page), Previous and Next buttons lead to the others."""
    if page is not None:
        everyone, state = page.everyone, page.state
    if state is not None:
        found = await herald.list_schedules(actor, everyone=everyone, state=state)
    else:
        found = []
        for live in (ScheduleState.ACTIVE, ScheduleState.PAUSED):
            found += await herald.list_schedules(actor, everyone=everyone, state=live.value)
    number = 0 if page is None else page.number
    viewer = await herald.actor(actor)
    text, number, count = render.listing(
        found, everyone=everyone, state=state, number=number, viewer=viewer
    )
    if page is None or count < 2:
        return Reply(text)
    turns: list[tuple[str, ListPage]] = []
    if number > 0:
        turns.append(("previous", replace(page, number=number - 1)))
    if number < count - 1:
        turns.append(("next", replace(page, number=number + 1)))
    return Reply(text, pages=tuple(turns))


async def turn_page(herald: Herald, actor: Principal, page: ListPage) -> Reply:
    """Previous or Next under a list: that page, read as the list is, for the member
    who asked for the list in that server only (PermissionDenied for anyone else)."""
    owner = Principal(actor_id(page.user), discord_tenant(page.guild, page.user))
    if (actor.id, actor.tenant) != (owner.id, owner.tenant):
        raise PermissionDenied(
            "These page buttons belong to someone else's list: `/schedule list` shows yours."
        )
    return await list_schedules(herald, actor, page=page)


async def show(herald: Herald, actor: ActorRef, schedule_id: int) -> Reply:
    """``/schedule show``: one schedule with its next and latest sends."""
    found = await herald.show_schedule(actor, schedule_id)
    return Reply(render.detail(found), buttons_for(found.schedule, send_now=True))


async def edit(
    herald: Herald,
    actor: ActorRef,
    schedule_id: int,
    *,
    when: str | None = None,
    text: str | None = None,
    channel_id: int | None = None,
    to: To | None = None,
    expected_version: int | None = None,
    template: str | None = None,
    data: Mapping[str, str] | None = None,
    until_done: Mapping[str, Any] | bool | None = None,
    private: bool | None = None,
) -> Reply:
    """``/schedule edit`` (and the Edit form): a new time, text, channel or recipients
    (``to`` replaces them all). A new time is read in the schedule's own zone.
    ``template`` moves it to that template (``none``, with a ``text``: its own text
    again); ``data`` replaces its template's values; ``until_done`` its ladder (False:
    sent plainly again); ``private`` whether the channel's list leaves it out. A
    message held for an approver again says so; the save's warnings are said."""
    if to is None and channel_id is not None:
        to = destination(channel_id)
    if text is not None and template is None:
        await check_own_text(herald, actor, schedule_id)
    schedule = await herald.edit_schedule(
        actor,
        schedule_id,
        when=when,
        text=text,
        to=to,
        expected_version=expected_version,
        template=template,
        data=None if data is None else dict(data),
        until_done=until_done,
        private=private,
    )
    reply = _answer(schedule, warned("Changed.", schedule), read_back=when is not None)
    note = await held_note(herald, actor, schedule)
    return replace(reply, text=render.fit(reply.text + note)) if note else reply


async def check_own_text(herald: Herald, actor: ActorRef, schedule_id: int) -> None:
    """Refuse, in Discord's words, a new text for a schedule that sends a template."""
    schedule = (await herald.show_schedule(actor, schedule_id)).schedule
    used = views.template_of(schedule)
    if used is not None:
        raise InvalidInput(
            f"Schedule #{schedule_id} sends template {used['name']!r}: change its values "
            "with `data:`, or give `template:none` with the new message to stop using it."
        )


async def edit_from_form(
    herald: Herald,
    actor: ActorRef,
    schedule_id: int,
    *,
    version: int,
    when: str,
    text: str,
    was_when: str,
    was_text: str,
) -> Reply:
    """The Edit form: only the fields the member changed, refused if the schedule
    changed since the form was opened."""
    new_when = when.strip() if when.strip() != was_when.strip() else None
    new_text = text if text != was_text else None
    if new_when is None and new_text is None:
        return Reply(f"Nothing changed: schedule #{schedule_id} stays as it was.")
    return await edit(
        herald, actor, schedule_id, when=new_when, text=new_text, expected_version=version
    )


async def change(herald: Herald, actor: ActorRef, verb: str, schedule_id: int) -> Reply:
    """``/schedule cancel|pause|resume|skip|send-now`` (and the buttons): the verb's
    use case and heading from core/verbs.py; what the use case noted (send-now: which
    occurrence goes now) in the heading. Pause, resume and skip leave Send now on the
    card (an active schedule's); after Send now, not again."""
    chosen = verbs.verb(verb)
    if not chosen.offered_on(verbs.DISCORD) or chosen not in verbs.STATE_VERBS:
        raise ValueError(f"unknown verb {verb!r}")
    schedule = await verbs.perform(herald, chosen, actor, schedule_id)
    heading = chosen.heading
    notes = "; ".join(views.save_notes(schedule))
    if notes:
        said = notes[:1].upper() + notes[1:]
        heading = f"{said}." if said == chosen.done else f"{chosen.done}: {notes}."
    sent = chosen.name == "send-now"
    return _answer(schedule, heading, toggle=chosen.toggles, send_now=not sent)


async def agenda(herald: Herald, actor: ActorRef, channel_id: int, *, seen: bool) -> Reply:
    """``/schedule list channel:`` (issue 41): what is scheduled into that channel, by
    everyone (not what its authors marked private), to a member who can see it. With
    ``seen`` (Discord computed the member's View Channel there, in the signed
    interaction) core takes that channel as seen; else it asks Discord."""
    where = destination(channel_id)
    entries = await herald.agenda(
        actor, where, seen_in=where if seen else None, limit=render.AGENDA_COUNTED + 1
    )
    viewer = await herald.actor(actor)
    return Reply(render.agenda(entries, channel_id, viewer.id))


async def timezone(herald: Herald, actor: ActorRef, zone: str | None) -> Reply:
    """``/schedule timezone``: show the member's zone, or set it."""
    if zone is None:
        member = await herald.actor(actor)
        if member.timezone:
            return Reply(
                f"Your time zone is **{member.timezone}**. "
                "Change it with `/schedule timezone zone:`."
            )
        return Reply(
            "You have not set a time zone, so Herald reads your times in "
            f"**{herald.settings.default_tz}** (the server default). Set yours with "
            "`/schedule timezone zone:` (start typing a city, e.g. Berlin)."
        )
    name = await herald.set_timezone(actor, zone)
    return Reply(
        f"Your time zone is now **{name}**. New schedules read times there; existing ones "
        "keep the zone they were made in."
    )


def help_reply(default_tz: str) -> Reply:
    """``/schedule help`` (within one message: 2,000 characters)."""
    examples = ", ".join(f"`{e}`" for e in EXAMPLES)
    return Reply(
        "\n".join(
            [
                "**Herald** sends a message later, once or on a rule, in your time zone.",
                "`/schedule create when: message: [channel:] [timezone:] [skip_calendar:]` "
                "— in this channel or another. `when` reads " + examples + "; "
                "`except holidays from https://…/holidays.ics` (or `skip_calendar:`) skips "
                "a calendar's dates.",
                "Also `in an hour and a half`, `every hour between 9 and 17 on weekdays`, "
                "`tonight`, `eod`; a rule without a time goes at the default time (the "
                "reply says so).",
                "`to:me` (or `to:@member`) — a reminder by direct message, with Snooze and "
                "Done buttons.",
                "`to:#ops #dev @alice` — several places; `to:@alice or alice@example.com` "
                "emails when the direct message fails; `their_time:True` — that hour in "
                "each person's zone.",
                "`template:deploy data:service=api` instead of `message:` — a template of "
                "this server (`/schedule templates`).",
                "`until_done:True [nag:15m] [escalate_to:@lead escalate_after:1h]` — a Done "
                "button; nags and escalations until someone presses it.",
                "`/schedule list [channel:]` — yours, or everyone's into a channel you see "
                "(`private:True` keeps one out). `/schedule approvals` — messages held for "
                "an approver.",
                "`/schedule show id:` · `edit id: [when:] [message:] [channel: or to:]` · "
                "`cancel id:` · `pause id:` · `resume id:` · "
                "`skip id:` (a rule's next send only) · `send-now id:` (the next send, now).",
                f"`/schedule timezone [zone:]` — your time zone (until set: {default_tz}): "
                "a city (Berlin) or an IANA name.",
                "`/schedule prefs` — how reminders reach you. Admins: `tenant:True`; "
                "`urgent:True` on create.",
                "`/schedule feed add calendar: [before:] [channel:] [template:]` · "
                "`feed list` · `feed remove id:` — admins: a reminder before each event "
                "of an iCalendar feed.",
                "Replies are yours alone. You schedule where you and Herald can post; admins "
                "manage everyone's schedules.",
            ]
        )
    )


# --- event feeds -------------------------------------------------------------------------


async def feed_add(
    herald: Herald,
    actor: ActorRef,
    *,
    channel_id: int,
    calendar: str,
    before: str = "10m",
    template: str | None = None,
    tz: str | None = None,
) -> Reply:
    """``/schedule feed add``: an admin subscribes the channel to a calendar (a
    reminder ``before`` each event). Core refuses anyone else (PermissionDenied,
    audited)."""
    feed = await herald.add_feed(
        actor,
        calendar=calendar.strip(),
        to=destination(channel_id),
        before=before,
        template=template,
        tz=tz,
    )
    return Reply(render.feed_added(feed, calendar.strip()))


async def feed_list(herald: Herald, actor: ActorRef) -> Reply:
    """``/schedule feed list``."""
    return Reply(render.feeds(await herald.list_feeds(actor)))


async def feed_remove(herald: Herald, actor: ActorRef, feed_id: int) -> Reply:
    """``/schedule feed remove``: waiting reminders are cancelled."""
    count = await herald.remove_feed(actor, feed_id)
    return Reply(
        f"Feed #{feed_id} removed; {count} waiting reminder{'s' if count != 1 else ''} cancelled."
    )


# --- dead letters ------------------------------------------------------------------------


#: The alerts' decisions: the verbs on dead letters Discord offers (core/verbs.py).
DECISIONS = {v.name: v for v in verbs.offered(verbs.DISCORD, verbs.DECISIONS)}


def alert(item: Settled) -> Reply:
    """The post for a new dead letter, with a button for each decision (Retry, Discard)."""
    return Reply(render.dead_letter(item), tuple(Button(name, item.job.id) for name in DECISIONS))


async def decide_dead_letter(herald: Herald, actor: ActorRef, job_id: int, action: str) -> str:
    """An admin's decision (Retry, Discard) on an alert; returns its wording for the
    alert ("Retried"). Anyone else is refused (PermissionDenied) and nothing changes."""
    chosen = DECISIONS.get(action)
    if chosen is None:
        raise InvalidInput(f"Unknown dead-letter action {action!r}.")
    # core checks the role and audits a refusal (PermissionDenied)
    await herald.decide_dead_letters(actor, [job_id], chosen.name)
    return chosen.done
