"""Every rule a member gives is read within a counted budget, or refused with a sentence.

dateutil walks a rule period by period and, when nothing matches, on to the year 9999
whatever its UNTIL says: ``RRULE:FREQ=MINUTELY;BYYEARDAY=366;BYMONTH=1;BYHOUR=5;
BYMINUTE=5`` (65 characters, never happens) held the event loop ~68 s. Now each
reading and each expansion runs on a meter (core.timeexpr.metered) and is asserted on
what it counted, the candidates dateutil examined, not on wall time; a generous CPU
bound stays as a backstop against a path the meter does not see.

Fuzzed rules: ``HERALD_FUZZ_CASES`` (300 here, 10,000 in ``make reliability``).
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from itertools import islice

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from core.errors import InvalidInput
from core.timeexpr import expand, iter_occurrences, occurrences, parse_when
from core.timeexpr.metered import BUDGET, PER_OCCURRENCE, Meter
from tests.support.meters import examined

NOW = datetime(2026, 3, 6, 15, 0, tzinfo=UTC)
BACKSTOP = 2.0  # seconds of CPU: the old code took ~68 s on the first rule below
NEVER = "never happens"
COSTLY = "too costly to expand"


def bound(count: int = 0, lines: int = 1) -> int:
    """The most one reading (``count`` 0) or one expansion of ``count`` occurrences may
    examine: its budget, once more after leaving out a line that provably never
    happens, and each line's walk through the 28 reference years."""
    budget = BUDGET + count * PER_OCCURRENCE
    return 2 * budget + lines * expand._PROBE_BUDGET


# The rule of the report and ten shorter costly ones: each is refused with a sentence
# saying why, or read, within the budget.
HOSTILE = {
    "RRULE:FREQ=MINUTELY;BYYEARDAY=366;BYMONTH=1;BYHOUR=5;BYMINUTE=5": NEVER,
    "RRULE:FREQ=HOURLY;BYYEARDAY=366;BYMONTH=1": NEVER,
    "RRULE:FREQ=YEARLY;BYYEARDAY=-366;BYMONTH=12;BYDAY=MO": NEVER,
    "RRULE:FREQ=MINUTELY;BYMONTHDAY=31;BYMONTH=2,4,6": NEVER,
    "RRULE:FREQ=YEARLY;BYWEEKNO=53;BYMONTH=6": NEVER,
    "RRULE:FREQ=MONTHLY;BYDAY=5MO;BYMONTH=2;BYSETPOS=2": NEVER,
    "RRULE:FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=29;BYSETPOS=-2": NEVER,
    "RRULE:FREQ=YEARLY;INTERVAL=4;BYMONTH=2;BYMONTHDAY=29\nDTSTART:20260101T000000": NEVER,
    # an hourly clock that lands on Mondays only, asked for Tuesdays
    "DTSTART:20260302T000000\nRRULE:FREQ=HOURLY;INTERVAL=168;BYDAY=TU": COSTLY,
    # every minute, with the next 25 days taken out (25 x 1,440 instants to pass over)
    "RRULE:FREQ=MINUTELY\nEXDATE;VALUE=DATE:"
    + ",".join(f"202603{d:02d}" for d in range(6, 31)): COSTLY,
    # rare but real: 29 February on a Monday, at 23:xx, until the year 2999
    "RRULE:FREQ=MINUTELY;BYHOUR=23;BYMONTH=2;BYMONTHDAY=29;BYDAY=MO;UNTIL=29991231": "2044-02-29",
}


@pytest.mark.parametrize("text", HOSTILE)
def test_each_costly_rule_is_refused_or_read_within_the_budget(text: str) -> None:
    expected = HOSTILE[text]
    out, spent, cpu = examined(lambda: parse_when(text, tz="UTC", now=NOW))
    assert spent <= bound(), f"{spent:,} candidates examined"
    assert cpu < BACKSTOP, f"{cpu:.1f} s of CPU"
    if expected in (NEVER, COSTLY):
        assert isinstance(out, InvalidInput), out
        assert expected in str(out), str(out)
    else:
        assert not isinstance(out, InvalidInput), str(out)
        assert out.first.date().isoformat() == expected


def test_the_reported_rule_is_refused_as_never_happening_at_once() -> None:
    """A rule whose BY parts match no day is told so before anything is walked."""
    text = "RRULE:FREQ=MINUTELY;BYYEARDAY=366;BYMONTH=1;BYHOUR=5;BYMINUTE=5"
    out, spent, _ = examined(lambda: parse_when(text, tz="Europe/Berlin", now=NOW))
    assert isinstance(out, InvalidInput)
    assert "no day matches all of its BY parts together, so it never happens" in str(out)
    assert spent <= expand._PROBE_BUDGET  # only the walk through the reference years


