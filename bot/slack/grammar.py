"""The ``/schedule`` grammar: the text Slack sends after the command in, one command out.

Pure: no Slack, no database, no clock. The text arrives escaped the way Slack escapes
command text when the command's "Escape channels, users, and links" option is on
(``should_escape: true`` in the manifest): channels as ``<#C0123|general>`` or
``<#C0123>``, ``&``, ``<`` and ``>`` as ``&amp;``, ``&lt;`` and ``&gt;``.

Grammar (the first word decides; keywords are not case-sensitive)::

    /schedule                              open the modal
    /schedule [#channel] WHEN: MESSAGE     schedule (": " - a colon and a space - ends WHEN;
                                           a colon right after a word does too, "in 5
                                           minutes:hi", when it is the only such colon)
    /schedule [#channel] "MESSAGE" WHEN    the /remind form (straight or curly quotes)
    /schedule [#channel] WHEN template:NAME [name=value …]
                                           a named template with its data, in place of
                                           a message (bot/slack/template_words.py)
    /schedule remind [#channel] [to] MESSAGE WHEN
                                           /remind's own order, without quotes: WHEN
                                           starts at the first time word from which the
                                           rest reads as a time (the Slack layer reads)
    /schedule me WHEN: MESSAGE             a reminder to yourself, by direct message
    /schedule @someone WHEN: MESSAGE       a reminder to another member, by direct message
                                           (Slack sends the mention as <@U0123|name>)
    /schedule #ops #dev @alice WHEN: MESSAGE
                                           several recipients (spaces or commas between);
                                           ``@alice or alice@example.com``: a chain, the
                                           next tried when one fails (bot/slack/targets.py)
    … WHEN their time: MESSAGE             the time read in each person's own zone
    … WHEN until done[, nag every D][, escalate to @a[, #b] after D
         [, then escalate to … after D]]: MESSAGE
                                           a Done button, nags in its thread and
                                           escalations until pressed
                                           (bot/slack/ladder_words.py)
    /schedule approvals                    held messages waiting for an approver
    /schedule list [all] [STATE]
    /schedule list here|#channel           everything scheduled into a channel (its
                                           agenda), to anyone in it
    /schedule templates                    the workspace's templates
    /schedule show|edit|cancel|pause|resume|skip|send-now ID
                                           (delete and remove: cancel; now: send-now)
    /schedule timezone [ZONE]
    /schedule prefs [tenant]               your preferences (admins: the tenant's defaults)
    /schedule prefs notices off|on         a DM when a message you scheduled fails (default on)
    /schedule urgent …                     any schedule above, urgent (admins, operators)
    /schedule private …                    any schedule above, left out of its channel's
                                           agenda (``list here``)
    /schedule private|public ID            an existing one left out of it, or in it again
    /schedule feed add [#channel] URL [before 10m][: TEMPLATE]     (admins)
    /schedule feed list
    /schedule feed remove ID
    /schedule help

``#channel`` is a channel link, or a name typed as plain text (``#general``), which the
Slack layer finds by name (:class:`Create` ``channel_name``). A first word that is no
command, followed by nothing or by a schedule number (``frobnicate 3``), is answered
"Unknown command" (such a text never schedules anything), unless it is a time word
(``tomorrow``), which gets the time-format answer.

WHEN may end with ``except holidays from URL`` (core's
:func:`core.calendars.split_skip_phrase` reads it); Slack sends a URL as a link,
``<https://…>`` or ``<https://…|label>``, which is turned back into the URL.

Every refusal is a :class:`Refusal` (an :class:`core.errors.InvalidInput`) whose sentence
says what was not understood and shows an example that works.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from bot.slack import ladder_words, targets, template_words
from bot.slack.ladder_words import Ladder
from bot.slack.targets import ME as ME
from bot.slack.targets import Chain
from bot.slack.words import Refusal as Refusal
from bot.slack.words import escape as escape
from bot.slack.words import plain as plain
from bot.slack.words import unescape as unescape
from core import timeexpr, verbs
from core.models import STATE_FILTERS

EXAMPLE = "/schedule #general every weekday at 9am: Standup in 5 minutes!"
QUOTED_EXAMPLE = '/schedule #general "Lunch!" tomorrow at noon'
FEED_EXAMPLE = (
    "/schedule feed add https://example.org/team.ics before 10m #general: "
    "{event.summary} starts at {event.start:%H:%M}"
)
SKIP_EXAMPLE = (
    "/schedule every weekday at 9am except holidays from https://example.org/holidays.ics: Standup!"
)
REMIND_EXAMPLE = "/schedule remind #general to Standup every weekday at 9am"
ME_EXAMPLE = "/schedule me in 10 minutes: stretch"
SEVERAL_EXAMPLE = "/schedule #ops #dev @alice every weekday at 9am: Stand-up"
THEIR_EXAMPLE = "/schedule @alice @bob every weekday at 9am their time: Stand-up"
#: The verbs on one schedule that /schedule offers (core/verbs.py): show, edit, pause, …
_ACTS = tuple(
    v for v in verbs.offered(verbs.SLACK) if v.takes in ("schedule_id", "schedule_id+version")
)
VERBS = tuple(v.name for v in _ACTS)
#: Other words for a verb, as /remind and other bots say it.
ALIASES = verbs.aliases(_ACTS)
KEYWORDS = frozenset(
    {*VERBS, *ALIASES, "list", "timezone", "help", "feed", "feeds", "templates", "approvals"}
)
#: ``/schedule prefs``: the preferences modal (issue 37).
PREFS = frozenset({"prefs", "preferences"})
URGENT = "urgent"
URGENT_EXAMPLE = "/schedule urgent #ops in 5 minutes: the database is down"
#: ``/schedule private …``: a schedule left out of its channel's agenda (issue 41).
PRIVATE = "private"
PRIVATE_EXAMPLE = "/schedule private #general every friday at 4pm: Cake in the kitchen"
PUBLIC = "public"
#: ``/schedule list here``: the channel typed in.
HERE = "here"
AGENDA_EXAMPLE = "/schedule list #general"
COMMANDS = (
    "list, show, edit, pause, resume, skip, send-now, cancel (delete, remove), timezone, "
    "feed, prefs, remind, urgent, private, templates, approvals, help"
)

HELP = f"""*How to use /schedule*
• `/schedule [#channel] WHEN: MESSAGE`: schedule a message, e.g. `{EXAMPLE}`
  Without a channel it goes to the channel you type in. ": " (a colon and a space) ends the \
