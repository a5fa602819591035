"""Bulk import of schedules from JSON Lines (``herald import FILE``, ``POST /v1/imports``).

An import is bounded before a line is checked: at most ``HERALD_IMPORT_MAX_LINES`` lines
and ``HERALD_IMPORT_MAX_BYTES`` bytes, a line at most :data:`MAX_LINE_BYTES`, and an API
token at most ``HERALD_IMPORT_LINES_PER_MINUTE`` lines a minute. Every line is then
validated with the same rules as a single ``create``, in slices that hold the event loop
at most :data:`SLICE_SECONDS` each, so the service goes on answering (health checks,
deliveries) while a large import is checked. When any line is bad nothing is imported
(unless ``skip_invalid``); the refusal lists the first :data:`SHOWN_INVALID` bad lines
and counts the rest. Lines whose ``key`` the owner already used are skipped, so running
an import again is safe. A line sending the same text to the same place within ten
minutes of a schedule already there (one the importer can see: core/duplicates.py) or of
an earlier line is imported all the same, and the report says so
(:attr:`ImportReport.duplicates`). The rows go in in one transaction: a crash during an
import leaves all of it or none of it.
"""

from __future__ import annotations

import asyncio
import io
import json
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from core import duplicates as dups
from core import views
from core.actors import Actor, ActorRef
from core.calendars import schedule_upcoming
from core.cases.consent import import_refusals
from core.cases.herald import Herald
from core.cases.recipients import destinations_of, wanted_of
from core.cases.schedules import audit_summary
from core.channels import parse_destination
from core.destinations import channel_name
from core.errors import HeraldError, InvalidInput
from core.models import Schedule, ScheduleState
from core.preferences import BULK, priority_name, priority_rank
from core.store import AuditEntry
from core.tenancy import QuotaExceeded

#: A line's fields; its zone is ``timezone``, as the API names it (``tz``, the older
#: name, is read too; both only when they agree). ``to`` is one destination or a list
#: of destinations and chains (``{"first_of": [...]}``), as the API takes it, and so
#: are ``time_of`` ("author" or "recipient") and ``step_timeout`` (seconds). A line's
#: ``priority`` (urgent, normal, bulk) is :data:`DEFAULT_PRIORITY` when not given.
FIELDS = {"to", "when", "text", "timezone", "tz", "key", "time_of", "step_timeout", "priority"}
#: An imported schedule's priority unless its line says: a bulk import waits behind
#: what people schedule one at a time.
DEFAULT_PRIORITY = BULK
REQUIRED = ("to", "when", "text")
#: Whose clock a line's ``when`` is read on.
TIME_OF = ("author", "recipient")
#: The longest line Herald reads: a schedule's longest line (4,000 characters of text,
#: each escaped) fits many times over.
MAX_LINE_BYTES = 64 * 1024
#: Seconds of checking between two turns of the event loop.
SLICE_SECONDS = 0.01
#: Bad lines a refusal or a report lists (the rest are counted).
SHOWN_INVALID = 20
#: The longest reason given for one bad line.
MAX_REASON = 300
#: Lines with a duplicate a report lists (the rest are counted).
SHOWN_DUPLICATES = 20
#: The schedules already sending to one destination that an import compares its lines
#: with (as a single create does).
EXISTING_READ = 2_000

Progress = Callable[[int, int], None]


@dataclass
class ImportReport:
    """What an import did. ``invalid`` holds the first :data:`SHOWN_INVALID`
    ``(line number, reason)`` pairs of the ``invalid_count`` bad lines."""

    imported: int = 0
    skipped_existing: int = 0
    skipped_duplicate: int = 0
    invalid: list[tuple[int, str]] = field(default_factory=list)
    invalid_count: int = 0
    ids: list[int] = field(default_factory=list)
    #: The first :data:`SHOWN_DUPLICATES` lines imported although the same text was
    #: already scheduled there at about the same time: ``(line number, what it
    #: duplicates in words, the existing schedule's id or None for an earlier line)``.
    duplicates: list[tuple[int, str, int | None]] = field(default_factory=list)
    #: Every line with a duplicate.
    duplicate_count: int = 0


def more_invalid(count: int, shown: int) -> str:
    """How many bad lines a list of the first ``shown`` leaves out ("" if none)."""
    return f"and {count - shown:,} more" if count > shown else ""


