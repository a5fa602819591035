"""Time zones as people name them: IANA names, cities, offsets and abbreviations.

:func:`resolve_zone` is what every surface (the CLI's ``--tz`` and ``herald timezone``,
Slack's and Discord's ``/schedule timezone`` and ``timezone:``) reads a zone a person
typed with; Herald stores the IANA name it returns. It accepts

* an IANA name in any letter case: ``Europe/Berlin``, ``america/new_york``;
* a city, as the IANA database names it (the last part of a name, with spaces or
  underscores, any case, accents or not): ``Berlin``, ``new york``, ``São Paulo``,
  and a few large cities the database files under a neighbour (``Mumbai``, ``Munich``);
* a whole-hour offset from UTC: ``UTC+2``, ``GMT-5``, ``UTC−5`` (as ``Etc/GMT-2``, ...:
  the IANA ``Etc`` names count the other way round);
* an abbreviation that means one zone (``JST`` is ``Asia/Tokyo``). One that means
  several (``EST``: New York's time, which changes in summer, or a fixed UTC−5?) is
  refused with its meanings spelled out, even where the IANA database has a fixed zone of
  that name: a person who types ``EST`` in July most likely means New York.

A zone may also end a time phrase (``every sunday at 6pm PST``, ``tomorrow 9am
Europe/Berlin``, ``at 5pm berlin time``, ``at 9 in new york``): :func:`zone_at_end`
finds it for :func:`core.timeexpr.parse_when` (which gives it the words of its own
grammar, which no zone's name starts with). There an abbreviation with several
meanings takes its common one (``PST`` is ``America/Los_Angeles``, ``EST``
``America/New_York``, ``CET`` ``Europe/Berlin``, ``BST`` ``Europe/London``, ``IST``
``Asia/Kolkata``, ``GMT`` UTC), and the read-back says so; ``AST`` (Atlantic or
Arabia) has none and is refused.

Stored names (a member's zone, a schedule's, a rule's ``TZID``) are read by
:func:`zone` (``core.timeexpr.zone`` on timeexpr's face), which takes any name the
database has, so zones stored before :func:`resolve_zone` existed keep working.

This module imports nothing of core.timeexpr: the time grammar reads zones with it.

Every refusal is :class:`core.errors.InvalidInput`, with the nearest known name when
there is one.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Collection
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from core.errors import InvalidInput

#: The areas of the IANA database whose names end in a city (not ``US/``, ``Etc/``...).
_AREAS = frozenset(
    {"Africa", "America", "Antarctica", "Asia", "Atlantic", "Australia", "Europe",
     "Indian", "Pacific"}
)  # fmt: skip
#: Large cities the IANA database names by a neighbour in the same zone.
_CITIES = {
    "new york city": "America/New_York", "nyc": "America/New_York",
    "washington": "America/New_York", "washington dc": "America/New_York",
    "boston": "America/New_York", "atlanta": "America/New_York", "miami": "America/New_York",
    "dallas": "America/Chicago", "houston": "America/Chicago", "austin": "America/Chicago",
    "san francisco": "America/Los_Angeles", "seattle": "America/Los_Angeles",
    "mumbai": "Asia/Kolkata", "bombay": "Asia/Kolkata", "delhi": "Asia/Kolkata",
    "new delhi": "Asia/Kolkata", "bangalore": "Asia/Kolkata", "bengaluru": "Asia/Kolkata",
    "beijing": "Asia/Shanghai", "osaka": "Asia/Tokyo", "munich": "Europe/Berlin",
    "frankfurt": "Europe/Berlin", "hamburg": "Europe/Berlin", "cologne": "Europe/Berlin",
    "geneva": "Europe/Zurich", "barcelona": "Europe/Madrid", "milan": "Europe/Rome",
    "manchester": "Europe/London", "edinburgh": "Europe/London", "istanbul": "Europe/Istanbul",
}  # fmt: skip


@lru_cache(maxsize=1)
def _zone_names() -> dict[str, str]:
    return {name.lower(): name for name in available_timezones() if name != "localtime"}


def zone(name: str) -> ZoneInfo:
    """The IANA zone called ``name`` (any letter case); InvalidInput if there is none.

    "localtime" is refused: it means whatever the server is set to.
    """
    key = name.strip() if isinstance(name, str) else ""
    if key and key != "localtime":
        try:
            return ZoneInfo(key)
        except (ZoneInfoNotFoundError, ValueError, OSError):
            # ValueError for keys like "../x", OSError for over-long names.
            canonical = _zone_names().get(key.lower())
            if canonical is not None:
                return ZoneInfo(canonical)
    shown = name[:60] if isinstance(name, str) else name
    raise InvalidInput(
        f"Unknown time zone {shown!r}: use an IANA name such as Europe/Berlin or America/New_York."
    )


def _fixed(hours: int) -> str:
    """The IANA name of a fixed offset of ``hours`` from UTC (``Etc/GMT+5`` is UTC−5)."""
    return "Etc/GMT" if hours == 0 else f"Etc/GMT{-hours:+d}"


# Each abbreviation: the zones it may mean, with words for each; a fixed offset is
# written (its Etc name, None). One meaning: read as that zone. More: refused.
_Meaning = tuple[str, str | None]
_ABBREVIATIONS: dict[str, tuple[_Meaning, ...]] = {
    "EST": (("America/New_York", "Eastern time, with daylight saving"), (_fixed(-5), None)),
    "EDT": (("America/New_York", "Eastern time, with daylight saving"), (_fixed(-4), None)),
    "ET": (("America/New_York", "Eastern time"),),
    "EST5EDT": (("America/New_York", "Eastern time"),),
    "CST": (
        ("America/Chicago", "US Central time, with daylight saving"),
        ("Asia/Shanghai", "China Standard Time"),
        (_fixed(-6), None),
    ),
    "CDT": (("America/Chicago", "US Central time, with daylight saving"), (_fixed(-5), None)),
    "CT": (("America/Chicago", "US Central time"),),
    "CST6CDT": (("America/Chicago", "US Central time"),),
    "MST": (
        ("America/Denver", "US Mountain time, with daylight saving"),
        ("America/Phoenix", "Arizona, no daylight saving"),
        (_fixed(-7), None),
    ),
    "MDT": (("America/Denver", "US Mountain time, with daylight saving"), (_fixed(-6), None)),
    "MT": (("America/Denver", "US Mountain time"),),
    "MST7MDT": (("America/Denver", "US Mountain time"),),
    "PST": (
        ("America/Los_Angeles", "US Pacific time, with daylight saving"),
        ("Asia/Manila", "Philippine Standard Time"),
        (_fixed(-8), None),
    ),
    "PDT": (("America/Los_Angeles", "US Pacific time, with daylight saving"), (_fixed(-7), None)),
    "PT": (("America/Los_Angeles", "US Pacific time"),),
    "PST8PDT": (("America/Los_Angeles", "US Pacific time"),),
    "AKST": (("America/Anchorage", "Alaska time, with daylight saving"), (_fixed(-9), None)),
    "AKDT": (("America/Anchorage", "Alaska time, with daylight saving"), (_fixed(-8), None)),
    "HST": (("Pacific/Honolulu", "Hawaii time"),),
    "AST": (
        ("America/Halifax", "Atlantic time, with daylight saving"),
        ("Asia/Riyadh", "Arabia Standard Time"),
        (_fixed(-4), None),
    ),
    "NST": (("America/St_Johns", "Newfoundland time"),),
    "GMT": (("Europe/London", "UK time, with summer time"), ("UTC", "no summer time")),
    "BST": (
        ("Europe/London", "British Summer Time"),
        ("Asia/Dhaka", "Bangladesh Standard Time"),
    ),
    "IST": (
        ("Asia/Kolkata", "India Standard Time"),
        ("Europe/Dublin", "Irish Standard Time"),
        ("Asia/Jerusalem", "Israel Standard Time"),
    ),
    "WET": (("Europe/Lisbon", "Western European time, with summer time"), (_fixed(0), None)),
    "WEST": (("Europe/Lisbon", "Western European time, with summer time"), (_fixed(1), None)),
    "CET": (("Europe/Berlin", "Central European time, with summer time"), (_fixed(1), None)),
    "CEST": (("Europe/Berlin", "Central European time, with summer time"), (_fixed(2), None)),
    "MET": (("Europe/Berlin", "Central European time, with summer time"), (_fixed(1), None)),
    "EET": (("Europe/Athens", "Eastern European time, with summer time"), (_fixed(2), None)),
    "EEST": (("Europe/Athens", "Eastern European time, with summer time"), (_fixed(3), None)),
    "MSK": (("Europe/Moscow", "Moscow time"),),
    "SAST": (("Africa/Johannesburg", "South Africa time"),),
    "WAT": (("Africa/Lagos", "West Africa time"),),
    "CAT": (("Africa/Maputo", "Central Africa time"),),
    "EAT": (("Africa/Nairobi", "East Africa time"),),
    "PKT": (("Asia/Karachi", "Pakistan time"),),
    "ICT": (("Asia/Bangkok", "Indochina time"),),
    "WIB": (("Asia/Jakarta", "Western Indonesia time"),),
    "SGT": (("Asia/Singapore", "Singapore time"),),
    "HKT": (("Asia/Hong_Kong", "Hong Kong time"),),
    "JST": (("Asia/Tokyo", "Japan time"),),
    "KST": (("Asia/Seoul", "Korea time"),),
    "AWST": (("Australia/Perth", "Western Australia time"),),
    "ACST": (
        ("Australia/Adelaide", "South Australia, with daylight saving"),
        ("Australia/Darwin", "Northern Territory, no daylight saving"),
    ),
    "AEST": (
        ("Australia/Sydney", "Eastern Australia, with daylight saving"),
        ("Australia/Brisbane", "Queensland, no daylight saving"),
        (_fixed(10), None),
    ),
    "AEDT": (("Australia/Sydney", "Eastern Australia, with daylight saving"), (_fixed(11), None)),
    "NZST": (("Pacific/Auckland", "New Zealand time, with daylight saving"), (_fixed(12), None)),
    "NZDT": (("Pacific/Auckland", "New Zealand time, with daylight saving"), (_fixed(13), None)),
    "BRT": (("America/Sao_Paulo", "Brasília time"),),
    "ART": (("America/Argentina/Buenos_Aires", "Argentina time"),),
}
#: The minus sign of "UTC−5" (U+2212), as the abbreviations' meanings are written.
MINUS = "\u2212"
_UTC_NAMES = frozenset({"utc", "z", "zulu", "utc0", "universal"})
_OFFSET = re.compile(r"^(?:utc|gmt)\s?([+-])\s?(\d{1,2})(?::?00)?$")


def _offset_hours(typed: str) -> int | None:
    """The signed hours of an offset such as ``utc+2`` or ``gmt-05:00``; None if not one."""
    m = _OFFSET.match(typed)
    return None if m is None else int(m.group(2)) * (-1 if m.group(1) == "-" else 1)


_HINT = "name a city (Berlin, New York) or an IANA zone such as Europe/Berlin"


def _key(text: str) -> str:
    """How a typed name is compared: accents dropped, lower case, ``_`` and runs of
    spaces as one space, the minus sign as ``-``."""
    bare = unicodedata.normalize("NFKD", text)
    bare = "".join(c for c in bare if not unicodedata.combining(c))
    bare = bare.replace(MINUS, "-").replace("_", " ").lower()
    return " ".join(bare.split())


@lru_cache(maxsize=1)
def _names() -> dict[str, str]:
    """Every name a person may type (compared by :func:`_key`) and its IANA zone."""
    from zoneinfo import available_timezones

    zones = sorted(available_timezones() - {"localtime"})
    names = {_key(z): z for z in zones}
    cities: dict[str, str] = {}
    # a city named twice (America/Indianapolis, America/Indiana/Indianapolis): the
    # longer name is the current one, the shorter an old link to it
    for z in sorted(zones, key=lambda z: (-z.count("/"), z)):
        area, _, rest = z.partition("/")
        if area in _AREAS and rest:
            cities.setdefault(_key(z.rsplit("/", 1)[1]), z)
    for city, z in _CITIES.items():
        cities[city] = z
    for city, z in cities.items():
        names.setdefault(city, z)
    for abbreviation in _ABBREVIATIONS:
        names[abbreviation.lower()] = abbreviation
    return names


@lru_cache(maxsize=1)
def zone_names() -> tuple[str, ...]:
    """The IANA names worth offering a person (with an area, or UTC), sorted."""
    from zoneinfo import available_timezones

    return tuple(
        sorted(
            z
            for z in available_timezones()
            if ("/" in z or z == "UTC") and not z.startswith(("posix/", "right/"))
        )
    )


def _meaning(zone_key: str, words: str | None) -> str:
    if words is not None:
        return f"{zone_key} ({words})"
    hours = -int(zone_key.removeprefix("Etc/GMT") or 0)
    shown = "UTC" if hours == 0 else f"UTC{'+' if hours > 0 else MINUS}{abs(hours)}"
    return f"fixed {shown} (give '{zone_key}')"


def meanings(text: str) -> list[str]:
    """The IANA names ``text`` may mean (several for an ambiguous abbreviation, none
    for a name Herald does not know), without refusing anything."""
    try:
        return [resolve_zone(text).key]
    except InvalidInput:
        pass
    found = _ABBREVIATIONS.get(_key(text).upper(), ())
    return [z for z, _ in found]


def resolve_zone(text: str) -> ZoneInfo:
    """The zone a person means by ``text`` (see the module's docstring).

    Raises InvalidInput for an ambiguous abbreviation (naming each meaning) or an
    unknown name (with the nearest known one, if any is close).
    """
    raw = text.strip() if isinstance(text, str) else ""
    typed = _key(raw)
    if not typed:
        raise InvalidInput(f"The time zone is empty: {_HINT}.")
    if typed in _UTC_NAMES:
        return ZoneInfo("UTC")
    if (hours := _offset_hours(typed)) is not None:
        if hours > 14 or hours < -12:
            raise InvalidInput(
                f"There is no zone at {raw[:20]}: offsets go from UTC{MINUS}12 to UTC+14."
            )
        return ZoneInfo(_fixed(hours))
    found = _ABBREVIATIONS.get(typed.upper())
    if found is not None:
        if len(found) == 1:
            return ZoneInfo(found[0][0])
        choices = [_meaning(z, words) for z, words in found]
        listed = ", ".join(choices[:-1]) + ", or " + choices[-1]
        raise InvalidInput(f"{raw.upper()} is ambiguous: {listed}?")
    name = _names().get(typed) if typed != "localtime" else None  # the server's: refused
    if name is not None:
        return zone(name)
    raise InvalidInput(f"Unknown time zone {raw[:60]!r}: {_suggestion(typed)}{_HINT}.")


#: In a time phrase, the meaning an abbreviation of several takes (see the module's
#: docstring): the first listed, but these.
_IN_A_PHRASE = {"GMT": ("UTC", "no summer time")}
#: Abbreviations with no common meaning: refused in a phrase too.
_NO_COMMON = frozenset({"AST"})
#: Abbreviations that are English words: a zone at the end of a phrase only in capitals.
_WORDS = frozenset({"eat", "cat", "art", "met", "wet", "west", "mt", "et", "ct", "pt"})
_UTC_WORDS = frozenset({"utc", "gmt", "z", "zulu"})


def _abbreviation(token: str) -> tuple[ZoneInfo, str] | None:
    """The zone an abbreviation ending a phrase stands for, and what the read-back says
    of it; None if ``token`` is none. Raises InvalidInput for one with no common meaning."""
    upper = token.upper()
    found = _ABBREVIATIONS.get(upper)
    if found is None or (token.lower() in _WORDS and not token.isupper()):
        return None
    if upper in _NO_COMMON:
        resolve_zone(upper)  # raises: "AST is ambiguous: …?"
    key, words = _IN_A_PHRASE.get(upper, found[0])
    if len(found) == 1 and upper not in _IN_A_PHRASE:
        return ZoneInfo(key), f"{upper} is read as {key}"
    shown = f"{key} ({words})" if words else key
    return ZoneInfo(key), f"{upper} is read as {shown}"


def _named(typed: str, phrase_words: Collection[str]) -> ZoneInfo | None:
    """A zone by its IANA name, a city or an offset, without refusing (and without a
    suggestion, which a refusal would look for); not a name whose first word is one of
    ``phrase_words``."""
    key = _key(typed)
    if key in _UTC_NAMES or key == "gmt":
        return ZoneInfo("UTC")
    if (hours := _offset_hours(key)) is not None:
        return ZoneInfo(_fixed(hours)) if -12 <= hours <= 14 else None
    if "/" in key:
        try:
            return zone(typed)
        except InvalidInput:
            return None
    if not re.fullmatch(r"[a-z' .-]+", key) or key.split()[0] in phrase_words:
        return None  # "in 5 minutes", "in the morning": no zone, and no names loaded
    name = _names().get(key)
    return None if name is None or name in _ABBREVIATIONS else zone(name)


def zone_at_end(
    text: str, phrase_words: Collection[str]
) -> tuple[str, ZoneInfo, str | None] | None:
    """The zone that ends a time phrase, as (the phrase before it, the zone, what the
    read-back says of how it was read, or None), or None when the phrase ends in none.
    ``phrase_words`` are the words of the time grammar (``core.timeexpr.vocabulary``):
    ``in <word> …`` starting with one of them is the phrase, not a city.

    Read at the end: an IANA name (``Europe/Berlin``), ``UTC``, an offset (``UTC+2``),
    an abbreviation (``PST``; one that is an English word, such as ``EAT``, only in
    capitals), or a city as ``in <city>`` or ``<city> time``. Raises InvalidInput for
    an abbreviation with no common meaning (``AST``).
    """
    words = text.split()
    for size in (3, 2, 1):
        if len(words) <= size:
            continue
        rest, tail = " ".join(words[:-size]), words[-size:]
        lowered = [w.lower() for w in tail]
        if size == 1:
            token = tail[0]
            found = _abbreviation(token)
            if found is not None:
                return rest, found[0], found[1]
            if _OFFSET.match(_key(token)):
                return rest, resolve_zone(token), None  # refuses "UTC+99", saying why
            if lowered[0] in _UTC_WORDS or "/" in token:
                named = _named(token, phrase_words)
                if named is not None:
                    return rest, named, None
            continue
        if lowered[0] == "in":
            name = " ".join(tail[1:])
        elif lowered[-1] == "time":
            name = " ".join(tail[:-1])
        else:
            continue
        if size == 2 and (found := _abbreviation(name)) is not None:
            return rest, found[0], found[1]  # "in PST", "PST time"
        named = _named(name, phrase_words)
        if named is not None:
            return rest, named, None
    return None


def _suggestion(typed: str) -> str:
    """``did you mean Europe/Berlin? `` for a near miss, else nothing."""
    if len(typed) < 3 or len(typed) > 60:
        return ""
    from core.fuzzy import closest

    names = _names()
    near = closest(typed, names.keys())
    if near is None:
        return ""
    return f"did you mean {names[near]}? Otherwise "