def test_a_stored_rule_that_never_happens_ends_within_the_budget() -> None:
    """The dispatcher and the previews read stored rules, typed checks aside: one that
    never happens has no next occurrence (it was walked to the year 9999)."""
    stored = "DTSTART;TZID=UTC:20260101T000000\nRRULE:FREQ=MINUTELY;BYYEARDAY=366;BYMONTH=1"
    out, spent, cpu = examined(lambda: occurrences(stored, count=1, after=NOW))
    assert out == []
    assert spent <= bound(1) and cpu < BACKSTOP


def test_a_stored_rule_too_costly_to_expand_is_refused_with_a_sentence() -> None:
    stored = "DTSTART;TZID=UTC:20260302T000000\nRRULE:FREQ=HOURLY;INTERVAL=168;BYDAY=TU"
    out, spent, cpu = examined(lambda: occurrences(stored, count=5, after=NOW))
    assert isinstance(out, InvalidInput)
    assert str(out).startswith("This rule is too costly to expand")
    assert spent <= bound(5) and cpu < BACKSTOP


def test_a_line_that_never_happens_does_not_hide_the_others() -> None:
    """A stored rule of two lines, one of which never happens: the other still fires."""
    stored = (
        "DTSTART;TZID=UTC:20260101T090000\n"
        "RRULE:FREQ=MINUTELY;BYYEARDAY=366;BYMONTH=1\n"
        "RRULE:FREQ=DAILY"
    )
    out, spent, _ = examined(lambda: occurrences(stored, count=2, after=NOW))
    assert out == [datetime(2026, 3, 7, 9, tzinfo=UTC), datetime(2026, 3, 8, 9, tzinfo=UTC)]
    assert spent <= bound(2, lines=2)


# Sparse rules that do happen keep working, and cheaply.
LEGIT = [
    ("RRULE:FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=29", "2028-02-29"),
    ("RRULE:FREQ=YEARLY;INTERVAL=4;BYMONTH=2;BYMONTHDAY=29", "2028-02-29"),
    ("RRULE:FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=29;BYDAY=MO", "2044-02-29"),
    ("RRULE:FREQ=MONTHLY;BYDAY=5MO;BYMONTH=2", "2044-02-29"),
    ("RRULE:FREQ=MONTHLY;BYDAY=-1FR;BYHOUR=17;BYMINUTE=0", "2026-03-27"),
    ("RRULE:FREQ=DAILY;BYMONTH=2;BYMONTHDAY=29;BYHOUR=9", "2028-02-29"),
    ("RRULE:FREQ=MINUTELY;INTERVAL=30;BYMONTH=2;BYMONTHDAY=29", "2028-02-29"),
    ("RRULE:FREQ=YEARLY;BYWEEKNO=53;BYMONTH=1", "2027-01-01"),
    ("every year on feb 29", "2028-02-29"),
    ("every last friday of the month at 17:00", "2026-03-27"),
]


@pytest.mark.parametrize(("text", "first"), LEGIT)
def test_rare_rules_that_happen_are_read(text: str, first: str) -> None:
    out, spent, _ = examined(lambda: parse_when(text, tz="UTC", now=NOW))
    assert not isinstance(out, InvalidInput), str(out)
    assert out.first.date().isoformat() == first
    assert spent <= BUDGET // 5, f"{spent:,} candidates for a rule that happens"


@pytest.mark.parametrize(
    "stored",
    [
        "DTSTART;TZID=UTC:20280229T090000\nRRULE:FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=29",
        "DTSTART;TZID=UTC:20280229T000000\nRRULE:FREQ=MINUTELY;INTERVAL=30;BYMONTH=2;BYMONTHDAY=29",
    ],
)
def test_leap_days_across_a_century_that_skips_one(stored: str) -> None:
    """2100 is not a leap year: after 2096 the next 29 February is in 2104."""
    after = datetime(2096, 3, 1, tzinfo=UTC)
    out, spent, _ = examined(lambda: occurrences(stored, count=1, after=after))
    assert [i.date().isoformat() for i in out] == ["2104-02-29"]
    assert spent <= bound(1)


@pytest.mark.parametrize(
    "stored",
    [
        "DTSTART;TZID=Europe/Berlin:20260105T090000\nRRULE:FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR",
        "DTSTART;TZID=Europe/Berlin:20260301T000000\nRRULE:FREQ=MINUTELY;INTERVAL=15",
        "DTSTART;TZID=UTC:20280229T090000\nRRULE:FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=29",
        "DTSTART;TZID=UTC:20260302T000000\nRRULE:FREQ=HOURLY;INTERVAL=161;BYDAY=TU",
    ],
)
def test_occurrences_one_at_a_time_share_one_meter(stored: str) -> None:
    """iter_occurrences (what next_allowed walks, skipping dates) gives what occurrences
    gives, on one meter that each occurrence asked for raises as occurrences' own does."""
    listed = occurrences(stored, count=50, after=NOW)
    meter = Meter()
    walked = list(islice(iter_occurrences(stored, NOW, meter=meter), 50))
    assert walked == listed
    assert meter.budget == BUDGET + 50 * PER_OCCURRENCE
    assert meter.spent <= meter.budget