class ImportRejected(InvalidInput):
    """Some lines are bad, so nothing was imported. ``invalid`` lists the first
    :data:`SHOWN_INVALID` ``(line, reason)`` pairs, ``count`` every bad line."""

    def __init__(self, invalid: list[tuple[int, str]]) -> None:
        self.count = len(invalid)
        self.invalid = invalid[:SHOWN_INVALID]
        first_line, first_reason = invalid[0]
        more = more_invalid(self.count, len(self.invalid))
        tail = f" (the first {len(self.invalid)} are listed, {more})" if more else ""
        super().__init__(
            f"Nothing imported: {self.count:,} bad line(s); "
            f"the first is line {first_line}: {first_reason}{tail}."
        )


class ImportTooLarge(InvalidInput):
    """An import over its size limits; nothing was read further or imported."""


class ImportRateExceeded(QuotaExceeded):
    """An API token sent more import lines in a minute than it may; ``retry_after``
    is the seconds until this import would fit."""

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class _Slices:
    """Gives the event loop a turn whenever :data:`SLICE_SECONDS` of work have passed
    since the last one (a deadline on the process's monotonic time, not the clock)."""

    def __init__(self) -> None:
        self._until = time.monotonic() + SLICE_SECONDS

    async def tick(self) -> None:
        if time.monotonic() >= self._until:
            await asyncio.sleep(0)
            self._until = time.monotonic() + SLICE_SECONDS


def _reason(exc: Exception) -> str:
    text = str(exc).rstrip(".")
    return text if len(text) <= MAX_REASON else text[: MAX_REASON - 1] + "…"


def read_lines(lines: Iterable[str] | str, *, max_lines: int, max_bytes: int) -> list[str]:
    """The lines of an import (a text, or lines as a file gives them), refused with
    ImportTooLarge past ``max_lines`` lines or ``max_bytes`` bytes of UTF-8: it stops
    reading there. Blank lines count."""
    source = io.StringIO(lines) if isinstance(lines, str) else lines
    taken: list[str] = []
    size = 0
    for raw in source:
        if len(taken) >= max_lines:
            raise ImportTooLarge(
                f"An import may have at most {max_lines:,} lines (HERALD_IMPORT_MAX_LINES) "
                "and this one has more: split it into smaller files."
            )
        size += len(raw) if raw.isascii() else len(raw.encode("utf-8", "replace"))
        if size > max_bytes:
            raise ImportTooLarge(
                f"An import may have at most {max_bytes:,} bytes (HERALD_IMPORT_MAX_BYTES) "
                "and this one has more: split it into smaller files."
            )
        taken.append(raw)
    return taken


def _read_line(line: str) -> dict[str, Any]:
    if len(line) > MAX_LINE_BYTES or (
        not line.isascii() and len(line.encode("utf-8", "replace")) > MAX_LINE_BYTES
    ):
        raise InvalidInput(f"longer than {MAX_LINE_BYTES:,} bytes, which no schedule needs")
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"not valid JSON ({exc.msg} at column {exc.colno})") from exc
    except RecursionError:  # objects in objects a thousand deep: no schedule nests at all
        raise InvalidInput("nested far deeper than any schedule needs") from None
    if not isinstance(obj, dict):
        raise InvalidInput("each line must be a JSON object with to, when and text")
    unknown = sorted(set(obj) - FIELDS)
    if unknown:
        raise InvalidInput(
            f"unknown field {', '.join(unknown)} (known: {', '.join(sorted(FIELDS))})"
        )
    missing = [name for name in REQUIRED if name not in obj]
    if missing:
        raise InvalidInput(f"missing {', '.join(missing)}")
    for name, value in obj.items():
        _check_type(name, value)
    if "timezone" in obj:
        zone = obj.pop("timezone")
        if obj.get("tz", zone) != zone:
            raise InvalidInput("give timezone or tz (its older name), not both")
        obj["tz"] = zone
    return obj


