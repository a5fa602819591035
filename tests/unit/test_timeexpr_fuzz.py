"""Fuzzing: whatever text arrives, the parser answers InvalidInput or a When, fast.

Random unicode rarely gets past the first reader, so a second strategy builds
near-miss phrases from Herald's own vocabulary, which reaches every reader,
dateparser included. Each call is timed with perf_counter after a warm-up (the first
call loads dateparser); the bound is 50 ms per expression. A single slow run can be
a garbage-collection pause or a busy machine rather than the expression, so an
expression over the bound is timed twice more and judged by its fastest run.
"""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime, timedelta

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from core.errors import InvalidInput
from core.timeexpr import When, describe, occurrences, parse_when, warm_up

BOUND = 0.050  # seconds per expression
NOW = datetime(2026, 3, 6, 15, 0, 17, 250_000, tzinfo=UTC)
ZONES = st.sampled_from(
    ["UTC", "Europe/Berlin", "America/New_York", "Australia/Sydney", "Asia/Kolkata",
     "Australia/Lord_Howe", "Pacific/Apia", "America/Santiago"]
)  # fmt: skip
WORDS = [
    "every", "each", "day", "days", "weekday", "weekend", "week", "weeks", "month", "months",
    "year", "hour", "hours", "minute", "minutes", "other", "at", "on", "in", "the", "of",
    "and", ",", "until", "for", "times", "starting", "from", "now", "next", "this", "today",
    "tomorrow", "monday", "fri", "sundays", "june", "feb", "5", "15th", "31st", "last",
    "first", "2nd", "0", "-3", "90", "1000000", "9am", "5pm", "13pm", "noon", "midnight",
    "9:30", "17:30", "25:00", "2:30", "2026-04-01", "2026-02-30", "2026-04-01t08:00:00z",
    "08:00", "+05:30", "*", "*/15", "1-5", "mon-fri", "@daily", "l", "rrule:freq=daily",
    "rrule:freq=weekly;byday=tu,th;byhour=18", "dtstart:20260401t090000", "byday=1mo",
    "04/05/2026", "est", "utc", "afternoon", "ago", "a", "half", "an", "quarter", "seconds",
    "between", "eod", "tonight", "end", "end of month", "and a half", "weekdays", "evry",
    "tomorow", "fridy", "mintues",
]  # fmt: skip
soups = st.lists(st.sampled_from(WORDS), min_size=1, max_size=10).map(" ".join)
texts = st.one_of(st.text(), st.text(max_size=400), soups)
FUZZ = settings(deadline=None, database=None, suppress_health_check=list(HealthCheck))


def timed(text: str, tz: str) -> float:
    start = time.perf_counter()
    try:
        answer = parse_when(text, tz=tz, now=NOW)
    except InvalidInput as refused:
        assert str(refused).strip(), "a refusal must say why"
    else:
        assert isinstance(answer, When)
        assert answer.first > NOW
        assert answer.first.utcoffset() == timedelta(0)
        if answer.rule is not None:
            assert occurrences(answer.rule, count=1, after=NOW) == [answer.first]
    return time.perf_counter() - start


# make reliability raises this to 10,000 (HERALD_FUZZ_CASES)
@settings(FUZZ, max_examples=int(os.environ.get("HERALD_FUZZ_CASES", "400")))
@given(text=texts, tz=ZONES)
def test_any_text_is_read_or_refused_quickly(text: str, tz: str) -> None:
    warm_up()
    elapsed = timed(text, tz)
    if elapsed > BOUND:
        elapsed = min(elapsed, timed(text, tz), timed(text, tz))
    assert elapsed < BOUND, f"{text!r} took {elapsed * 1000:.1f} ms"


@settings(FUZZ, max_examples=200)
@given(text=st.one_of(st.text(), soups.map(lambda s: s.upper().replace(" ", "\n"))))
def test_stored_rule_readers_only_refuse(text: str) -> None:
    for call in (
        lambda: describe(text),
        lambda: occurrences(text, count=3),
        lambda: occurrences(text, count=3, after=NOW),
    ):
        try:
            call()
        except InvalidInput:
            pass


PART_VALUES = {
    "FREQ": ["YEARLY", "MONTHLY", "WEEKLY", "DAILY", "HOURLY", "MINUTELY", "SECONDLY", "X"],
    "INTERVAL": ["0", "1", "2", "7", "1000", "1001", "-1", "a"],
    "COUNT": ["1", "3", "10000", "10001", "0"],
    "UNTIL": ["20260101", "20300101T000000Z", "20201301", "20300101T250000", "x"],
    "BYMONTH": ["1,2", "2", "13", "0"],
    "BYMONTHDAY": ["1", "-1", "31", "29", "30", "0", "15,31", "-32"],
    "BYDAY": ["MO", "1MO", "-1FR", "5FR", "MO,TU", "53MO", "XX", "0MO"],
    "BYHOUR": ["0", "23", "24", "9,17", "-1"],
    "BYMINUTE": ["0", "59", "60", "0,30"],
    "BYSECOND": ["0", "30", "61"],
    "BYSETPOS": ["1", "-1", "0", "2"],
    "BYWEEKNO": ["1", "53", "-1", "54"],
    "BYYEARDAY": ["1", "366", "-366", "367"],
    "WKST": ["MO", "SU", "XX"],
    "BYEASTER": ["0"],
}
rule_parts = st.lists(
    st.sampled_from(sorted(PART_VALUES)).flatmap(
        lambda key: st.sampled_from(PART_VALUES[key]).map(lambda value: f"{key}={value}")
    ),
    min_size=1,
    max_size=6,
).map(";".join)
starts = st.sampled_from(
    ["", "DTSTART:20260401T090000\n", "DTSTART;TZID=Asia/Tokyo:20260101T023000\n",
     "DTSTART:20260401T090000Z\n", "DTSTART:20261301T000000\n", "DTSTART:18000101T000000\n",
     "DTSTART;TZID=Nowhere/X:20260101T000000\n"]
)  # fmt: skip
rule_texts = st.builds(lambda start, body: f"{start}RRULE:{body}", starts, rule_parts)


@settings(FUZZ, max_examples=300)
@given(text=rule_texts, tz=ZONES)
# rules that are read (random ones mostly are not): the answering branch always runs
@example("DTSTART:20260401T090000\nRRULE:FREQ=WEEKLY;BYDAY=MO,TU", "UTC")
@example("DTSTART;TZID=Asia/Tokyo:20260101T023000\nRRULE:FREQ=DAILY;INTERVAL=2", "Asia/Tokyo")
def test_rule_texts_are_read_or_refused(text: str, tz: str) -> None:
    """RFC 5545 input goes deeper than random text; it too only ever answers or
    refuses. A rule that never fires is searched for 60 years before it is refused
    (up to ~0.2 s for a yearly rule), so the bound here only guards against hangs."""
    warm_up()
    start = time.perf_counter()
    try:
        when = parse_when(text, tz=tz, now=NOW)
    except InvalidInput:
        pass
    else:
        assert when.rule is not None and when.first > NOW
        describe(when.rule)
        assert occurrences(when.rule, count=3, after=NOW)[0] == when.first
    assert time.perf_counter() - start < 5.0  # a hang guard, not a speed bound
