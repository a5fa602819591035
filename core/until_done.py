"""Messages sent "until done" (issue 40): each occurrence posts with a **Done** button,
then nags in its thread at an interval and escalates to other people after a while,
until someone marks it done.

A schedule's ladder is a rule (:class:`UntilDone`, kept in its options under
:data:`OPTION`): the nag interval and up to :data:`MAX_LEVELS` escalation levels, each a
few destinations and a delay. When an occurrence's message is delivered, the dispatcher
writes its ladder's steps as jobs in the same transaction (:func:`steps`): each nag, each
escalation message, each with its own idempotency key, due at its time. A step is a job
like any other (claimed, leased, retried, recorded), so a crash mid-ladder loses no step
and sends none twice. **Done** (:meth:`core.cases.Herald.mark_done`) marks the
occurrence ``acknowledged``, cancels the steps still waiting (a step already being sent
goes out: at most that one) and adds one last step, the edit of the original message
to "Done by @carol at 09:20".

Pure: no store, no channel, no clock (times are given).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from core import timeexpr
from core.errors import InvalidInput
from core.tenancy import neutralize_mentions

#: The schedule option holding its ladder (:meth:`UntilDone.to_json`).
OPTION = "until_done"
#: Nags of one occurrence at most, and the longest a ladder runs after its message.
MAX_NAGS = 24
LADDER_SPAN = timedelta(hours=24)
#: The shortest nag interval: members, and operators and admins.
NAG_FLOOR = timedelta(minutes=5)
NAG_FLOOR_STAFF = timedelta(minutes=1)
#: Escalation levels at most, destinations per level at most.
MAX_LEVELS = 2
MAX_ESCALATE_TO = 5
#: What a channel reads in a delivery's options for a schedule sent until done
#: (core/channels/slack.py, discord.py; core/dispatcher/message.py sets them): the
#: occurrence's message carries a Done button (its job id), a nag replies to it (its
#: provider id), the ``done`` step edits it.
DONE_BUTTON = "done_button"
REPLY_TO = "reply_to"
EDIT_OF = "edit_of"
#: What ``ladder`` says of a step (:func:`step_kind`).
NAG = "nag"
ESCALATE = "escalate"
DONE = "done"
#: How much of the message a nag or an escalation quotes.
EXCERPT = 200


@dataclass(frozen=True)
class Level:
    """One escalation level: whom, and how long after the message."""

    to: tuple[str, ...]
    after: timedelta


@dataclass(frozen=True)
class UntilDone:
    """A schedule's ladder: nag every ``nag`` (None: no nags) and escalate by ``levels``."""

    nag: timedelta | None
    levels: tuple[Level, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "nag": None if self.nag is None else int(self.nag.total_seconds()),
            "levels": [
                {"to": list(level.to), "after": int(level.after.total_seconds())}
                for level in self.levels
            ],
        }

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> UntilDone:
        nag = value.get("nag")
        return cls(
            None if nag is None else timedelta(seconds=int(nag)),
            tuple(
                Level(
                    tuple(str(d) for d in level.get("to") or ()),
                    timedelta(seconds=int(level["after"])),
                )
                for level in value.get("levels") or ()
            ),
        )

    @property
    def escalates_to(self) -> list[str]:
        """Every escalation destination, level by level."""
        return [d for level in self.levels for d in level.to]


def of_options(options: Mapping[str, Any] | None) -> UntilDone | None:
    """A schedule's ladder from its options, None when it is not sent until done."""
    value = (options or {}).get(OPTION)
    return UntilDone.from_json(value) if isinstance(value, Mapping) else None


def _duration(text: str | int | float | timedelta, what: str) -> timedelta:
    if isinstance(text, timedelta):
        return text
    if isinstance(text, int | float):
        return timedelta(seconds=float(text))
    try:
        return timeexpr.parse_duration(str(text).strip())
    except (InvalidInput, ValueError) as exc:
        raise InvalidInput(
            f"{what} {text!r} is not a duration: write it like 15m, 1h or 90m."
        ) from exc


