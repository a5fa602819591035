"""Table-driven tests of core.timeexpr: phrases in, UTC instants out.

The tables (TABLE: phrases in seven zones, around DST changes; SAID: the times people
write, with the read-back each gets) are in tests/support/time_phrases.py, which says
how their expected instants were worked out; docs/time-phrases.md shows the same rows.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, time

import pytest

from core.errors import InvalidInput
from core.timeexpr import describe, next_occurrence, occurrences, parse_when, warm_up, zone
from tests.support.time_phrases import (
    BER,
    DEFAULT,
    KOL,
    LA,
    NOW,
    NY,
    SAID,
    SYD,
    TABLE,
    TYO,
    UTC_,
)
from tests.support.time_phrases import instant as at


def test_the_table_is_big_and_wide() -> None:
    assert len(TABLE) >= 80
    zones = {r[0] for r in TABLE}
    assert {NY, BER, SYD, KOL, TYO, UTC_} <= zones


@pytest.mark.parametrize(("tz", "phrase", "expected", "now", "whole"), TABLE)
def test_phrase(tz: str, phrase: str, expected: list[str], now: str, whole: bool) -> None:
    when = parse_when(phrase, tz=tz, now=at(now))
    wanted = [at(e) for e in expected]
    assert when.first == wanted[0]
    assert when.first.tzinfo == UTC
    assert when.timezone == tz
    asked = len(wanted) + 1 if whole else len(wanted)
    assert when.occurrences(asked) == wanted
    if when.rule is not None:
        assert when.recurring
        assert when.rule.startswith(f"DTSTART;TZID={tz}:")
        assert occurrences(when.rule, count=len(wanted), after=at(now)) == wanted
        assert describe(when.rule) == when.description


# ---- refusals: always InvalidInput, with a sentence naming what was not understood

REFUSALS = [
    ("evry day at 9", 'Could not read "evry day at 9"'),
    ("hello", 'Could not read "hello"'),
    ("2026-02-30 10:00", "no day 30"),
    ("on february 30 at 9am", "no day 30"),
    ("at 25:00", '"25:00"'),
    ("25:00", "not a clock time"),
    ("13pm", "am/pm"),
    ("every 0 minutes", "positive"),
    ("every -2 hours", "positive"),
    ("in -5 minutes", "positive"),
    ("in 0 seconds", "positive"),
    ("yesterday at 9", "that is in the past"),
    ("2020-01-01 10:00", "in the past"),
    ("every day at 9am until 2020-01-01", "never happens"),
    ("every day at 9am until 2026-04-01 for 3 times", "not both"),
    ("every week at 9am", "which day"),
    ("every 2 hours at 9am", "starting"),
    ("04/05/2026 10:00", "either way round"),
    ("at 5pm AST", "ambiguous"),
    ("RRULE:FREQ=DAILY;INTERVAL=0", "INTERVAL"),
    ("RRULE:FREQ=FORTNIGHTLY", "FREQ"),
    ("RRULE:FREQ=DAILY;BYHOUR=24", "BYHOUR"),
    ("RRULE:FREQ=SECONDLY", "minute"),
    ("RRULE:FREQ=MONTHLY;BYMONTH=2;BYMONTHDAY=30", "never"),
    ("0 9 * * 8", "day-of-week"),
    ("61 * * * *", "minute"),
    ("0 0 30 2 *", "never"),
    ("", "empty"),
    ("   ", "empty"),
]


@pytest.mark.parametrize(("phrase", "fragment"), REFUSALS)
def test_refusal(phrase: str, fragment: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        parse_when(phrase, tz=BER, now=at(NOW))
    message = str(caught.value)
    assert fragment in message
    assert message.endswith((".", "?"))  # a sentence, or "Did you mean '...'?"


def test_a_refusal_offers_examples() -> None:
    """With no word near one Herald knows; near misses get a suggestion instead
    (tests/unit/test_timeexpr_meant.py)."""
    with pytest.raises(InvalidInput) as caught:
        parse_when("hello there", tz=BER, now=at(NOW))
    assert str(caught.value) == (
        'Could not read "hello there": try "every day at 9am", "tomorrow at 14:00" '
        'or "2026-04-01 08:00".'
    )


@pytest.mark.parametrize(
    ("phrase", "message"),
    [
        ("april 31 at 9am", 'Could not read "april 31": April has no day 31 (it has 30 days).'),
        ("in 2 hours at 9am", "a time of day goes with days"),
        ("every day at 9am starting 2020-01-01", "that start is in the past"),
        ("every day at 9am for 0 times", "number of times must be a positive whole number"),
    ],
)
def test_refusals_say_what_is_wrong(phrase: str, message: str) -> None:
    with pytest.raises(InvalidInput, match=re.escape(message)):
        parse_when(phrase, tz=BER, now=at(NOW))


def test_tonight_is_in_the_evening() -> None:
    assert parse_when("tonight at 8", tz=BER, now=at(NOW)).first == at("2026-03-06T19:00:00Z")


@pytest.mark.parametrize("name", ["Mars/Olympus", "", "localtime", "../etc/passwd", "x" * 300])
def test_unknown_zones_are_refused(name: str) -> None:
    with pytest.raises(InvalidInput, match="Unknown time zone"):
        parse_when("at 9am", tz=name, now=at(NOW))


def test_zone_names_are_read_in_any_case() -> None:
    assert zone("europe/berlin").key == "Europe/Berlin"
    assert parse_when("at 9am", tz="asia/TOKYO", now=at(NOW)).timezone == "Asia/Tokyo"


def test_a_naive_now_is_refused() -> None:
    with pytest.raises(InvalidInput):
        parse_when("at 9am", tz=BER, now=datetime(2026, 3, 6, 15, 0))


# ---- the stored form and the words


def test_stored_rule_and_description_match_the_documented_form() -> None:
    when = parse_when("every weekday at 9am", tz=BER, now=at("2026-03-27T12:00:00Z"))
    assert when.rule == (
        "DTSTART;TZID=Europe/Berlin:20260330T090000\nRRULE:FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR"
    )
    assert when.description == "every weekday at 09:00 (Europe/Berlin)"
    once = parse_when("monday at 9am", tz=BER, now=at("2026-03-27T12:00:00Z"))
    assert once.rule is None and not once.recurring
    assert once.description == "once, Mon 30 Mar 2026 09:00 (Europe/Berlin)"


def test_minutes_and_seconds_of_now_never_leak_into_a_recurrence() -> None:
    now = datetime(2026, 3, 6, 15, 17, 43, 123456, tzinfo=UTC)
    for phrase in ("every day at 9am", "every hour", "every 30 minutes", "0 9 * * *",
                   "RRULE:FREQ=DAILY;BYHOUR=9", "every 2 weeks on tuesday"):  # fmt: skip
        when = parse_when(phrase, tz=BER, now=now)
        for instant in when.occurrences(4):
            assert (instant.second, instant.microsecond) == (0, 0), phrase
            assert instant.minute in (0, 30), phrase


@pytest.mark.parametrize(
    ("phrase", "words"),
    [
        ("every day at 9am", "every day at 09:00 (Europe/Berlin)"),
        ("every monday and wednesday at 10:00", "every Monday and Wednesday at 10:00"),
        ("every other friday at 17:00", "every other Friday at 17:00, starting Fri 6 Mar 2026"),
        ("every month on the 15th at 10:00", "every month on the 15th at 10:00"),
        ("every first monday of the month at 9am", "every first Monday of the month at 09:00"),
        ("every hour", "every hour at :00"),
        ("every 30 minutes", "every 30 minutes"),
        ("every 2 hours starting at 9:15", "every 2 hours at :15 from 09:15"),
        ("every day at 9am and 5:30pm", "every day at 09:00 and 17:30"),
        ("every day at 9am until 2026-04-30", "every day at 09:00, until Thu 30 Apr 2026"),
        ("every day at 9am for 5 times", "every day at 09:00, 5 times"),
        ("0 9 * * 1-5", "every weekday at 09:00"),
        ("*/15 * * * *", "every 15 minutes"),
        ("in 5 minutes", "once, Fri 6 Mar 2026 16:05 (Europe/Berlin)"),
    ],
)
def test_descriptions(phrase: str, words: str) -> None:
    assert words in parse_when(phrase, tz=BER, now=at(NOW)).description


def test_stored_rule_api() -> None:
    rule = "DTSTART;TZID=America/New_York:20260307T023000\nRRULE:FREQ=DAILY;COUNT=3"
    assert occurrences(rule, count=5) == [
        at("2026-03-07T07:30:00Z"),  # from DTSTART, inclusive
        at("2026-03-08T07:30:00Z"),  # 02:30 does not exist: read with EST
        at("2026-03-09T06:30:00Z"),
    ]
    assert next_occurrence(rule, at("2026-03-07T07:30:00Z")) == at("2026-03-08T07:30:00Z")
    assert next_occurrence(rule, at("2026-03-09T06:30:00Z")) is None  # ended
    assert describe(rule) == "every day at 02:30, 3 times (America/New_York)"
    for bad in ("", "RRULE:FREQ=DAILY", "DTSTART;TZID=Mars/X:20260101T000000\nRRULE:FREQ=DAILY"):
        with pytest.raises(InvalidInput):
            occurrences(bad, count=1)


def test_naive_times_from_storage_are_read_as_utc() -> None:
    rule = parse_when("every day at 9am", tz=UTC_, now=at(NOW)).rule
    assert rule is not None
    naive = datetime(2026, 3, 7, 9, 0)
    assert next_occurrence(rule, naive) == at("2026-03-08T09:00:00Z")
    once = parse_when("in 5 minutes", tz=UTC_, now=at(NOW))
    assert once.occurrences(3) == [at("2026-03-06T15:05:00Z")]
    assert once.occurrences(3, after=datetime(2026, 3, 6, 15, 5)) == []


def test_warm_up_is_harmless() -> None:
    warm_up()
    assert parse_when("in 5 minutes", tz=UTC_, now=at(NOW)).first == at("2026-03-06T15:05:00Z")


def test_a_rule_that_started_long_ago_answers_the_same_as_from_its_start() -> None:
    rule = "DTSTART;TZID=Europe/Berlin:20000131T083000\nRRULE:FREQ=MONTHLY;INTERVAL=5"
    after = at("2026-03-06T15:00:00Z")
    every = occurrences(rule, count=500)
    assert occurrences(rule, count=3, after=after) == [t for t in every if t > after][:3]


def test_the_written_times_table_is_big_and_wide() -> None:
    assert len(SAID) >= 60
    assert {r[0] for r in SAID} == {UTC_, BER, LA, KOL, SYD}


@pytest.mark.parametrize(("tz", "phrase", "first", "read_back", "rule", "default"), SAID)
def test_times_people_write(
    tz: str, phrase: str, first: str, read_back: str, rule: str | None, default: str | None
) -> None:
    chosen = {} if default is None else {"default_time": time.fromisoformat(default)}
    when = parse_when(phrase, tz=tz, now=at(NOW), **chosen)
    assert when.first == at(first)
    assert when.read_back == read_back
    assert f"({when.timezone})" in when.read_back  # the zone it was read in is named
    if rule is not None:
        assert when.rule == rule
    if when.rule is not None:  # the stored text says and does the same
        assert describe(when.rule) == when.description
        assert occurrences(when.rule, count=1, after=at(NOW)) == [when.first]
    assert (when.default_time is not None) == (DEFAULT in read_back)


WRITTEN_REFUSALS = [
    (UTC_, "yesterday at 9", '"yesterday at 9" is Thu 5 Mar 2026 09:00 UTC: that is in the past'),
    (UTC_, "first monday of this month", "that day of this month has passed; say 'of next month'"),
    (BER, "yesterday", "that is in the past"),
    (KOL, "last friday at 5pm", "that is in the past"),
    (BER, "this morning", "that is in the past"),
    (BER, "today", "the default time, 09:00, has passed today; say at what time"),
    (LA, "every fortnight", 'say which day, e.g. "every fortnight on friday"'),
    (SYD, "twice a day at 8am", 'Could not read "twice a day at 8am": twice a day takes two'),
    (UTC_, "twice a week", '"every monday and thursday at 9am"'),
    (BER, "every 1st tuesday", "every first monday of the month"),
    (LA, "at 5pm AST", "AST is ambiguous: America/Halifax"),
    (KOL, "febuary 30", 'Could not read "february 30": February has no day 30 (it has 29 days).'),
    (LA, "2 days ago", '"2 days ago" is Wed 4 Mar 2026 09:00 America/Los_Angeles: that is in'),
    (BER, "next week", 'name one day, for example "next monday" or "march 12"'),
    (UTC_, "2h", 'Could not read "2h": try'),  # a duration, maybe: "at 2h" or "in 2h"
    (UTC_, "at 9 UTC+99", "There is no zone at UTC+99: offsets go from UTC−12 to UTC+14."),
]


@pytest.mark.parametrize(("tz", "phrase", "message"), WRITTEN_REFUSALS)
def test_written_times_refused_with_the_right_hint(tz: str, phrase: str, message: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        parse_when(phrase, tz=tz, now=at(NOW))
    assert message in str(caught.value)
    assert "Did you mean" not in str(caught.value)  # febuary 30: no other impossible date


def test_an_english_word_is_not_read_as_a_zone_unless_in_capitals() -> None:
    """EAT (East Africa) is also a word: "at 5pm eat" is not a zone."""
    with pytest.raises(InvalidInput):
        parse_when("at 5pm eat", tz=BER, now=at(NOW))
    assert parse_when("at 5pm EAT", tz=BER, now=at(NOW)).timezone == "Africa/Nairobi"
