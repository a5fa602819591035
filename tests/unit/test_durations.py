"""Durations have one grammar: every input the four readers of a duration took before
they shared it (the feeds' lead time, the console's shift, Slack's ``before N unit``
and a one-off's ``in <duration>``) still gives the same result, and the two wordings
(a feed's lead time, the dispatcher's notices) still say the same.

The readers as they were are enumerated from their tables and regular expressions;
the small ones are kept here verbatim as oracles (``_old_*``).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from dateutil.relativedelta import relativedelta

from bot.slack import grammar
from core import timeexpr
from core.cases import parse_shift
from core.cases.calendars import describe_before, parse_before
from core.dispatcher.verdicts import duration as dispatcher_duration
from core.errors import InvalidInput

# --- the feeds' lead time, as it was -------------------------------------------------

_OLD_DURATION = re.compile(r"^\s*(\d+)\s*(s|sec|m|min|h|hour|hours|d|day|days)?\s*$", re.I)
_OLD_UNIT = {"s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600, "hour": 3600, "hours": 3600}


def _old_parse_before(text: str) -> int:
    m = _OLD_DURATION.match(text or "")
    if not m:
        raise InvalidInput(f"{text!r} is not a lead time: write e.g. 10m, 1h or 1d.")
    unit = (m.group(2) or "m").lower()
    seconds = int(m.group(1)) * _OLD_UNIT.get(unit, 86400)
    if not 0 <= seconds <= 30 * 86400:
        raise InvalidInput("The lead time must be between 0 and 30 days.")
    return seconds


def _old_describe_before(seconds: int) -> str:
    for size, unit in ((86400, "day"), (3600, "hour"), (60, "minute")):
        if seconds >= size and seconds % size == 0:
            count = seconds // size
            return f"{count} {unit}{'s' if count != 1 else ''}"
    return f"{seconds} second{'s' if seconds != 1 else ''}"


def _old_dispatcher_duration(seconds: float) -> str:
    seconds = abs(seconds)
    if seconds < 90:
        return f"{seconds:.0f}s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _outcome(read, text):  # type: ignore[no-untyped-def]
    try:
        return read(text)
    except InvalidInput as refused:
        return ("refused", str(refused))


_BEFORE_UNITS = ("", "s", "sec", "m", "min", "h", "hour", "hours", "d", "day", "days")
_BEFORE_NUMBERS = ("0", "1", "5", "10", "15", "59", "60", "90", "720", "1440", "43200")
_BEFORE_NUMBERS += ("43201", "30", "31", "0010", "١٠", "99999999")


def _before_inputs() -> list[str]:
    texts = []
    for number in _BEFORE_NUMBERS:
        for unit in _BEFORE_UNITS:
            for spelled in {unit, unit.upper(), unit.title()}:
                for gap in ("", " ", "  ", "\t"):
                    texts.append(f"{number}{gap}{spelled}")
                    texts.append(f"  {number}{gap}{spelled} ")
    return texts


def test_every_lead_time_a_feed_took_reads_the_same() -> None:
    accepted = 0
    for text in _before_inputs():
        old = _outcome(_old_parse_before, text)
        if isinstance(old, tuple):
            continue  # refused before: checked below where the sentence matters
        accepted += 1
        assert parse_before(text) == old, text
    assert accepted > 600


@pytest.mark.parametrize(
    ("text", "sentence"),
    [
        ("soon", "'soon' is not a lead time: write e.g. 10m, 1h or 1d."),
        ("", "'' is not a lead time: write e.g. 10m, 1h or 1d."),
        ("10x", "'10x' is not a lead time: write e.g. 10m, 1h or 1d."),
        ("1.5h", "'1.5h' is not a lead time: write e.g. 10m, 1h or 1d."),
        ("31d", "The lead time must be between 0 and 30 days."),
        ("43201", "The lead time must be between 0 and 30 days."),
        ("99999999", "The lead time must be between 0 and 30 days."),
    ],
)
def test_a_lead_time_still_refused_says_so_as_before(text: str, sentence: str) -> None:
    assert _outcome(_old_parse_before, text) == ("refused", sentence)
    with pytest.raises(InvalidInput) as refused:
        parse_before(text)
    assert str(refused.value) == sentence


def test_a_lead_time_is_worded_as_before() -> None:
    for seconds in [*range(0, 200_000, 15), *range(0, 31 * 86400, 3600), 1, 59, 61, 7201]:
        assert describe_before(seconds) == _old_describe_before(seconds), seconds


def test_the_dispatcher_words_a_wait_as_before() -> None:
    samples = [x / 4 for x in range(-400, 400)] + [float(x) for x in range(0, 30_000, 7)]
    samples += [89.4, 89.5, 89.6, 5399.0, 5400.0, 5401.0, 1e6, -0.4, 0.0]
    for seconds in samples:
        assert dispatcher_duration(seconds) == _old_dispatcher_duration(seconds), seconds


# --- "in <duration>" (one-off phrases) and the console's shift ------------------------

#: Every unit spelling a one-off's "in <duration>" took, and what it is.
_ONCE_UNITS = {
    "s": "seconds", "sec": "seconds", "secs": "seconds", "second": "seconds", "seconds": "seconds",
    "m": "minutes", "min": "minutes", "mins": "minutes", "minute": "minutes", "minutes": "minutes",
    "h": "hours", "hr": "hours", "hrs": "hours", "hour": "hours", "hours": "hours",
    "d": "days", "day": "days", "days": "days",
    "w": "weeks", "wk": "weeks", "wks": "weeks", "week": "weeks", "weeks": "weeks",
    "month": "months", "months": "months", "year": "years", "years": "years",
}  # fmt: skip
_NUMBER_WORDS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
    "fifteen": 15, "twenty": 20, "thirty": 30, "forty-five": 45, "sixty": 60,
}  # fmt: skip
_NUMBERS: dict[str, int] = {**_NUMBER_WORDS, "1": 1, "2": 2, "7": 7, "90": 90, "366": 366}
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _step(unit: str, n: int) -> relativedelta | timedelta:
    if unit in ("months", "years"):
        return relativedelta(**{unit: n})
    return timedelta(**{unit: n})


def _shift(sign: int, unit: str, n: int, now: datetime = _EPOCH) -> timedelta | None:
    """What the console's shift made of ``<sign><n> <unit>``: None when refused."""
    delta = (now + _step(unit, n)) - now
    if not timedelta(seconds=1) <= delta <= timedelta(days=366):
        return None
    return sign * delta