def parse(
    nag: str | int | float | timedelta | None,
    levels: Sequence[tuple[Sequence[str], str | int | float | timedelta]] = (),
    *,
    staff: bool = False,
) -> UntilDone:
    """A ladder from what a person gave: the nag interval (None: no nags) and each
    escalation level's destinations and delay. Raises InvalidInput, in one sentence,
    for a nag below the floor (:data:`NAG_FLOOR`; :data:`NAG_FLOOR_STAFF` for
    operators and admins), a level without destinations or with too many, delays not
    increasing, or more than :data:`MAX_LEVELS` levels."""
    interval = None if nag is None or nag == "" else _duration(nag, "The nag interval")
    floor = NAG_FLOOR_STAFF if staff else NAG_FLOOR
    if interval is not None and interval < floor:
        raise InvalidInput(
            f"Nags come at most every {timeexpr.describe_duration(floor)}: "
            f"{timeexpr.describe_duration(interval)} is too often."
        )
    if len(levels) > MAX_LEVELS:
        raise InvalidInput(f"A message escalates at most {MAX_LEVELS} times.")
    made: list[Level] = []
    for to, after in levels:
        delay = _duration(after, "The escalation delay")
        targets = tuple(dict.fromkeys(str(d).strip() for d in to if str(d).strip()))
        if not targets:
            raise InvalidInput("Say whom to escalate to: a person or a channel.")
        if len(targets) > MAX_ESCALATE_TO:
            raise InvalidInput(f"An escalation goes to at most {MAX_ESCALATE_TO} places.")
        if delay <= timedelta(0) or delay > LADDER_SPAN:
            raise InvalidInput("An escalation comes after a delay between a minute and 24 hours.")
        if made and delay <= made[-1].after:
            raise InvalidInput("Each escalation level comes later than the one before.")
        made.append(Level(targets, delay))
    return UntilDone(interval, tuple(made))


@dataclass(frozen=True)
class Step:
    """One step of an occurrence's ladder, as the dispatcher writes it as a job."""

    ladder: str
    due: datetime
    #: Where it goes (None: the occurrence's own destination, in its thread).
    destination: str | None
    #: The message it answers (the occurrence's, by its provider id), or None.
    thread: str | None


def steps(rule: UntilDone, posted_at: datetime, thread: str | None) -> list[Step]:
    """The ladder of a message posted at ``posted_at`` (``thread``: its provider id):
    a nag every interval (at most :data:`MAX_NAGS`, within :data:`LADDER_SPAN`), and
    each escalation level's messages, one per destination."""
    made: list[Step] = []
    if rule.nag is not None:
        for k in range(1, MAX_NAGS + 1):
            due = posted_at + rule.nag * k
            if due - posted_at > LADDER_SPAN:
                break
            made.append(Step(f"{NAG} {k}", due, None, thread))
    for n, level in enumerate(rule.levels, start=1):
        for i, to in enumerate(level.to):
            made.append(Step(f"{ESCALATE} {n}.{i}", posted_at + level.after, to, thread))
    return made


def opens(ladder: str, options: Mapping[str, Any]) -> bool:
    """Whether a job is an occurrence's message sent until done (its delivery writes
    its ladder's steps)."""
    return not ladder and OPTION in options


#: The channels whose messages Herald edits once done (core/channels/slack.py,
#: discord.py); elsewhere Done stops the ladder and edits nothing.
EDITABLE = ("slack", "discord", "discord-webhook")


def edits(destination: str | None) -> bool:
    """Whether Done edits a message sent to ``destination``."""
    return destination is not None and destination.partition(":")[0] in EDITABLE


def step_label(ladder: str) -> str:
    """A job's place in its ladder as lists and timelines say it: "nag 3",
    "escalation" (level 1), "escalation 2", "done edit"; "" for an occurrence's
    message."""
    kind = step_kind(ladder)
    if kind == ESCALATE:
        level = level_of(ladder)
        return "escalation" if level == 1 else f"escalation {level}"
    if kind == DONE:
        return "done edit"
    return ladder


