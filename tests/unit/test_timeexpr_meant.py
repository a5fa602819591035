"""The times people mean: a rule without a time of day, the phrases chat users type
("eod", "tonight", "end of month", "in an hour and a half", "at 9am on weekdays",
"every hour between 9 and 17 on weekdays") and what a near miss almost said.

"Now" is Friday 2026-03-06 15:00 UTC: 16:00 in Berlin (CET, +1; CEST from Sunday
29 March). Every expected instant was worked out by hand.
"""

from __future__ import annotations

from datetime import UTC, datetime, time

import pytest

from core.errors import InvalidInput
from core.timeexpr import DEFAULT_TIME_NOTE, describe, parse_when, took_default_time

BER = "Europe/Berlin"
NOW = "2026-03-06T15:00:00Z"


def at(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)


def firsts(phrase: str, count: int, now: str = NOW, **kw: object) -> list[datetime]:
    return parse_when(phrase, tz=BER, now=at(now), **kw).occurrences(count)  # type: ignore[arg-type]


# ---- a rule without a time of day takes the default (09:00), and says so

DEFAULTED = [
    ("every day", ["2026-03-07T08:00:00Z", "2026-03-08T08:00:00Z"]),
    ("daily", ["2026-03-07T08:00:00Z", "2026-03-08T08:00:00Z"]),
    ("every monday", ["2026-03-09T08:00:00Z", "2026-03-16T08:00:00Z"]),
    ("mondays", ["2026-03-09T08:00:00Z", "2026-03-16T08:00:00Z"]),
    ("every weekday", ["2026-03-09T08:00:00Z", "2026-03-10T08:00:00Z"]),
    ("every month on the 1st", ["2026-04-01T07:00:00Z", "2026-05-01T07:00:00Z"]),  # CEST
    ("every day starting june 5", ["2026-06-05T07:00:00Z", "2026-06-06T07:00:00Z"]),
    ("every end of month", ["2026-03-31T07:00:00Z", "2026-04-30T07:00:00Z"]),
    ("end of month", ["2026-03-31T07:00:00Z"]),  # a one-off: the last day, at 09:00
]


@pytest.mark.parametrize(("phrase", "expected"), DEFAULTED)
def test_no_time_of_day_means_nine_in_the_morning(phrase: str, expected: list[str]) -> None:
    when = parse_when(phrase, tz=BER, now=at(NOW))
    assert when.occurrences(len(expected)) == [at(e) for e in expected]
    assert when.default_time == time(9, 0)
    assert when.read_back == f"{when.description} — add 'at …' to change it"
    if when.rule is not None:
        assert describe(when.rule) == when.description  # the stored rule reads the same


def test_the_read_back_says_where_the_time_came_from() -> None:
    when = parse_when("every weekday", tz=BER, now=at(NOW))
    assert when.read_back == "every weekday at 09:00 (Europe/Berlin) — add 'at …' to change it"
    assert DEFAULT_TIME_NOTE == "add 'at …' to change it"


@pytest.mark.parametrize(
    "phrase",
    ["every weekday at 9am", "every hour", "0 9 * * 1-5", "tomorrow at 9am", "in 5 minutes",
     "every day starting tomorrow at 10am", "RRULE:FREQ=DAILY;BYHOUR=9"],
)  # fmt: skip
def test_a_time_that_was_given_is_not_called_a_default(phrase: str) -> None:
    when = parse_when(phrase, tz=BER, now=at(NOW))
    assert when.default_time is None and when.read_back == when.description


def test_the_default_time_is_a_parameter() -> None:
    assert firsts("every weekday", 1, default_time=time(7, 30)) == [at("2026-03-09T06:30:00Z")]
    when = parse_when("end of month", tz=BER, now=at(NOW), default_time=time(18, 0))
    assert when.first == at("2026-03-31T16:00:00Z") and when.default_time == time(18, 0)


def test_a_stored_schedule_can_tell_whether_it_took_the_default() -> None:
    assert took_default_time("every weekday", tz=BER, at=at(NOW))
    assert not took_default_time("every weekday at 10am", tz=BER, at=at(NOW))
    assert not took_default_time("2020-01-01 10:00", tz=BER, at=at(NOW))  # no longer readable


# ---- the phrases of chat


@pytest.mark.parametrize(
    ("phrase", "expected", "now"),
    [
        ("in an hour and a half", ["2026-03-06T16:30:00Z"], NOW),
        ("in 2 and a half hours", ["2026-03-06T17:30:00Z"], NOW),
        ("in 1 hour and a half", ["2026-03-06T16:30:00Z"], NOW),
        ("in a day and a half", ["2026-03-08T03:00:00Z"], NOW),  # a calendar day, then 12 h
        ("tonight", ["2026-03-06T19:00:00Z"], NOW),  # 20:00 today
        ("tonight at 9", ["2026-03-06T20:00:00Z"], NOW),
        ("eod", ["2026-03-06T16:00:00Z"], NOW),  # 17:00 today, still ahead
        ("eod", ["2026-03-07T16:00:00Z"], "2026-03-06T17:30:00Z"),  # past: tomorrow's
        ("end of day", ["2026-03-06T16:00:00Z"], NOW),
        ("friday eod", ["2026-03-06T16:00:00Z"], NOW),
        ("every weekday eod", ["2026-03-06T16:00:00Z", "2026-03-09T16:00:00Z"], NOW),
        ("end of month", ["2026-03-31T07:00:00Z"], NOW),
        ("end of the month at 5pm", ["2026-03-31T15:00:00Z"], NOW),
        ("end of month", ["2026-04-30T07:00:00Z"], "2026-03-31T10:00:00Z"),  # today's passed
        ("end of month", ["2026-02-28T08:00:00Z"], "2026-02-10T10:00:00Z"),
        ("at 9am on weekdays", ["2026-03-09T08:00:00Z", "2026-03-10T08:00:00Z"], NOW),
        ("9:30 every monday", ["2026-03-09T08:30:00Z", "2026-03-16T08:30:00Z"], NOW),
        (
            "at 9am and 5pm on weekdays",
            ["2026-03-06T16:00:00Z", "2026-03-09T08:00:00Z", "2026-03-09T16:00:00Z"],
            NOW,
        ),
    ],
)
def test_chat_phrases(phrase: str, expected: list[str], now: str) -> None:
    assert firsts(phrase, len(expected), now) == [at(e) for e in expected]