def test_every_shift_the_console_took_reads_the_same() -> None:
    checked = 0
    for word, unit in _ONCE_UNITS.items():
        for number, n in _NUMBERS.items():
            for gap in (" ", ""):
                for sign_text, sign in (("", 1), ("-", -1), ("+", 1), ("- ", -1), ("+ ", 1)):
                    text = f"{sign_text}{number}{gap}{word}"
                    for typed in (text, text.upper(), f" {text}. "):
                        expected = _shift(sign, unit, n)
                        if expected is None:
                            with pytest.raises(InvalidInput):
                                parse_shift(typed)
                        else:
                            assert parse_shift(typed) == expected, typed
                            checked += 1
    assert checked > 3000


@pytest.mark.parametrize(
    ("text", "shift"),
    [
        ("1h30m", timedelta(minutes=90)),
        ("1d2h", timedelta(hours=26)),
        ("1 h 30 m", timedelta(minutes=90)),
        ("1 hour 30 minutes", timedelta(minutes=90)),
        ("1 hour, 30 minutes", timedelta(minutes=90)),
        ("1 hour and 30 minutes", timedelta(minutes=90)),
        ("1 hour,30 minutes", timedelta(minutes=90)),
        ("1 week, 2 days", timedelta(days=9)),
        ("1 week 2 days 3 hours 4 minutes 5 seconds", timedelta(9, 3 * 3600 + 4 * 60 + 5)),
        ("1hour30minutes", timedelta(minutes=90)),
        ("+1h +30m", timedelta(minutes=90)),
        ("-1h30m", -timedelta(minutes=90)),
        ("half an hour", timedelta(minutes=30)),
        ("half a minute", timedelta(seconds=30)),
        ("half a day", timedelta(hours=12)),
        ("half a week", timedelta(days=3.5)),
        ("half a month", timedelta(hours=12)),  # as "in half a month" reads it (sic)
        ("an hour and a half", timedelta(minutes=90)),
        ("2 and a half hours", timedelta(minutes=150)),
        ("a day and a half", timedelta(hours=36)),
        ("an hour and 15 mins", timedelta(minutes=75)),
        ("1 month 1 day", timedelta(days=32)),
        ("1 year", timedelta(days=365)),
        ("-1 year", -timedelta(days=365)),
        ("12 months", timedelta(days=365)),
    ],
)
def test_combined_shifts_read_the_same(text: str, shift: timedelta) -> None:
    assert parse_shift(text) == shift


def test_a_shift_in_months_counts_from_now_as_before() -> None:
    march = datetime(2026, 3, 2, 12, tzinfo=UTC)
    for n in range(1, 13):
        for sign_text, sign in (("", 1), ("-", -1)):
            expected = _shift(sign, "months", n, march)
            for text in (f"{sign_text}{n} months", f"{sign_text}{n} month"):
                if expected is None:
                    with pytest.raises(InvalidInput):
                        parse_shift(text, march)
                else:
                    assert parse_shift(text, march) == expected