def _check_type(name: str, value: Any) -> None:
    """A line's field of the type it must have (InvalidInput saying which, if not)."""
    if name == "to":
        if not isinstance(value, str | list):
            raise InvalidInput(
                "to must be a destination or a list of destinations and chains "
                '({"first_of": [...]})'
            )
    elif name == "time_of":
        if value not in TIME_OF:
            raise InvalidInput('time_of must be "author" or "recipient"')
    elif name == "step_timeout":
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise InvalidInput("step_timeout must be a number of seconds")
    elif not isinstance(value, str):
        raise InvalidInput(f"{name} must be a string")


def _meter(herald: Herald, actor: Actor, lines: int) -> None:
    """Count an API token's import lines against its minute; ImportRateExceeded past it."""
    if actor.via is None:  # the terminal: a process of its own, bounded per call
        return
    per_minute = herald.settings.import_lines_per_minute
    if per_minute > 0 and lines > per_minute:
        raise ImportRateExceeded(
            f"An API token may import at most {per_minute:,} lines a minute "
            f"(HERALD_IMPORT_LINES_PER_MINUTE) and this import has {lines:,}: split it.",
            retry_after=60,
        )
    wait = herald.import_meter.admit(actor.via, lines, herald.clock.now())
    if wait > 0:
        raise ImportRateExceeded(
            f"Token {actor.via} may import at most {per_minute:,} lines a minute "
            f"(HERALD_IMPORT_LINES_PER_MINUTE); this import fits in {wait} s: "
            "try again then.",
            retry_after=wait,
        )


async def import_schedules(
    herald: Herald,
    actor_id: ActorRef,
    lines: Iterable[str] | str,
    *,
    skip_invalid: bool = False,
    progress: Progress | None = None,
    priority: str | None = None,
) -> ImportReport:
    """Import JSON Lines (a text, or its lines) as ``actor_id``'s schedules.

    Raises ImportTooLarge past the lines or bytes an import may have, and
    ImportRateExceeded past an API token's lines a minute, before any line is checked;
    ImportRejected, listing the first bad lines by number and counting them all, when
    any line is bad and ``skip_invalid`` is false; QuotaExceeded past the member's or
    tenant's quota. Nothing is imported then. ``progress(written, total)`` is called as
    rows are written (they are committed together after the last). ``priority`` is
    the lines' that name none (None: :data:`DEFAULT_PRIORITY`; InvalidInput for an
    unknown one, before any line is read).
    """
    actor = await herald.actor(actor_id)
    default = priority_name(priority_rank(priority)) if priority else DEFAULT_PRIORITY
    settings = herald.settings
    taken = read_lines(
        lines, max_lines=settings.import_max_lines, max_bytes=settings.import_max_bytes
    )
    _meter(herald, actor, len(taken))
    report, slices = ImportReport(), _Slices()
    checked = await _check_lines(herald, actor, taken, report, slices, default)
    del taken
    rows, details, invalid = checked.rows, checked.details, checked.invalid
    numbers = checked.numbers
    if invalid and not skip_invalid:
        raise ImportRejected(invalid)
    report.invalid = invalid[:SHOWN_INVALID]
    report.invalid_count = len(invalid)
    existing = await herald.store.existing_keys(
        actor.id,
        [row["idempotency_key"] for row in rows if row["idempotency_key"] is not None],
        tenant=actor.tenant,
    )
    if existing:
        keep = [i for i, row in enumerate(rows) if row["idempotency_key"] not in existing]
        report.skipped_existing = len(rows) - len(keep)
        rows = [rows[i] for i in keep]
        details = [details[i] for i in keep]
        numbers = [numbers[i] for i in keep]
    total = len(rows)
    # imports count like one-by-one creates: once per recipient
    await herald.check_quota(actor, adding=sum(len(row["recipients"]) for row in rows))
    # and like them, no more than the hourly cap of messages to one recipient
    await herald.check_recipient_cap(actor, rows, action="schedule.import", tick=slices.tick)
    found = await _Duplicates(herald, actor, slices).of(rows, numbers)
    report.duplicates = found[:SHOWN_DUPLICATES]
    report.duplicate_count = len(found)
    if progress is not None:
        progress(0, total)
    ids = await herald.store.create_schedules_bulk(
        rows,
        details=details,
        actor=actor.id,
        action="schedule.import",
        now=herald.clock.now(),
        tenant=actor.tenant,
        surface=None if actor.surface is None else actor.surface.value,
        progress=None if progress is None else _written(progress, total),
    )
    report.ids = ids
    report.imported = len(ids)
    return report