def test_the_time_may_come_first() -> None:
    first = parse_when("at 9am on weekdays", tz=BER, now=at(NOW))
    then = parse_when("weekdays at 9am", tz=BER, now=at(NOW))
    assert first.rule == then.rule and first.description == then.description
    assert first.default_time is None


def test_every_hour_between_nine_and_five_on_weekdays() -> None:
    when = parse_when("every hour between 9 and 17 on weekdays", tz=BER, now=at(NOW))
    assert when.description == "every weekday, every hour from 09:00 to 17:00 (Europe/Berlin)"
    monday = [at(f"2026-03-09T{h:02d}:00:00Z") for h in range(8, 17)]  # 09:00-17:00 CET
    assert when.occurrences(11) == [at("2026-03-06T16:00:00Z"), *monday, at("2026-03-10T08:00Z")]
    # on the wall clock: after the change to CEST, 09:00 is 07:00 UTC
    later = when.occurrences(2, after=at("2026-03-29T12:00:00Z"))
    assert later == [at("2026-03-30T07:00:00Z"), at("2026-03-30T08:00:00Z")]
    assert (
        parse_when("every hour on weekdays between 9am and 5pm", tz=BER, now=at(NOW)).rule
        == when.rule
    )


def test_a_window_with_another_step_includes_both_ends() -> None:
    when = parse_when("every 30 minutes between 9 and 17", tz=BER, now=at(NOW))
    assert when.description == "every day, every 30 minutes from 09:00 to 17:00 (Europe/Berlin)"
    saturday = when.occurrences(17, after=at("2026-03-07T00:00:00Z"))
    assert saturday[0] == at("2026-03-07T08:00:00Z") and saturday[-1] == at("2026-03-07T16:00Z")


@pytest.mark.parametrize(
    ("phrase", "fragment"),
    [
        ("tonight", "in the past"),  # 20:00 has passed
        ("every hour between 17 and 9", "must end after it starts"),
        ("every hour between 9 and 17 on week", "name the days of the window"),
        ("at 9am every day at 10am", "give the time once"),
    ],
)
def test_what_the_new_phrases_refuse(phrase: str, fragment: str) -> None:
    with pytest.raises(InvalidInput, match=fragment):
        parse_when(phrase, tz=BER, now=at("2026-03-06T19:30:00Z"))


def test_a_long_run_of_clock_times_is_described_as_a_run() -> None:
    # seven hours at one minute each used to fail while being described
    when = parse_when("0 1,3,5,7,9,11,13 * * *", tz=BER, now=at(NOW))
    assert when.description == "every day, every 2 hours from 01:00 to 13:00 (Europe/Berlin)"


# ---- near misses: what the words almost said


@pytest.mark.parametrize(
    ("typed", "meant"),
    [
        ("tomorow", "tomorrow"),  # still needs a time, but that is the word
        ("tomorow at 9am", "tomorrow at 9am"),
        ("evry day at 9am", "every day at 9am"),
        ("evry friday", "every friday"),
        ("fridy at 5pm", "friday at 5pm"),
        ("every fridy at 9am", "every friday at 9am"),
        ("nxt monday at 10", "next monday at 10"),
        ("in 5 mintues", "in 5 minutes"),
        ("every day at 9am untill june 5", "every day at 9am until june 5"),
    ],
)
def test_a_typo_gets_what_it_almost_said(typed: str, meant: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        parse_when(typed, tz=BER, now=at(NOW))
    assert str(caught.value) == f"Could not read \"{typed}\". Did you mean '{meant}'?"


@pytest.mark.parametrize(
    ("typed", "message"),
    [
        # nothing near: the examples
        ("hello there", 'Could not read "hello there": try "every day at 9am"'),
        # a precise refusal is kept
        ("april 31 at 9am", "April has no day 31"),
        ("at 5pm ast", "ambiguous"),  # Atlantic or Arabia (EST is read as New York)
    ],
)
def test_no_suggestion_without_a_near_word(typed: str, message: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        parse_when(typed, tz=BER, now=at(NOW))
    assert message in str(caught.value) and "Did you mean" not in str(caught.value)


def test_the_fuzzy_matcher_loads_only_for_a_refusal() -> None:
    """rapidfuzz is imported on the error path only: reading a time (and starting the
    CLI) does not pay for it."""
    import json
    import subprocess
    import sys

    code = (
        "import json, sys\n"
        "from datetime import datetime, UTC\n"
        "import bot.cli\n"
        "from core.timeexpr import parse_when\n"
        "now = datetime(2026, 3, 6, tzinfo=UTC)\n"
        "parse_when('every weekday', tz='UTC', now=now)\n"
        "before = 'rapidfuzz' in sys.modules\n"
        "try:\n"
        "    parse_when('evry weekday', tz='UTC', now=now)\n"
        "except Exception:\n"
        "    pass\n"
        "print(json.dumps([before, 'rapidfuzz' in sys.modules]))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(proc.stdout) == [False, True]