def step_kind(ladder: str) -> str:
    """``nag``, ``escalate`` or ``done`` for a step; "" for an occurrence's message."""
    return ladder.split(" ", 1)[0]


def level_of(ladder: str) -> int:
    """An escalation step's level (1, 2), 0 for any other."""
    if step_kind(ladder) != ESCALATE:
        return 0
    return int(ladder.split(" ", 1)[1].split(".", 1)[0])


def excerpt(body: str) -> str:
    """The start of a message, on one line, as a nag or an escalation quotes it: its
    broadcast mentions shown, not sent again (24 nags must not notify a channel 24
    times)."""
    line = " ".join(body.split())
    line = line if len(line) <= EXCERPT else line[: EXCERPT - 1] + "…"
    return neutralize_mentions(line) or ""


def mention(member: str) -> str:
    """A member as their platform shows them (``<@U0123>``), else their id."""
    kind, _, user = member.partition(":")
    return f"<@{user}>" if kind in ("slack", "discord") and user else member


def where(destination: str) -> str:
    """Where a message went, as an escalation names it: a chat channel as its platform
    links it (``<#C0123>``), a person's direct messages by their mention, else the
    address (a URL by its host alone)."""
    kind, _, target = destination.partition(":")
    if kind in ("slack", "discord") and target:
        if target.startswith("@"):
            return f"<{target}>'s direct messages"
        return f"<#{target.split('/', 1)[0]}>"
    return _shown(destination)  # a URL by its host: its path may hold a token


def nag_text(body: str, ladder: str) -> str:
    """A nag (its step ``ladder``: ``nag 3``), a reply under the message."""
    k = int(ladder.split(" ", 1)[1])
    times = "" if k == 1 else f" (reminder {k})"
    return f"Still not done{times}: {excerpt(body)}\nPress Done on the message once it is."


def escalated_after(ladder: str, rule: UntilDone | None, fallback: timedelta) -> timedelta:
    """How long after its message an escalation step comes: its level's delay, or
    ``fallback`` when the rule was edited since and no longer has that level."""
    level = level_of(ladder)
    if rule is None or not 0 < level <= len(rule.levels):
        return fallback
    return rule.levels[level - 1].after


def escalation_text(body: str, after: timedelta, where: str, owner: str) -> str:
    """An escalation message: what is not done, where, since when, who scheduled it."""
    return (
        f"Not done after {timeexpr.describe_duration(after)}: {excerpt(body)}\n"
        f"Posted to {where} (scheduled by {mention(owner)}); anyone there can press Done."
    )


def done_text(body: str, by: str, at: datetime, zone: str) -> str:
    """The original message once done: its text, and who marked it done at what time
    (in the schedule's zone)."""
    try:
        local = at.astimezone(ZoneInfo(zone))
    except (KeyError, ValueError):
        local = at
    return f"{body}\n\n✅ Done by {mention(by)} at {local:%H:%M}"


def describe(rule: UntilDone) -> str:
    """The ladder in words: "until done, nag every 15 minutes, escalate to slack:@U1
    after 1 hour" (a URL destination by its host alone: its path may hold a token)."""
    said = ["until done"]
    if rule.nag is not None:
        said.append(f"nag every {timeexpr.describe_duration(rule.nag)}")
    for level in rule.levels:
        to = ", ".join(_shown(d) for d in level.to)
        said.append(f"escalate to {to} after {timeexpr.describe_duration(level.after)}")
    return ", ".join(said)


def _shown(destination: str) -> str:
    """A destination as a description shows it: a URL's kind, scheme and host, the
    rest (a webhook's token) left out."""
    kind, _, target = destination.partition(":")
    scheme, sep, rest = target.partition("://")
    if not sep:
        return destination
    return f"{kind}:{scheme}://{rest.split('/', 1)[0].rpartition('@')[2]}/…"