@dataclass
class _Checked:
    """An import's lines once checked: the good lines' rows and audit details (in
    order), and the bad lines, ``(number, reason)``."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    details: list[dict[str, Any]] = field(default_factory=list)
    invalid: list[tuple[int, str]] = field(default_factory=list)
    #: Each good line's number (in the order of ``rows``).
    numbers: list[int] = field(default_factory=list)


async def _check_lines(
    herald: Herald,
    actor: Actor,
    taken: list[str],
    report: ImportReport,
    slices: _Slices,
    priority: str = DEFAULT_PRIORITY,
) -> _Checked:
    """Every line checked as a create would be (:func:`_line_values`), a key repeated
    within the import counted in ``report`` and left out, then every destination's
    channel asked whether it can deliver there and every person whether they accept it
    (:func:`~core.cases.consent.import_refusals`): a line failing either is bad."""
    out = _Checked()
    numbers: list[int] = []
    seen_keys: set[str] = set()
    token = {} if actor.via is None else {"token": actor.via}
    #: Channels named in the lines (slack:#deploys): each looked up once per import.
    named: dict[str, str | HeraldError] = {}
    for number, raw in enumerate(taken, start=1):
        await slices.tick()
        if not raw.strip():
            continue
        try:
            values = await _line_values(herald, actor, raw, named, priority)
        except HeraldError as exc:
            out.invalid.append((number, _reason(exc)))
            continue
        key = values["idempotency_key"]
        if key is not None:
            if key in seen_keys:
                report.skipped_duplicate += 1
                continue
            seen_keys.add(key)
        out.rows.append(values)
        out.details.append({**audit_summary(values), **token})
        numbers.append(number)
    unreachable = await _unreachable(herald, out.rows, slices)
    # people who refuse a line's author (or its urgency), read once for every line
    refused = await import_refusals(herald, actor, out.rows)
    if refused:  # audited once per import, as a create's refusal is
        first = min(refused)
        await herald.store.record_audit(
            AuditEntry.by(
                actor,
                "schedule.import.denied",
                "schedule",
                details={"reason": refused[first], "lines": len(refused)},
            ),
            now=herald.clock.now(),
        )
    unreachable |= {i: _reason(HeraldError(why)) for i, why in refused.items()}
    if unreachable:
        out.invalid = sorted([*out.invalid, *((numbers[i], w) for i, w in unreachable.items())])
        keep = [i for i in range(len(out.rows)) if i not in unreachable]
        out.rows = [out.rows[i] for i in keep]
        out.details = [out.details[i] for i in keep]
        numbers = [numbers[i] for i in keep]
    out.numbers = numbers
    return out


@dataclass
class _Line:
    """An import's line already read, as a later line's duplicate: its number and row."""

    number: int
    row: dict[str, Any]


class _Sends:
    """The sends of one text to one destination, by ten-minute slot (core.duplicates'
    window): a send finds those near it among a few, however many there are."""

    def __init__(self) -> None:
        self._slots: dict[int, list[tuple[datetime, int, Any]]] = {}
        self._count = 0

    @staticmethod
    def _slot(at: datetime) -> int:
        return int(at.timestamp() // dups.WINDOW.total_seconds())

    def add(self, sends: Sequence[datetime], item: Any) -> None:
        self._count += 1
        for at in sends:
            self._slots.setdefault(self._slot(at), []).append((at, self._count, item))

    def near(self, sends: Sequence[datetime]) -> tuple[Any, datetime, datetime] | None:
        """The first item (in the order added) with a send within the window of the
        earliest of ``sends`` that has one, that send of ``sends`` and the item's."""
        for at in sorted(sends):
            slot = self._slot(at)
            found = [
                (order, theirs, item)
                for s in (slot - 1, slot, slot + 1)
                for theirs, order, item in self._slots.get(s, ())
                if abs(theirs - at) <= dups.WINDOW
            ]
            if found:
                _, theirs, item = min(found, key=lambda f: (f[0], f[1]))
                return item, at, theirs
        return None


