"""What a member says about how Herald reaches them, and a message's priority. Pure.

A member's :class:`Preferences`: the place reminders to them go (a DM, email, SMS or
push destination; None: where the author sent them), who may remind them (anyone in
the tenant, only admins, nobody but themselves; plus a block list) and their
:class:`QuietHours` (a daily window such as 22:00–08:00 and whole quiet days such as
the weekend, in the member's own zone). A tenant's defaults are the same record kept
for the member id :data:`TENANT_DEFAULT`; a member's own fields override them
(:func:`effective`). ``hold_channels`` is a tenant's only: whether messages to channels
are held in the tenant's quiet hours too (by default only messages to a person are).

Priorities order the queue: :data:`URGENT` before :data:`NORMAL` before :data:`BULK`
(``job.priority`` holds the rank). Urgent messages are not held by quiet hours.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, time, timedelta
from typing import Any, Literal
from zoneinfo import ZoneInfo

from core.errors import InvalidInput

#: The member id a tenant's defaults are kept under.
TENANT_DEFAULT = "*"
#: Who may remind a member.
ACCEPT = ("anyone", "admins", "self")
Accept = Literal["anyone", "admins", "self"]
#: At most this many members on a block list.
MAX_BLOCKED = 200
#: The start of a held job's reason: the console and lists show such a job as held.
HELD = "Held until"
#: The start of the reason a job is skipped with when its recipient's preferences
#: refuse it at delivery time (core.dispatcher.verdicts.refused): the chat adapters
#: tell the author of such a skip (:func:`refused_reason`).
REFUSED = "Not sent:"

# --- priorities ------------------------------------------------------------------------

URGENT, NORMAL, BULK = "urgent", "normal", "bulk"
#: Each priority's rank in the queue (``job.priority``): lower is served first.
RANK: dict[str, int] = {URGENT: 0, NORMAL: 1, BULK: 2}
PRIORITIES = tuple(RANK)


def priority_rank(priority: str | None) -> int:
    """The rank of ``priority`` (None: normal); InvalidInput names the choices."""
    if priority is None or priority == "":
        return RANK[NORMAL]
    found = RANK.get(str(priority).strip().lower())
    if found is None:
        raise InvalidInput(f"Unknown priority {str(priority)[:40]!r}: use urgent, normal or bulk.")
    return found


def priority_name(rank: int) -> str:
    """``0`` → ``urgent`` (an unknown rank reads as normal)."""
    return PRIORITIES[rank] if 0 <= rank < len(PRIORITIES) else NORMAL


# --- quiet hours -----------------------------------------------------------------------

DAY_NAMES = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
_DAY_WORDS = {
    **{d: i for i, d in enumerate(DAY_NAMES)},
    **{
        w: i
        for i, w in enumerate(
            ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
        )
    },
}


def _clock(text: str, what: str) -> time:
    raw = text.strip().lower()
    try:
        hours, _, minutes = raw.partition(":")
        value = time(int(hours), int(minutes or 0))
    except ValueError:
        raise InvalidInput(
            f"{what} {text[:20]!r} is not a time of day: write it as 22:00."
        ) from None
    return value


@dataclass(frozen=True, slots=True)
class QuietHours:
    """A daily window (``start``–``end``, local; across midnight when ``end`` is not
    after ``start``) and whole quiet weekdays (0 = Monday), in the member's zone."""

    start: time | None = None
    end: time | None = None
    days: frozenset[int] = frozenset()

    @classmethod
    def parse(cls, window: str | None = None, days: Iterable[str] = ()) -> QuietHours:
        """``"22:00-08:00"`` and ``["sat", "sun"]`` (or ``"weekends"``); InvalidInput
        says what is wrong."""
        start = end = None
        if window and window.strip():
            left, sep, right = window.replace("–", "-").partition("-")
            if not sep:
                raise InvalidInput(
                    f"Quiet hours {window[:40]!r} are not a window: write them as 22:00-08:00."
                )
            start, end = _clock(left, "The start"), _clock(right, "The end")
            if start == end:
                raise InvalidInput("Quiet hours start and end at the same time: give a window.")
        chosen: set[int] = set()
        for day in days:
            word = day.strip().lower()
            if word in ("weekend", "weekends"):
                chosen.update((5, 6))
            elif word in _DAY_WORDS:
                chosen.add(_DAY_WORDS[word])
            elif word:
                raise InvalidInput(f"{day[:20]!r} is not a day: use mon … sun, or weekends.")
        return cls(start, end, frozenset(chosen))

    @property
    def empty(self) -> bool:
        return self.start is None and not self.days

    def quiet_at(self, local: datetime) -> bool:
        """Whether the local wall-clock moment is quiet."""
        if local.weekday() in self.days:
            return True
        if self.start is None or self.end is None:
            return False
        now = local.time().replace(tzinfo=None)
        if self.start < self.end:
            return self.start <= now < self.end
        return now >= self.start or now < self.end

    def opens(self, at: datetime, zone: str) -> datetime | None:
        """When a delivery due at ``at`` (aware) may go out: None when ``at`` is not
        quiet, else the first moment after it that is not (UTC). Walks the zone's
        wall clock, so a DST change inside the window is honoured (08:00 local is
        08:00 whatever the offset); at most eight days ahead."""
        tz = ZoneInfo(zone)
        local = at.astimezone(tz)
        if not self.quiet_at(local):
            return None
        candidates: list[datetime] = []
        for offset in range(0, 9):
            day = (local + timedelta(days=offset)).date()
            starts = [time(0, 0)]
            if self.end is not None:
                starts.append(self.end)
            for moment in starts:
                wall = datetime.combine(day, moment).replace(tzinfo=tz)
                # a wall time the DST change skipped is read forward by zoneinfo
                if wall > local and not self.quiet_at(wall.astimezone(tz)):
                    candidates.append(wall)
            if candidates:
                break
        if not candidates:  # every day quiet: never held for good
            return None
        return min(candidates).astimezone(UTC)

    def describe(self) -> str:
        """``22:00–08:00 and weekends`` / ``22:00–08:00, sat, sun`` / ``none``."""
        parts = []
        if self.start is not None and self.end is not None:
            parts.append(f"{self.start:%H:%M}–{self.end:%H:%M}")
        if self.days == frozenset((5, 6)):
            parts.append("weekends")
        elif self.days:
            parts.append(", ".join(DAY_NAMES[d] for d in sorted(self.days)))
        return " and ".join(parts) if parts else "none"

    def to_json(self) -> dict[str, Any]:
        return {
            "window": (
                f"{self.start:%H:%M}-{self.end:%H:%M}"
                if self.start is not None and self.end is not None
                else None
            ),
            "days": [DAY_NAMES[d] for d in sorted(self.days)],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> QuietHours | None:
        if not data:
            return None
        return cls.parse(data.get("window"), data.get("days") or ())


# --- preferences -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Preferences:
    """A member's (or a tenant's default) say. A field that is None inherits the
    tenant's default (:func:`effective`); the built-in defaults are: where the author
    sent it, anyone, no quiet hours, channels not held."""

    place: str | None = None
    accept_from: Accept | None = None
    blocked: tuple[str, ...] = ()
    quiet: QuietHours | None = None
    #: A tenant's only: hold channel messages in the tenant's quiet hours too.
    hold_channels: bool | None = None
    #: Whether they are told by direct message when a message they scheduled fails
    #: (None: the tenant's default, else yes).
    notices: bool | None = None
    #: The zone the quiet hours are read in (a member's is their own zone).
    zone: str | None = field(default=None, compare=False)

    def to_json(self) -> str:
        data: dict[str, Any] = {}
        if self.place is not None:
            data["place"] = self.place
        if self.accept_from is not None:
            data["accept_from"] = self.accept_from
        if self.blocked:
            data["blocked"] = list(self.blocked)
        if self.quiet is not None:
            data["quiet"] = self.quiet.to_json()
        if self.hold_channels is not None:
            data["hold_channels"] = self.hold_channels
        if self.notices is not None:
            data["notices"] = self.notices
        return json.dumps(data, sort_keys=True)

    @classmethod
    def from_json(cls, text: str | Mapping[str, Any] | None) -> Preferences:
        data = json.loads(text) if isinstance(text, str) else dict(text or {})
        accept = data.get("accept_from")
        return cls(
            place=data.get("place"),
            accept_from=accept if accept in ACCEPT else None,
            blocked=tuple(data.get("blocked") or ()),
            quiet=QuietHours.from_json(data.get("quiet")),
            hold_channels=data.get("hold_channels"),
            notices=data.get("notices") if isinstance(data.get("notices"), bool) else None,
        )

    def describe(self) -> str:
        """One line: ``reminders to slack:@U1 · from anyone · quiet 22:00–08:00``."""
        who = {"anyone": "from anyone", "admins": "from admins only", "self": "only their own"}
        parts = [
            f"reminders to {self.place}" if self.place else "reminders where sent",
            who[self.accept_from or "anyone"],
        ]
        if self.blocked:
            parts.append(f"{len(self.blocked)} blocked")
        parts.append(f"quiet {self.quiet.describe()}" if self.quiet else "no quiet hours")
        if self.notices is False:
            parts.append("failure notices off")
        return " · ".join(parts)


def effective(own: Preferences | None, tenant: Preferences | None) -> Preferences:
    """A member's preferences over their tenant's defaults (a block list is the union)."""
    own = own or Preferences()
    base = tenant or Preferences()
    return replace(
        own,
        place=own.place if own.place is not None else base.place,
        accept_from=own.accept_from or base.accept_from or "anyone",
        blocked=tuple(dict.fromkeys((*base.blocked, *own.blocked))),
        quiet=own.quiet if own.quiet is not None else base.quiet,
        hold_channels=bool(base.hold_channels),
        notices=own.notices if own.notices is not None else base.notices is not False,
    )


def refusal(
    prefs: Preferences, *, author: str, recipient: str, author_is_admin: bool, name: str
) -> str | None:
    """Why ``author`` may not remind ``recipient`` (``name``: how the sentence names
    them), or None: "Alice accepts reminders only from admins."."""
    if author == recipient:
        return None
    if author in prefs.blocked:
        return f"{name} does not accept reminders from you."
    accept = prefs.accept_from or "anyone"
    if accept == "self":
        return f"{name} accepts reminders only from themselves."
    if accept == "admins" and not author_is_admin:
        return f"{name} accepts reminders only from admins."
    return None


def refused_reason(state: str, error: str | None) -> str | None:
    """What a job skipped because its recipient's preferences refuse it says after
    :data:`REFUSED` ("Bob accepts reminders only from admins (…)."), or None for any
    other outcome (only such a skip is ``skipped`` with that prefix: a late job is
    ``expired``)."""
    if state != "skipped" or not error or not error.startswith(REFUSED):
        return None
    return error[len(REFUSED) :].strip() or None


#: How each sentence of :func:`refusal` goes on after the name it starts with.
_REFUSALS = (" does not accept reminders from ", " accepts reminders only from ")


def refused_whom(reason: str) -> str | None:
    """Who refused, as :func:`refusal` named them ("Bob"), read back from a
    :func:`refused_reason`; None when it is none of refusal's sentences."""
    found = [reason.find(tail) for tail in _REFUSALS]
    ends = [at for at in found if at > 0]
    return reason[: min(ends)] if ends else None


def held_reason(opens: datetime, zone: str, whose: str, now: datetime | None = None) -> str:
    """``Held until 08:00 Europe/Berlin (Bob's quiet hours).`` (``whose``: "Bob's"); a
    window that opens on another day than ``now``'s (in that zone) names the day:
    ``Held until Mon 30 Mar 08:00 Europe/Berlin (…)``."""
    tz = ZoneInfo(zone)
    local = opens.astimezone(tz)
    same_day = now is not None and now.astimezone(tz).date() == local.date()
    when = f"{local:%H:%M}" if same_day else f"{local:%a %d %b %H:%M}"
    return f"{HELD} {when} {zone} ({whose} quiet hours)."