@pytest.mark.parametrize(
    "text",
    [
        "", "-", "+", "soon", "5x", "0m", "0 minutes", "400d", "2 years", "3 days at 9am",
        "tomorrow", "5 minutes from now", "in 5 minutes", "1.5h", "half hour", "1 h 30",
        "--5m", "1 hour -30 minutes", "2000000 minutes", "at 9am", "5", "10:30",
    ],
)  # fmt: skip
def test_a_shift_refused_before_is_refused(text: str) -> None:
    with pytest.raises(InvalidInput):
        parse_shift(text)


def test_a_shift_refusal_says_what_it_said() -> None:
    with pytest.raises(InvalidInput) as bad:
        parse_shift("soon")
    assert str(bad.value) == (
        "'soon' is not a duration: write e.g. 2 hours, 90m, 1h30m, 1 day or -15 minutes."
    )
    with pytest.raises(InvalidInput) as far:
        parse_shift("400d")
    assert str(far.value) == "A shift must be between 1 second and a year."


_BERLIN = ZoneInfo("Europe/Berlin")
#: The Saturday before Berlin's clocks go forward (29 March 2026, 02:00 -> 03:00).
_NOW = datetime(2026, 3, 28, 10, 15, tzinfo=_BERLIN).astimezone(UTC)


def _in(unit: str, n: int) -> datetime:
    """Where "in <n> <unit>" lands from _NOW in Berlin: elapsed time for seconds to
    hours, the same wall-clock time for days and longer."""
    if unit in ("seconds", "minutes", "hours"):
        return _NOW + timedelta(**{unit: n})
    wall = _NOW.astimezone(_BERLIN).replace(tzinfo=None) + relativedelta(**{unit: n})
    return wall.replace(tzinfo=_BERLIN).astimezone(UTC)


def test_every_in_duration_a_one_off_took_lands_the_same() -> None:
    for word, unit in _ONCE_UNITS.items():
        for number, n in _NUMBERS.items():
            if unit == "years" and n > 60:
                continue
            for gap in (" ", ""):
                for text in (f"in {number}{gap}{word}", f"{number}{gap}{word} from now"):
                    read = timeexpr.parse_when(text, tz="Europe/Berlin", now=_NOW)
                    assert read.first == _in(unit, n), text
                    assert read.rule is None


@pytest.mark.parametrize(
    ("text", "moved"),
    [
        ("in 1h30m", timedelta(minutes=90)),
        ("in an hour and a half", timedelta(minutes=90)),
        ("in half an hour", timedelta(minutes=30)),
        ("in 1 hour, 30 minutes", timedelta(minutes=90)),
        ("in 1 day and 2 hours", timedelta(hours=25)),  # a day is a wall-clock day
        ("in half a day", timedelta(hours=12)),
        ("in +5 minutes", timedelta(minutes=5)),
    ],
)
def test_combined_in_durations_land_the_same(text: str, moved: timedelta) -> None:
    assert timeexpr.parse_when(text, tz="Europe/Berlin", now=_NOW).first == _NOW + moved