class _Duplicates:
    """The lines of an import that send the same text (core.duplicates.normalise) to the
    same place within ten minutes of a schedule already there or of an earlier line, as
    a single create would warn of them: each destination's schedules read once, a
    line's next sends worked out only when its text is another's there too, and
    compared only with the sends near them."""

    def __init__(self, herald: Herald, actor: Actor, slices: _Slices) -> None:
        self.herald = herald
        self.actor = actor
        self.slices = slices
        #: destination -> normalised text -> the schedules sending it there
        self.existing: dict[str, dict[str, list[Schedule]]] = {}
        #: (destination, text) -> the existing schedules' sends
        self.theirs: dict[tuple[str, str], _Sends] = {}
        #: (destination, text) -> the earlier lines' sends (a line: the only one so
        #: far, its sends not yet worked out)
        self.earlier: dict[tuple[str, str], _Sends | _Line] = {}
        self.names: dict[tuple[str, str], str] = {}

    async def of(
        self, rows: list[dict[str, Any]], numbers: list[int]
    ) -> list[tuple[int, str, int | None]]:
        found: list[tuple[int, str, int | None]] = []
        for number, row in zip(numbers, rows, strict=True):
            await self.slices.tick()
            line = _Line(number, row)
            text = dups.normalise(row["body"])
            mine: list[datetime] | None = None
            said: tuple[int, str, int | None] | None = None
            places = dict.fromkeys(str(parse_destination(d)) for d in destinations_of(row))
            for canonical in places:
                key = (canonical, text)
                theirs = await self._theirs(key)
                before = self.earlier.get(key)
                if theirs is None and before is None:
                    self.earlier[key] = line  # the first: its sends when another comes
                    continue
                if mine is None:
                    mine = _row_sends(row)
                say = len(found) < SHOWN_DUPLICATES  # the rest are counted
                if said is None and theirs is not None:
                    said = await self._existing(line, canonical, theirs.near(mine), say)
                if isinstance(before, _Line):  # the second: the first's sends now
                    first, before = before, _Sends()
                    before.add(_row_sends(first.row), first)
                    self.earlier[key] = before
                if before is None:
                    before = self.earlier[key] = _Sends()
                elif said is None:
                    said = self._earlier(line, canonical, before.near(mine), say)
                before.add(mine, line)
            if said is not None:
                found.append(said)
        return found

    async def _theirs(self, key: tuple[str, str]) -> _Sends | None:
        """The sends of the schedules already sending ``key``'s text to its
        destination (None: none does)."""
        destination, text = key
        by_text = self.existing.get(destination)
        if by_text is None:
            by_text = self.existing[destination] = await self._read(destination)
        found = by_text.get(text)
        if not found:
            return None
        sends = self.theirs.get(key)
        if sends is None:
            sends = self.theirs[key] = _Sends()
            for other in found:
                sends.add(_upcoming(other), other)
        return sends

    async def _existing(
        self,
        line: _Line,
        destination: str,
        hit: tuple[Any, datetime, datetime] | None,
        say: bool,
    ) -> tuple[int, str, int | None] | None:
        """``line``'s duplicate among the schedules there (``hit``), in words if
        ``say``."""
        if hit is None:
            return None
        other, at, theirs = hit
        assert isinstance(other, Schedule) and other.id is not None
        if not say:
            return line.number, "", other.id
        dup = dups.Duplicate(
            other.id,
            other.owner,
            await self._author(other),
            other.body,
            destination,
            views.describe(other),
            at,
            theirs,
            other.owner == self.actor.id,
        )
        said = dups.words(dup, _plain(destination))
        return line.number, f"line {line.number}: {said}", other.id

    @staticmethod
    def _earlier(
        line: _Line, destination: str, hit: tuple[Any, datetime, datetime] | None, say: bool
    ) -> tuple[int, str, int | None] | None:
        """``line``'s duplicate among the earlier lines (``hit``), in words if ``say``."""
        if hit is None:
            return None
        other = hit[0]
        assert isinstance(other, _Line)
        if not say:
            return line.number, "", None
        when = views.describe(Schedule(**other.row))
        return (
            line.number,
            f"line {line.number}: line {other.number} of this import already schedules "
            f"'{dups.quote(other.row['body'])}' into {_plain(destination)} {when}",
            None,
        )

    async def _read(self, destination: str) -> dict[str, list[Schedule]]:
        """The active schedules into ``destination`` a duplicate is looked for among:
        the importer's own, and in a channel they can see, everyone's not private."""
        others = await self.herald.sees_others(self.actor, parse_destination(destination))
        rows = await self.herald.store.into(
            self.actor.tenant,
            destination,
            viewer=self.actor.id,
            others=others,
            states=(ScheduleState.ACTIVE.value,),
            limit=EXISTING_READ,
        )
        by_text: dict[str, list[Schedule]] = {}
        for s in rows:
            by_text.setdefault(dups.normalise(s.body), []).append(s)
        return by_text

    async def _author(self, s: Schedule) -> str:
        key = (s.tenant, s.owner)
        if key not in self.names:
            self.names |= await self.herald.author_names([s])
        return self.names[key]