time (`in 5 minutes:hi` works too).
• `/schedule #general "MESSAGE" WHEN`: the same, in /remind's order; or without \
quotes, `/schedule remind #general to MESSAGE WHEN`. A channel may be typed as plain \
text (`#general`): Herald finds it by name.
• A template instead of a message: `{template_words.EXAMPLE}` (data as name=value, \
quoted when it has spaces: `title="Release notes"`). `/schedule templates` lists the \
workspace's templates and what they need.
• `/schedule me in 10 minutes: stretch` reminds you by direct message; \
`/schedule @someone tomorrow at 9: send the deck` reminds a member of this workspace \
(they see that you asked). A reminder has Snooze and Done buttons.
• Several places at once: `{SEVERAL_EXAMPLE}`. `@alice or alice@example.com` tries \
the email when the direct message fails. `at 9am their time` sends at 9am in each \
person's own zone (their Slack profile's).
• WHEN is anything the `herald` CLI reads: `in 10 minutes`, `in an hour and a half`, \
`tomorrow at 14:00`, `2026-04-01 08:00`, `every weekday at 9am` (or `at 9am on weekdays`), \
`every other friday at 17:00 until june 30`, `every month on the last day at 18:00`, \
`every hour between 9 and 17 on weekdays`, cron `0 9 * * 1-5` or an `RRULE:`. \
`tonight` is 20:00, `eod` 17:00 (tomorrow once past), `end of month` its last day; a rule \
without a time (`every monday`) is sent at the default time (09:00 unless Herald's admins \
chose another), and the reply says so.
• `/schedule` alone opens a form with a picker of one or more channels, a preview \
and date and time pickers.
• `/schedule list` (operators and admins: `list all`; one state: `list failed`), \
`show ID`, `edit ID`, `cancel ID` (or `delete ID`, `remove ID`), \
`pause ID`, `resume ID`, `skip ID` (skip the next occurrence only), \
`send-now ID` (send the next occurrence now; a rule's later ones stay).
• `/schedule list here` shows everything scheduled into this channel, by anyone in it \
(who, when, next send); `{AGENDA_EXAMPLE}` another channel you can see. Start with \
`private` (`{PRIVATE_EXAMPLE}`) to leave a schedule out of its channel's list; \
`private ID` and `public ID` change one already made.
• Herald says when the same message is already scheduled there at about the same \
time (then [Create anyway] or [Cancel]), or when so much is due into the channel at \
once that yours would be late.
• End WHEN with `except holidays from URL` to skip the dates of an iCalendar (.ics) \
file's events, e.g. `{SKIP_EXAMPLE}` (the form has a field for it too).
• End WHEN with `until done` to post the message with a Done button and keep at it \
until someone presses it: `{ladder_words.EXAMPLE}` (nags are replies in its thread; \
`then escalate to @boss after 2h` adds a second level).
• A message into an announcement channel, or one mentioning `@channel` or `@here` \
where the workspace holds those, waits for an approver (the reply says so); \
`/schedule approvals` lists the requests, with Approve and Reject for approvers.
• `/schedule prefs` opens your preferences: where reminders to you go (here, a DM, email, \
SMS, push), who may remind you, whom you block, and your quiet hours (reminders due then \
wait until they end). Admins: `/schedule prefs tenant` sets the workspace's defaults. \
`/schedule prefs notices off` stops the direct message Herald sends you when a message you \
scheduled fails (`on` again).
• Admins and operators: start with `urgent` (`{URGENT_EXAMPLE}`) to send before anything \
else waiting and through people's quiet hours.
• `/schedule timezone` shows the zone Herald reads your times in (your Slack profile's \
unless you set one); `/schedule timezone Berlin` (a city, or `Europe/Berlin`) sets it.
• Admins: `/schedule feed add URL [before 10m] [#channel][: TEMPLATE]` posts a reminder \
before each event of a calendar, into this channel unless you name one, e.g. \
`{FEED_EXAMPLE}`; `/schedule feed list`, `/schedule feed remove ID`.
Replies are only visible to you. You can schedule into channels you are a member of and \
where Herald was invited (`/invite @Herald`)."""


@dataclass(frozen=True)
class Create:
    """Schedule ``text`` at ``when``; ``channel`` is a channel id, or None for the
    channel the command was typed in. ``text`` stays in Slack's escaped form."""

    when: str
    text: str
    channel: str | None = None
    #: A channel typed as plain text (``#general``: "general"), found by name by the
    #: Slack layer; ``channel`` is None then.
    channel_name: str | None = None
    #: /remind's order (``remind #general to MESSAGE WHEN``): other readings
    #: ``(when, text)``, each with WHEN starting at a later word; the first whose WHEN
    #: reads as a time wins (``when``/``text`` first). Empty for the other forms.
    alternatives: tuple[tuple[str, str], ...] = ()
    #: A reminder by direct message instead: :data:`ME` or a Slack user id.
    person: str | None = None
    #: Several recipients, or one that is a chain (:func:`bot.slack.targets.scan`), in
    #: place of ``channel``/``channel_name``/``person`` (then None); empty for one.
    targets: tuple[Chain, ...] = ()
    #: "at 9am their time": each person's occurrence read in their own zone.
    their_time: bool = False
    #: ``/schedule urgent …``: sent before anything else waiting, through quiet hours
    #: (admins and operators; the Slack layer refuses anyone else).
    urgent: bool = False
    #: ``template:NAME``: the tenant's template sent in place of ``text`` (then ""),
    #: filled in with ``data`` (``name=value`` words, Slack's escaped form).
    template: str | None = None
    data: tuple[tuple[str, str], ...] = ()
    #: ``… until done, nag every 15m, escalate to @lead after 1h``: sent with a Done
    #: button, nagging and escalating until someone presses it (None: sent plainly).
    until_done: Ladder | None = None
    #: ``/schedule private …``: left out of its channel's agenda (``list here``).
    private: bool = False


@dataclass(frozen=True)
class Act:
    """One of :data:`VERBS` on schedule ``schedule_id``."""

    verb: str
    schedule_id: int


@dataclass(frozen=True)
class Agenda:
    """``/schedule list here`` (``channel`` and ``channel_name`` None: the channel
    typed in), ``list <#C0123|general>`` or ``list #general`` (``channel_name``, found
    by name): every schedule into that channel its members may see."""

    channel: str | None = None
    channel_name: str | None = None


@dataclass(frozen=True)
class Privacy:
    """``/schedule private 12`` (``private`` True) or ``/schedule public 12``: an
    existing schedule left out of its channel's agenda, or in it again."""

    schedule_id: int
    private: bool


@dataclass(frozen=True)
class Listing:
    everyone: bool = False
    #: Only schedules in this state (core.models.STATE_FILTERS), else the live ones.
    state: str | None = None


@dataclass(frozen=True)
class Timezone:
    """Show the zone (``zone`` None) or set it."""

    zone: str | None = None


@dataclass(frozen=True)
class Help:
    pass


@dataclass(frozen=True)
class OpenModal:
    pass


@dataclass(frozen=True)
class Prefs:
    """Open the preferences modal: the member's, or (``tenant``) the tenant's defaults."""

    tenant: bool = False
    #: ``/schedule prefs notices off|on``: set whether failures are told by DM, no modal.
    notices: bool | None = None


@dataclass(frozen=True)
class FeedAdd:
    """Subscribe ``channel`` (None: the channel typed in) to the calendar at ``url``:
    a reminder ``before`` each event, worded by ``template`` (None: core's default;
    in Slack's escaped form, like a message)."""

    url: str
    before: str = "10m"
    channel: str | None = None
    template: str | None = None


@dataclass(frozen=True)
class FeedList:
    pass


@dataclass(frozen=True)
class TemplateList:
    """``/schedule templates``: the tenant's templates."""


@dataclass(frozen=True)
class FeedRemove:
    feed_id: int


@dataclass(frozen=True)
class Approvals:
    """``/schedule approvals``: the held messages waiting for an approver."""


Command = (
    Create
    | Act
    | Listing
    | Agenda
    | Privacy
    | Timezone
    | Help
    | OpenModal
    | FeedAdd
    | FeedList
    | FeedRemove
    | Prefs
    | TemplateList
    | Approvals
)

_CHANNEL = re.compile(r"<#([CG][A-Z0-9]+)(?:\|[^>]*)?>")
_PERSON = re.compile(r"<[@!][^>]*>")
#: A user mention as Slack escapes it in command text: ``<@U0123|name>`` or ``<@U0123>``.
_USER = re.compile(r"<@([UW][A-Z0-9]+)(?:\|[^>]*)?>")
_ME = re.compile(r"me\b", re.I)
_RAW_PERSON = re.compile(r"@[\w.-]+")
_RAW_CHANNEL = re.compile(r"#[\w.-]+")
#: A channel typed as plain text: "#" and what follows up to a space.
_TYPED_CHANNEL = re.compile(r"#\S+")
_ID = re.compile(r"#?(\d{1,18})")
_SEPARATOR = re.compile(r":(?:\s|$)")
# a colon glued to the word before and the message after ("in 5 minutes:hi"); not in
# "9:30", "https://", "host:8080", nor in a rule (RRULE:, DTSTART;TZID=...:)
_TIGHT = re.compile(r"(?<=[a-z.>)])(?<!rrule)(?<!https)(?<!http)(?<!webcal):(?=[^\s\d/])", re.I)
_RFC_5545 = re.compile(r"^\s*(?:rrule|dtstart|exdate|rdate)\b", re.I)
#: The most words a zone takes: "port of spain", "ho chi minh".
_ZONE_WORDS = 4
_QUOTES = '"“”'


def parse(text: str) -> Command:
    """Read one command text. Raises Refusal saying what is wrong, with an example."""
    raw = (text or "").strip()
    if not raw:
        return OpenModal()
    head, _, tail = raw.partition(" ")
    keyword = head.lower()
    if keyword in ("feed", "feeds"):
        return _feed(tail.strip())
    if keyword in PREFS:
        return _prefs(tail.split())
    if keyword == URGENT:
        return _urgent(tail.strip())
    if keyword in (PRIVATE, PUBLIC) and (number := _ID.fullmatch(tail.strip())):
        return Privacy(int(number.group(1)), keyword == PRIVATE)
    if keyword == PRIVATE:
        return _private(tail.strip())
    keyword = ALIASES.get(keyword, keyword)
    if keyword in KEYWORDS:
        return _keyword(keyword, tail.split())
    if keyword == "remind":
        return _their_time(_ladder(_remind(tail.strip())))
    _refuse_unknown(head, tail)
    return _their_time(_ladder(_create(raw)))


def _prefs(args: list[str]) -> Prefs:
    words = [a.lower() for a in args]
    if not words:
        return Prefs()
    if words in (["tenant"], ["workspace"], ["defaults"]):
        return Prefs(tenant=True)
    if len(words) == 2 and words[0] == "notices" and words[1] in ("on", "off"):
        return Prefs(notices=words[1] == "on")
    raise Refusal(
        "`/schedule prefs` takes nothing (your preferences), `tenant` (the workspace's "
        f"defaults, for admins) or `notices off|on`, not `{escape(' '.join(args))}`."
    )


def _urgent(rest: str) -> Create:
    """``urgent`` before a schedule: the schedule, marked urgent. Only a schedule may
    be urgent (``urgent list`` is refused)."""
    if not rest:
        raise Refusal(f"Say what is urgent after `urgent`, e.g. `{URGENT_EXAMPLE}`.")
    head = rest.partition(" ")[0].lower()
    found = parse(rest) if head != URGENT else None
    if not isinstance(found, Create):
        raise Refusal(f"`urgent` goes before a message to schedule, e.g. `{URGENT_EXAMPLE}`.")
    return replace(found, urgent=True)


def _private(rest: str) -> Create:
    """``private`` before a schedule: the schedule, left out of its channel's agenda.
    Only a schedule may be private (``private list`` is refused)."""
    if not rest:
        raise Refusal(f"Say what to schedule after `private`, e.g. `{PRIVATE_EXAMPLE}`.")
    head = rest.partition(" ")[0].lower()
    found = parse(rest) if head != PRIVATE else None
    if not isinstance(found, Create):
        raise Refusal(f"`private` goes before a message to schedule, e.g. `{PRIVATE_EXAMPLE}`.")
    return replace(found, private=True)


def _ladder(create: Create) -> Create:
    """``create`` with its ``until done …`` clause taken out of WHEN (``until_done``
    set); /remind's other readings kept only where WHEN holds the same clause."""
    when, ladder = ladder_words.split(create.when)
    if ladder is None:
        return create
    others = tuple(
        (other, text)
        for w, text in create.alternatives
        for other, same in [ladder_words.split(w)]
        if same == ladder
    )
    return replace(create, when=when, alternatives=others, until_done=ladder)


def _their_time(create: Create) -> Create:
    """``create`` with "their time" taken out of WHEN (``their_time`` set)."""
    when, said = targets.their_time(create.when)
    if not said:
        return create
    if not when:
        raise Refusal(f"Say the time before “their time”, e.g. `{THEIR_EXAMPLE}`.")
    others = tuple((targets.their_time(w)[0], t) for w, t in create.alternatives)
    return replace(create, when=when, alternatives=others, their_time=True)


def _keyword(keyword: str, args: list[str]) -> Command:
    if keyword == "help":
        return Help()
    if keyword == "approvals":
        if args:
            raise Refusal(f"`/schedule approvals` takes nothing, not `{escape(' '.join(args))}`.")
        return Approvals()
    if keyword == "templates":
        if args:
            raise Refusal(
                f"`/schedule templates` takes nothing, not `{escape(' '.join(args))}`: "
                f"schedule one with `{template_words.EXAMPLE}`."
            )
        return TemplateList()
    if keyword == "list":
        if args and (agenda := _agenda(args)) is not None:
            return agenda
        words = [a.lower() for a in args]
        everyone = bool(words) and words[0] in ("all", "everyone")
        rest = words[1:] if everyone else words
        if not rest:
            return Listing(everyone=everyone)
        if len(rest) == 1 and rest[0] in STATE_FILTERS:
            return Listing(everyone=everyone, state=rest[0])
        raise Refusal(
            f"`/schedule list` takes nothing, `all`, a state ({', '.join(STATE_FILTERS)}), "
            f"`here` or a channel (`{AGENDA_EXAMPLE}`), not `{escape(' '.join(args))}`."
        )
    if keyword == "timezone":
        if not args:
            return Timezone()
        if len(args) > _ZONE_WORDS:
            raise Refusal(
                "A time zone is a city or an IANA name, e.g. `/schedule timezone Berlin`, "
                "`/schedule timezone new york` or `/schedule timezone America/New_York`."
            )
        return Timezone(unescape(" ".join(args)))
    if len(args) != 1 or not (match := _ID.fullmatch(args[0])):
        got = f", not `{escape(' '.join(args))}`" if args else ""
        raise Refusal(
            f"Say which schedule by its number{got}: e.g. `/schedule {keyword} 12` "
            "(`/schedule list` shows the numbers)."
        )
    return Act(keyword, int(match.group(1)))


def _agenda(args: list[str]) -> Agenda | None:
    """``list here``, ``list <#C0123|general>``, ``list #general`` (``in`` may come
    first: ``list in #general``); None for another list."""
    words = args[1:] if len(args) > 1 and args[0].lower() == "in" else args
    first = words[0]
    if first.lower() == HERE or (match := _CHANNEL.fullmatch(first)) or first.startswith("#"):
        if len(words) > 1:
            raise Refusal(
                f"`/schedule list {escape(first)}` takes nothing more, not "
                f"`{escape(' '.join(words[1:]))}`: e.g. `{AGENDA_EXAMPLE}`."
            )
        if first.lower() == HERE:
            return Agenda()
        if match:
            return Agenda(channel=match.group(1))
        return Agenda(channel_name=targets.channel_name(first))
    return None


def _create(raw: str) -> Create:
    chains, after = targets.scan(raw, EXAMPLE)
    if len(chains) > 1 or any(len(c) > 1 or c[0].startswith("email:") for c in chains):
        if not after:
            raise Refusal(f"Say when and what to send after them, e.g. `{SEVERAL_EXAMPLE}`.")
        found = _create_in(after, None)
        return replace(found, channel=None, channel_name=None, targets=chains)
    person, rest = _person(raw)
    if person is not None:
        if not rest:
            raise Refusal(f"Say when and what to remind, e.g. `{ME_EXAMPLE}`.")
        found = _create(rest)
        if found.channel is not None:
            raise Refusal(
                "A reminder goes by direct message: name a person or a channel, not both."
            )
        return replace(found, channel_name=None, alternatives=(), person=person)
    channel: str | None = None
    name: str | None = None
    if match := _CHANNEL.match(rest):
        channel = match.group(1)
        rest = rest[match.end() :].strip()
    elif _PERSON.match(rest):
        raise Refusal(
            "Herald posts into channels, or reminds a person (`/schedule @someone …`), not "
            f"a group: name a channel or one person, e.g. `{EXAMPLE}`."
        )
    elif match := _TYPED_CHANNEL.match(rest):
        name = targets.channel_name(match.group(0))
        rest = rest[match.end() :].strip()
    if name is not None:
        return _named(_create_in(rest, channel), name)
    return _create_in(rest, channel)


def _create_in(rest: str, channel: str | None) -> Create:
    """The schedule after the channel (if any): ``WHEN: MESSAGE`` or ``"MESSAGE" WHEN``."""
    if not rest:
        raise Refusal(f"Say when and what to send after the channel, e.g. `{EXAMPLE}`.")
    if (templated := template_words.find(rest)) is not None:
        when = plain(templated.before).strip()
        if not when:
            raise Refusal(
                f"Say when before `template:{escape(templated.name)}`, "
                f"e.g. `{template_words.EXAMPLE}`."
            )
        return Create(when, "", channel, template=templated.name, data=templated.data)
    if rest[0] in _QUOTES:
        return _quoted(rest, channel)
    found = _split(rest)
    if found is None:
        raise Refusal(
            'Could not tell the time from the message: put ": " (a colon and a space) '
            f"between them, e.g. `{EXAMPLE}`, or quote the message: `{QUOTED_EXAMPLE}`."
        )
    when = plain(rest[: found[0]]).strip()
    message = rest[found[1] :].strip()
    if not when:
        raise Refusal(f"Say when before the colon, e.g. `{EXAMPLE}`.")
    if not message:
        raise Refusal(f"The message after the colon is empty: say what to send, e.g. `{EXAMPLE}`.")
    template_words.check_when(when)
    return Create(when, message, channel)


#: A first word that may be a command: letters only.
_WORD = re.compile(r"[a-z]+")
#: Where WHEN may start in /remind's order ("… at 5pm", "… every monday", "… in 5
#: minutes", "… tomorrow", "… 2026-04-01 08:00", "… 0 9 * * 1-5"): a time word, a
#: weekday or a month, or a number.
_TIME_WORDS = (
    "at", "in", "on", "every", "each", "tomorrow", "today", "tonight", "next", "this",
    "daily", "hourly", "weekly", "monthly", "yearly", "annually", "fortnightly", "noon",
    "midday", "midnight", "eod", "end", "weekdays", "weekends", "rrule", "after",
    "twice", "once", "quarterly", "nightly", "yesterday",
    *timeexpr.WEEKDAYS, *timeexpr.MONTHS,
)  # fmt: skip
_TIME_START_RE = re.compile(
    r"(?:\d|(?:" + "|".join(sorted(_TIME_WORDS, key=len, reverse=True)) + r")(?![\w-]))",
    re.I,
)
_FIRST_TO = re.compile(r"to\b", re.I)
_WHEN_TO = re.compile(r"\s+to\s+", re.I)


def _named(create: Create, name: str) -> Create:
    return replace(create, channel=None, channel_name=name)


def _refuse_unknown(head: str, tail: str) -> None:
    """Refuse a first word that looks like a command and is none: a lone word, or a
    word and a schedule number (``frobnicate 3``). Such a text has no ": " and no
    quote, so it never schedules anything; a time word (or a near miss of one,
    "tomorow") is left to the time-format answer, which suggests a spelling."""
    word = head.lower()
    rest = tail.strip()
    if word == ME or not _WORD.fullmatch(word) or (rest and not _ID.fullmatch(rest)):
        return  # "me" starts a reminder to yourself
    from core.fuzzy import closest

    commands = sorted({*KEYWORDS, *PREFS, "remind", URGENT, PRIVATE} - {"feeds", "preferences"})
    near = closest(word, commands)
    known = timeexpr.vocabulary()
    if near is None and (word in known or closest(word, known) is not None):
        return
    hint = f" Did you mean `{near}`?" if near is not None else ""
    raise Refusal(
        f"Unknown command `{escape(word)}`.{hint} Commands: {COMMANDS}; or schedule "
        f"with `{EXAMPLE}`. `/schedule help` says more."
    )


def _remind(tail: str) -> Create:
    """/remind's order: ``[#channel] [to] MESSAGE WHEN``. With ": " or a quoted
    message it is read as the other forms; else WHEN may start at any word of
    :data:`_TIME_START` after the message's first word, or at a number, and every
    such reading is offered, earliest first (the Slack layer keeps the first that
    reads as a time). /remind's other order, ``WHEN to MESSAGE`` ("in 20 minutes to
    drink water"), is offered first when the text starts as a time does."""
    channel: str | None = None
    name: str | None = None
    rest = tail
    if match := _CHANNEL.match(rest):
        channel, rest = match.group(1), rest[match.end() :].strip()
    elif match := _TYPED_CHANNEL.match(rest):
        name, rest = targets.channel_name(match.group(0)), rest[match.end() :].strip()
    else:
        person, after = _person(rest)
        if person is not None:  # "remind me to stretch in 10 minutes": a direct message
            found = _remind(after)
            if found.channel is not None or found.channel_name is not None:
                raise Refusal(
                    "A reminder goes by direct message: name a person or a channel, not both."
                )
            return Create(found.when, found.text, alternatives=found.alternatives, person=person)
        if _PERSON.match(rest):
            raise Refusal(
                "Herald reminds a channel or one person, not a group: name a channel, "
                f"`me` or `@someone`, e.g. `{REMIND_EXAMPLE}`."
            )
    if template_words.mentions(rest):
        raise Refusal(f"A template goes after the time, e.g. `{template_words.EXAMPLE}`.")
    if (first := _FIRST_TO.match(rest)) is not None:
        rest = rest[first.end() :]
    rest = rest.strip()
    if not rest:
        raise Refusal(f"Say what to send and when, e.g. `{REMIND_EXAMPLE}`.")
    if rest[0] in _QUOTES or _split(rest) is not None:
        found = _create_in(rest, channel)
        return found if name is None else _named(found, name)
    starts = [m.start() for m in re.finditer(r"\S+", rest)]
    # /remind's other order, WHEN first: "in 20 minutes to drink water", earliest "to" first
    first_when = [
        (plain(rest[: m.start()]).strip(), rest[m.end() :].strip())
        for m in _WHEN_TO.finditer(rest)
        if _TIME_START_RE.match(rest) and rest[m.end() :].strip()
    ]
    readings = first_when + [
        (plain(rest[at:]).strip(), rest[:at].strip())
        for at in starts[1:]
        if _TIME_START_RE.match(rest, at)
    ]
    if not readings:
        raise Refusal(
            f"Could not find when to send it: end with a time, e.g. `{REMIND_EXAMPLE}`, "
            f"or write `{EXAMPLE}`."
        )
    (when, text), *others = readings
    return Create(when, text, channel, name, tuple(others))


def _person(raw: str) -> tuple[str | None, str]:
    """Who a reminder is for (:data:`ME`, a user id, or None: not a reminder) and the
    rest of the text. Refusal for ``@name`` Slack did not turn into a mention."""
    if match := _ME.match(raw):
        return ME, raw[match.end() :].strip()
    if match := _USER.match(raw):
        return match.group(1), raw[match.end() :].strip()
    if match := _RAW_PERSON.match(raw):
        raise targets.not_a_mention(match.group(0))
    return None, raw


def _split(rest: str) -> tuple[int, int] | None:
    """Where WHEN ends and the message starts: at the first ": ", or at a colon glued
    to a word and the message ("in 5 minutes:hi") when it comes before any ": " and
    is the only one (a second could be either; "9:30" and URLs are not such colons)."""
    spaced = _SEPARATOR.search(rest)
    head = rest if spaced is None else rest[: spaced.start()]
    tight = [] if _RFC_5545.match(head) else list(_TIGHT.finditer(head))
    if len(tight) == 1:
        return tight[0].start(), tight[0].end()
    if spaced is None or tight:
        return None
    return spaced.start(), spaced.end()


def _quoted(rest: str, channel: str | None) -> Create:
    closing = max(rest.rfind(q) for q in _QUOTES)
    if closing <= 0:
        raise Refusal(f"The message has no closing quote: e.g. `{QUOTED_EXAMPLE}`.")
    message = rest[1:closing].strip()
    when = plain(rest[closing + 1 :]).strip()
    if not message:
        raise Refusal("The quoted message is empty: say what to send between the quotes.")
    if not when:
        raise Refusal(f"Say when after the quoted message, e.g. `{QUOTED_EXAMPLE}`.")
    return Create(when, message, channel)


def _feed(tail: str) -> Command:
    sub, _, rest = tail.partition(" ")
    sub = sub.lower()
    if sub in ("", "list"):
        if rest.strip():
            raise Refusal(f"`/schedule feed list` takes nothing, not `{escape(rest.strip())}`.")
        return FeedList()
    if sub in ("remove", "delete"):
        match = _ID.fullmatch(rest.strip())
        if match is None:
            raise Refusal(
                "Say which feed by its number: e.g. `/schedule feed remove 3` "
                "(`/schedule feed list` shows the numbers)."
            )
        return FeedRemove(int(match.group(1)))
    if sub != "add":
        raise Refusal(
            f"`/schedule feed` takes `add`, `list` or `remove`, e.g. `{escape(FEED_EXAMPLE)}`."
        )
    return _feed_add(rest.strip())


def _feed_add(rest: str) -> FeedAdd:
    found = _SEPARATOR.search(rest)
    head = rest if found is None else rest[: found.start()]
    template = None if found is None else rest[found.end() :].strip()
    if template == "":
        raise Refusal(f"The template after the colon is empty, e.g. `{escape(FEED_EXAMPLE)}`.")
    url = channel = before = None
    words = head.split()
    while words:
        word = words.pop(0)
        lower = word.lower()
        if lower in ("to", "in") and words and _CHANNEL.fullmatch(words[0]):
            continue
        if match := _CHANNEL.fullmatch(word):
            if channel is not None:
                raise Refusal("A feed posts into one channel: name only one.")
            channel = match.group(1)
        elif lower == "before" and words:
            before = words.pop(0)  # "10m", or "10 minutes": the unit is the next word
            if words and words[0].lower() in timeexpr.DURATION_UNITS:
                before = f"{before} {words.pop(0)}"
        elif (link := plain(word)).startswith(("http://", "https://", "webcal://")):
            if url is not None:
                raise Refusal("A feed reads one calendar: add one feed per calendar.")
            url = link
        elif _RAW_CHANNEL.fullmatch(word):
            raise Refusal(
                f"Slack did not turn `{escape(word)}` into a channel link: pick the channel "
                "from Slack's suggestions as you type."
            )
        else:
            raise Refusal(
                f"Could not read `{escape(word)}` in the feed: write "
                f"`/schedule feed add URL [before 10m] [#channel][: TEMPLATE]`, e.g. "
                f"`{escape(FEED_EXAMPLE)}`."
            )
    if url is None:
        raise Refusal(
            f"Say which calendar, as the https:// URL of an iCalendar (.ics) file, e.g. "
            f"`{escape(FEED_EXAMPLE)}`."
        )
    return FeedAdd(url, before or "10m", channel, template)