def test_in_days_at_a_clock_time_lands_the_same() -> None:
    read = timeexpr.parse_when("in 3 days at 9am", tz="Europe/Berlin", now=_NOW)
    assert read.first == datetime(2026, 3, 31, 9, tzinfo=_BERLIN)


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("in -5 minutes", "the amount must be a positive number"),
        ("in 0 minutes", "the amount must be a positive number"),
        ("in 2000000 minutes", "that is too far ahead"),
        ("in 3 hours at 9am", "a time of day goes with days"),
    ],
)
def test_an_in_duration_refused_says_why_as_before(text: str, why: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        timeexpr.parse_when(text, tz="Europe/Berlin", now=_NOW)
    assert why in str(refused.value)


# --- Slack's "before N unit" ---------------------------------------------------------

_SLACK_UNITS = {
    "s": "s", "sec": "s", "secs": "s", "second": "s", "seconds": "s",
    "m": "m", "min": "m", "mins": "m", "minute": "m", "minutes": "m",
    "h": "h", "hour": "h", "hours": "h", "d": "d", "day": "d", "days": "d",
}  # fmt: skip


def test_every_lead_time_slack_took_reads_the_same() -> None:
    for number in ("0", "1", "10", "15", "90", "720", "30"):
        for word, short in _SLACK_UNITS.items():
            for typed in (word, word.upper(), word.title()):
                command = grammar.parse(f"feed add https://x.org/t.ics before {number} {typed}")
                assert isinstance(command, grammar.FeedAdd)
                expected = _outcome(_old_parse_before, f"{number}{short}")
                assert _outcome(parse_before, command.before) == expected, (number, typed)
        glued = grammar.parse(f"feed add https://x.org/t.ics before {number}m <#C0123|general>")
        assert isinstance(glued, grammar.FeedAdd) and glued.channel == "C0123"
        assert parse_before(glued.before) == _old_parse_before(f"{number}m")
    default = grammar.parse("feed add https://x.org/t.ics")
    assert isinstance(default, grammar.FeedAdd) and parse_before(default.before) == 600


# --- the one grammar, read directly ---------------------------------------------------


@pytest.mark.parametrize(
    ("text", "duration"),
    [
        ("90s", timedelta(seconds=90)),
        ("10 MIN", timedelta(minutes=10)),
        ("1h30m", timedelta(minutes=90)),
        ("an hour and a half", timedelta(minutes=90)),
        ("1 week, 2 days", timedelta(days=9)),
        ("-15 minutes", timedelta(minutes=-15)),
        ("+2 hrs", timedelta(hours=2)),
        ("0m", timedelta(0)),
        ("١٠m", timedelta(minutes=10)),
    ],
)
def test_parse_duration_reads_every_spelling(text: str, duration: timedelta) -> None:
    assert timeexpr.parse_duration(text) == duration


def test_a_bare_number_is_read_only_in_the_unit_asked_for() -> None:
    assert timeexpr.parse_duration("10", bare="m") == timedelta(minutes=10)
    with pytest.raises(InvalidInput):
        timeexpr.parse_duration("10")


def test_every_reader_now_takes_every_spelling() -> None:
    """One grammar: what one reader takes, the others take (within their ranges)."""
    for text in ("1h30m", "90 minutes", "an hour and a half", "1 hr 30 mins"):
        assert parse_before(text) == 5400
        assert parse_shift(text) == timedelta(minutes=90)
        assert timeexpr.parse_when(f"in {text}", tz="UTC", now=_EPOCH).first == _EPOCH + (
            timedelta(minutes=90)
        )
    command = grammar.parse("feed add https://x.org/t.ics before 1 week")
    assert isinstance(command, grammar.FeedAdd) and parse_before(command.before) == 7 * 86400


@pytest.mark.parametrize("text", ["-5m", "- 10", "half a second", "soon", "5 minutes ago"])
def test_what_is_no_lead_time_says_so(text: str) -> None:
    with pytest.raises(InvalidInput, match="is not a lead time"):
        parse_before(text)


def test_a_duration_in_words() -> None:
    assert timeexpr.describe_duration(timedelta(hours=2)) == "2 hours"
    assert timeexpr.describe_duration(90) == "90 seconds"
    assert timeexpr.describe_duration(timedelta(minutes=-12), rough=True) == "12 min"
    assert timeexpr.describe_duration(5400.0, rough=True) == "1.5 h"
    assert timeexpr.describe_duration(timedelta(hours=24), within="hour") == "24 hours"
    assert timeexpr.describe_duration(timedelta(hours=2), within="minute") == "120 minutes"
    assert timeexpr.describe_duration(timedelta(minutes=15), short=True) == "15 min"
    assert timeexpr.describe_duration(timedelta(hours=1), short=True) == "1 h"
    assert timeexpr.describe_duration(90, short=True) == "90 s"


def test_a_recurrences_interval_takes_every_spelling_of_its_unit() -> None:
    """The interval of "every N unit" is a duration: any spelling of a unit reads."""
    for a, b in [
        ("every 2 h", "every 2 hours"),
        ("every 30 m", "every 30 minutes"),
        ("every 90 m between 9 and 17", "every 90 minutes between 9 and 17"),
        ("every 3 d at 9am", "every 3 days at 9am"),
        ("every other wk on monday", "every other week on monday"),
        ("every 2 w on mondays and fridays", "every 2 weeks on mondays and fridays"),
        ("every half an hour", "every 30 minutes"),
    ]:
        read = [timeexpr.parse_when(t, tz="UTC", now=_EPOCH) for t in (a, b)]
        assert read[0].rule == read[1].rule and read[0].description == read[1].description
    for text, why in [
        ("every 0 h", "positive whole number"),
        ("every -2 d", "positive whole number"),
        ("every 1001 m", "too long"),
        ("every 30 s", 'try "every day at 9am"'),
    ]:
        with pytest.raises(InvalidInput, match=why):
            timeexpr.parse_when(text, tz="UTC", now=_EPOCH)