def _upcoming(s: Schedule) -> list[datetime]:
    return schedule_upcoming(s, dups.OCCURRENCES)[0]


def _row_sends(row: dict[str, Any]) -> list[datetime]:
    """A line's next sends, as :func:`_upcoming` reads its schedule (a one-off's from
    its row: most imports are one-offs, and a row made a schedule costs more)."""
    if row.get("rrule") is None:
        first = row.get("next_run_at")
        active = row.get("state", ScheduleState.ACTIVE.value) == ScheduleState.ACTIVE.value
        return [first] if active and first is not None else []
    return _upcoming(Schedule(**row))


async def _line_values(
    herald: Herald,
    actor: Actor,
    raw: str,
    named: dict[str, str | HeraldError],
    priority: str = DEFAULT_PRIORITY,
) -> dict[str, Any]:
    """One line read and checked as a create checks its request: its schedule row's
    values (:meth:`Herald.build_schedule`), each person's zone found when its time is
    read in the recipient's (``"time_of": "recipient"``), who asked recorded for a
    reminder of someone else. Raises HeraldError (InvalidInput, a refusal) saying why not."""
    obj = _read_line(raw)
    their_time = obj.get("time_of") == "recipient"
    wanted = [
        replace(w, to=tuple([await _named(herald, actor, d, named) for d in w.to]))
        for w in wanted_of(obj["to"], their_time=their_time, step_timeout=obj.get("step_timeout"))
    ]
    values = herald.build_schedule(
        actor,
        to=wanted,
        when=obj["when"],
        text=obj["text"],
        tz=obj.get("tz"),
        key=obj.get("key"),
        priority=obj.get("priority", priority),
    )
    if their_time:
        values = await herald.zoned(actor, values, wanted)
    return await herald.with_asker(actor, values)  # a reminder: whom it may remind


async def _unreachable(
    herald: Herald, rows: list[dict[str, Any]], slices: _Slices
) -> dict[int, str]:
    """The rows (by index) with a destination its channel says it cannot deliver to,
    and why (the first such destination's reason); each destination asked once."""
    every: list[list[str]] = []
    for row in rows:
        await slices.tick()
        every.append(destinations_of(row))
    reasons: dict[str, str] = {}
    for destination in sorted({d for steps in every for d in steps}):
        try:
            await herald.check_reachable(destination)
        except HeraldError as exc:
            reasons[destination] = _reason(exc)
    found: dict[int, str] = {}
    for i, steps in enumerate(every if reasons else []):
        why = next((reasons[d] for d in steps if d in reasons), None)
        if why is not None:
            found[i] = why
    return found


async def _named(herald: Herald, actor: Actor, to: str, named: dict[str, str | HeraldError]) -> str:
    """``to`` with a channel name looked up (:meth:`Herald.named_channel`), once per
    distinct channel name of an import (``slack:#Deploys`` and ``slack:#deploys`` are
    one): the same answer (or refusal) for every line. Other destinations pass as given."""
    name = channel_name(to)
    if name is None:
        return to
    key = str(name)
    if key not in named:
        try:
            named[key] = await herald.named_channel(actor, to)
        except HeraldError as exc:
            named[key] = exc
    found = named[key]
    if isinstance(found, HeraldError):
        raise found
    return found


def _written(progress: Progress, total: int) -> Callable[[int], None]:
    return lambda written: progress(written, total)


def _plain(destination: str) -> str:
    """A destination as an import's report (the CLI's, the API's) names it: as written,
    with what may carry a secret hidden (a webhook's path)."""
    return parse_destination(destination).redacted()
