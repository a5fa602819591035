"""``/schedule prefs`` (issue 37): a member's preferences, or with ``tenant`` an admin's
server defaults, shown and changed through :meth:`core.cases.Herald.set_preferences`;
and who may mark a schedule ``urgent``.

Plain functions over ``Herald`` (no discord.py): the command's options arrive as
primitives (users as their ids), the answer is a :class:`~bot.discord_bot.actions.Reply`
in words. Without any option the command only shows what applies.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from bot import prefs_words
from bot.discord_bot import actions, render
from core.actors import Principal
from core.cases import Herald, PreferenceChanges
from core.errors import InvalidInput, PermissionDenied
from core.preferences import DAY_NAMES, URGENT, Preferences, QuietHours

#: The ``accept`` option's choices: value → name (at most 25, names at most 100).
ACCEPT_CHOICES = {"anyone": "Anyone in this server", "admins": "Only admins", "self": "Only me"}
#: Words of the ``place`` option that mean "where the author sent it".
_WHERE = frozenset({"where", "where sent", "here", "default", "none", "reset", "off"})
_OFF = frozenset({"off", "none", "no", "clear"})
_PHONE = re.compile(r"\+?[\d\s().-]{6,25}")
PLACE_HELP = "dm, where (as sent), push, an email address or a phone number (+49…)"
URGENT_REFUSED = (
    "Only admins and operators can send urgent messages: schedule it without urgent and "
    "it goes out as a normal one."
)


def _mention(member: str) -> str:
    kind, _, rest = member.partition(":")
    return f"<@{rest}>" if kind == "discord" and rest.isdigit() else render.clip(member, 80)


async def urgency(herald: Herald, actor: Principal, urgent: bool) -> str | None:
    """``urgent`` for an admin or an operator who asked for it (None: normal);
    PermissionDenied with one sentence for anyone else."""
    if not urgent:
        return None
    if not (await herald.actor(actor)).sees_everything:
        raise PermissionDenied(URGENT_REFUSED)
    return URGENT


def place_of(text: str, user_id: int) -> str:
    """What the ``place`` option says, as a destination (``""``: where sent); core
    checks that it is the member's own."""
    raw = text.strip()
    word = raw.lower()
    if word in _WHERE:
        return ""
    if word in ("dm", "direct message", "dms"):
        return f"discord:@{user_id}"
    if word == "push":
        return f"push:discord:{user_id}"
    if word.startswith(("email:", "sms:", "push:", "discord:")):
        return raw
    if "@" in raw and not raw.startswith("<@"):
        return f"email:{raw.removeprefix('mailto:')}"
    if _PHONE.fullmatch(raw):
        return "sms:" + re.sub(r"[\s().-]", "", raw)
    raise InvalidInput(f"{render.clip(raw, 40)!r} is not a place: use {PLACE_HELP}.")


def _days(text: str) -> tuple[str, ...]:
    """``sat, sun`` / ``weekends`` / ``off`` (none) as the days core reads."""
    words = tuple(w for w in re.split(r"[\s,]+", text.strip().lower()) if w)
    return () if not words or set(words) <= _OFF else words


def _quiet(
    start: str | None, end: str | None, days: str | None, shown: QuietHours | None
) -> tuple[str | None, tuple[str, ...] | None]:
    """The window and days to send, or ``(None, None)`` when neither option is given.
    A changed part is completed from what applies now (``shown``): one's own quiet
    hours replace the defaults whole, so what was not changed stays as it was."""
    if start is None and end is None and days is None:
        return None, None
    now_start = f"{shown.start:%H:%M}" if shown is not None and shown.start else None
    now_end = f"{shown.end:%H:%M}" if shown is not None and shown.end else None
    now_days = tuple(DAY_NAMES[d] for d in sorted(shown.days)) if shown is not None else ()
    if (start or "").strip().lower() in _OFF or (end or "").strip().lower() in _OFF:
        window = ""
    elif start is None and end is None:  # only the days change
        window = f"{now_start}-{now_end}" if now_start and now_end else ""
    else:
        first, last = start or now_start, end or now_end
        if first is None or last is None:
            raise InvalidInput(
                "Give both quiet_start and quiet_end (e.g. 22:00 and 08:00): you have no "
                "quiet hours yet to change one end of."
            )
        window = f"{first.strip()}-{last.strip()}"
    chosen = _days(days) if days is not None else now_days
    QuietHours.parse(window, chosen)  # core's sentence for a bad time or day, first
    return window, chosen


async def prefs(
    herald: Herald,
    actor: Principal,
    *,
    user_id: int,
    tenant: bool = False,
    place: str | None = None,
    accept: str | None = None,
    block: Sequence[int] = (),
    unblock: Sequence[int] = (),
    quiet_start: str | None = None,
    quiet_end: str | None = None,
    quiet_days: str | None = None,
    hold_channels: bool | None = None,
    notices: bool | None = None,
) -> actions.Reply:
    """``/schedule prefs``: change what the options say (nothing: only show), then
    answer with what applies, in words."""
    if tenant:
        current: Preferences = await herald.tenant_preferences(actor)
        shown = current.quiet
    else:
        member = await herald.preferences(actor)
        shown = member.effective.quiet
    window, days = _quiet(quiet_start, quiet_end, quiet_days, shown)
    changes = PreferenceChanges(
        place=None if place is None else place_of(place, user_id),
        accept_from=accept,
        block=tuple(actions.actor_id(u) for u in block),
        unblock=tuple(actions.actor_id(u) for u in unblock),
        quiet=window,
        quiet_days=days,
        hold_channels=hold_channels,
        notices=notices,
    )
    saved = not changes.empty
    if tenant:
        if saved:
            current = await herald.set_tenant_preferences(actor, changes)
        lines = prefs_words.tenant_lines(current, mention=_mention)
        heading = "**This server's defaults** (each member's own choice wins)"
    else:
        if saved:
            member = await herald.set_preferences(actor, changes)
        lines = prefs_words.lines(
            member.own,
            member.tenant,
            member.effective,
            zone=member.zone,
            dm=f"discord:@{user_id}",
            mention=_mention,
            default_of="the server",
        )
        heading = "**Your preferences**"
    text = ("Saved. " if saved else "") + heading + "\n" + "\n".join(f"- {x}" for x in lines)
    if not tenant and (await herald.actor(actor)).timezone is None:
        text += (
            f"\n-# Quiet hours are read in {member.zone}, the server default: set your own "
            "zone with `/schedule timezone`."
        )
    if not saved:
        text += (
            "\n-# Change them with `/schedule prefs` and its options: place, accept, block, "
            "unblock, quiet_start, quiet_end, quiet_days, notices."
        )
    return actions.Reply(render.fit(text))