def test_occurrences_one_at_a_time_are_refused_once_their_budget_is_spent() -> None:
    """A rule costing more than an occurrence's share each time runs out of budget."""
    stored = (
        "DTSTART;TZID=UTC:20260302T000000\n"
        "RRULE:FREQ=MINUTELY;INTERVAL=997;BYDAY=TU;BYHOUR=5;BYMINUTE=5"
    )
    meter = Meter()
    found = iter_occurrences(stored, NOW, meter=meter)
    out, spent, cpu = examined(lambda: [next(found) for _ in range(20)])
    assert isinstance(out, InvalidInput) and str(out).startswith("This rule is too costly")
    assert meter.spent <= BUDGET + 20 * PER_OCCURRENCE and cpu < BACKSTOP


# --- fuzzed rules: whatever the BY parts, an answer within the budget ----------------

PARTS: dict[str, list[str]] = {
    "INTERVAL": ["1", "2", "4", "7", "168", "997"],
    "BYMONTH": ["1", "2", "6", "12", "2,4,6"],
    "BYMONTHDAY": ["1", "29", "30", "31", "-1", "-31"],
    "BYYEARDAY": ["1", "60", "366", "-366", "-1"],
    "BYWEEKNO": ["1", "53", "-1", "-53", "20"],
    "BYDAY": ["MO", "TU,TH", "1MO", "-1FR", "5MO", "53SU", "SA,SU"],
    "BYHOUR": ["0", "5", "23", "5,17"],
    "BYMINUTE": ["0", "5", "59", "0,30"],
    "BYSETPOS": ["1", "-1", "2", "5", "-366"],
    "WKST": ["MO", "SU"],
    "UNTIL": ["29991231", "20300101T000000Z"],
    "COUNT": ["1", "5", "10000"],
}
FREQS = ["YEARLY", "MONTHLY", "WEEKLY", "DAILY", "HOURLY", "MINUTELY"]
START = st.sampled_from(["", "DTSTART:20260302T000000\n", "DTSTART:20280229T050500\n"])
rules = st.builds(
    lambda start, freq, parts: (
        start + f"RRULE:FREQ={freq}" + "".join(f";{k}={v}" for k, v in parts)
    ),
    START,
    st.sampled_from(FREQS),
    st.lists(
        st.sampled_from(sorted(PARTS)).flatmap(
            lambda key: st.sampled_from(PARTS[key]).map(lambda value: (key, value))
        ),
        min_size=1,
        max_size=5,
        unique_by=lambda kv: kv[0],
    ),
)
CASES = int(os.environ.get("HERALD_FUZZ_CASES", "300"))  # make reliability: 10,000


@settings(max_examples=CASES, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(text=rules, tz=st.sampled_from(["UTC", "Europe/Berlin", "Australia/Lord_Howe"]))
@example(text="RRULE:FREQ=MINUTELY;BYYEARDAY=366;BYMONTH=1;BYHOUR=5;BYMINUTE=5", tz="UTC")
@example(text="DTSTART:20260302T000000\nRRULE:FREQ=HOURLY;INTERVAL=168;BYDAY=TU", tz="UTC")
def test_any_rule_is_read_or_refused_within_the_budget(text: str, tz: str) -> None:
    out, spent, cpu = examined(lambda: parse_when(text, tz=tz, now=NOW))
    assert spent <= bound(), f"reading {text!r} examined {spent:,} candidates"
    if isinstance(out, InvalidInput):
        assert str(out).strip()
    else:
        later, more, more_cpu = examined(lambda: occurrences(out.rule, count=5, after=NOW))
        assert more <= bound(5), f"expanding {text!r} examined {more:,} candidates"
        if not isinstance(later, InvalidInput):
            assert later[0] == out.first
        cpu += more_cpu
    assert cpu < 2 * BACKSTOP, f"{text!r} took {cpu:.1f} s of CPU"  # a backstop only


def test_the_nth_weekday_of_a_named_month_is_checked_like_a_month() -> None:
    """Found by the fuzzing above: with BYMONTH a yearly BYDAY counts within the month,
    and dateutil crashed (IndexError: a 500) on a 53rd Sunday of February."""
    with pytest.raises(InvalidInput, match="BYDAY value 53SU is out of range"):
        parse_when("RRULE:FREQ=YEARLY;BYMONTH=2;BYDAY=53SU", tz="UTC", now=NOW)
    read = parse_when("RRULE:FREQ=YEARLY;BYMONTH=2;BYDAY=-5SU", tz="UTC", now=NOW)
    assert read.first == datetime(2032, 2, 1, tzinfo=UTC)  # a leap February of 5 Sundays
