"""Property tests: recurrences keep their wall-clock time in every zone, for 10 years.

For a daily or weekly rule written as a phrase ("every monday and thursday at 2:30")
in any zone of ``zoneinfo.available_timezones()`` and starting at any instant
between 1975 and 2035, over the following 10 years:

* every occurrence is at the requested local time, and where that time is ambiguous
  (fall-back) it is its first occurrence; where it does not exist (spring-forward
  gap) the occurrence is the time read with the UTC offset before the gap (RFC 5545);
* occurrences strictly increase;
* none is skipped or doubled: there is exactly one for every requested day (two
  days whose time names the same instant, as when Samoa skipped 30 Dec 2011, count
  once).

Sub-daily rules run on elapsed time: "every hour" is exactly one hour apart across
every transition. And asking from any point of a rule gives the same occurrences as
walking it from its start (the engine restarts long rules near the point asked).

Every zone is visited by ``test_every_zone`` (the zones are split in chunks, each a
hypothesis test). `make test` draws once a zone: Hypothesis's first draw, its simplest
(Mondays at 00:00, an hour where many offset changes fall, from 2000 on), the same every
run; ``HERALD_RELIABILITY=full`` (`make reliability`) adds a random draw for every zone.
``test_any_zone`` explores further with random zones and draws in both.
"""

from __future__ import annotations

import os
from datetime import UTC, date, datetime, time, timedelta
from itertools import pairwise
from zoneinfo import ZoneInfo, available_timezones

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from core.errors import InvalidInput
from core.timeexpr import next_occurrence, occurrences, parse_when

# available_timezones() can list "localtime", a link to whatever zone the server is
# set to; Herald refuses it (a schedule must name its zone), see the last test.
ALL_ZONES = sorted(available_timezones() - {"localtime"})
CHUNKS = 10
# draws a zone, each a 10-year walk: make test's one (the simplest) takes ~0.4 s a chunk,
# the random second of make reliability (HERALD_RELIABILITY=full) ~1.2 s more
ZONE_EXAMPLES = 2 if os.environ.get("HERALD_RELIABILITY", "").lower() == "full" else 1
YEARS = 10
DAY_NAMES = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")

# Most offset changes happen between 23:00 and 03:00 local; bias the clock there.
PRONE = [time(h, m) for h in (0, 1, 2, 3, 23) for m in (0, 15, 30, 45)]
clocks = st.one_of(
    st.sampled_from(PRONE),
    st.builds(time, st.integers(0, 23), st.integers(0, 59)),
)
starts = st.datetimes(min_value=datetime(1975, 1, 1), max_value=datetime(2035, 12, 31)).map(
    lambda d: d.replace(tzinfo=UTC)
)
kinds = st.one_of(st.just(None), st.sets(st.integers(0, 6), min_size=1, max_size=6))
FAST = settings(deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])


def exists(wall: datetime, zi: ZoneInfo) -> bool:
    """Whether the local time ``wall`` happens at all in ``zi``."""
    back = wall.replace(tzinfo=zi).astimezone(UTC).astimezone(zi).replace(tzinfo=None)
    return back == wall


def offset_before(instant: datetime, zi: ZoneInfo) -> timedelta:
    """The UTC offset in force just before the offset change preceding ``instant``."""
    now = instant.astimezone(zi).utcoffset()
    probe = instant
    for _ in range(200):  # gaps last at most a day
        probe -= timedelta(minutes=15)
        offset = probe.astimezone(zi).utcoffset()
        if offset != now:
            assert offset is not None
            return offset
    raise AssertionError(f"no offset change before {instant}")


def assert_wall_time(instant: datetime, zi: ZoneInfo, times: list[time]) -> None:
    local = instant.astimezone(zi)
    if local.time() in times:
        assert local.fold == 0, f"{local} is the second pass of an ambiguous time"
        return
    # Not a requested time: only allowed when a requested time did not exist that
    # day, and then it is that time read with the offset before the gap (RFC 5545).
    for day in (local.date(), local.date() - timedelta(days=1)):
        for clock in times:
            wall = datetime.combine(day, clock)
            if not exists(wall, zi):
                shifted = (wall - offset_before(instant, zi)).replace(tzinfo=UTC)
                if shifted == instant:
                    return
    raise AssertionError(f"{local} is none of {times} nor an RFC 5545 shift of one")


def phrase_for(clock: time, weekdays: set[int] | None) -> str:
    days = "day" if weekdays is None else " and ".join(DAY_NAMES[d] for d in sorted(weekdays))
    return f"every {days} at {clock:%H:%M}"


def check(
    name: str,
    expression: str,
    times: list[time],
    weekdays: set[int] | None,
    start: datetime,
    years: int = YEARS,
) -> None:
    """``expression`` read at ``start`` fires at ``times`` on ``weekdays`` (None: every
    day) for ``years``, each time the RFC 5545 way, nothing skipped or doubled."""
    zi = ZoneInfo(name)
    end = start + timedelta(days=365 * years + 3)
    when = parse_when(expression, tz=name, now=start)
    assert when.rule is not None
    per_week = (7 if weekdays is None else len(weekdays)) * len(times)
    found = occurrences(when.rule, count=per_week * 53 * years + 10, after=start)
    got = [t for t in found if t <= end]
    assert got and got[0] == when.first

    assert all(a < b for a, b in pairwise(got)), "occurrences must strictly increase"
    for instant in got:
        assert_wall_time(instant, zi, times)

    first_day = start.astimezone(zi).date() - timedelta(days=1)
    last_day = end.astimezone(zi).date() + timedelta(days=1)
    expected: set[datetime] = set()
    for n in range((last_day - first_day).days + 1):
        day: date = first_day + timedelta(days=n)
        if weekdays is None or day.weekday() in weekdays:
            for clock in times:
                instant = datetime.combine(day, clock).replace(tzinfo=zi).astimezone(UTC)
                if start < instant <= end:
                    expected.add(instant)
    assert got == sorted(expected), "an occurrence was skipped or doubled"


@pytest.mark.parametrize("chunk", range(CHUNKS))
@settings(FAST, max_examples=ZONE_EXAMPLES, phases=[Phase.explicit, Phase.generate])  # no shrinking
@given(data=st.data())
def test_every_zone(chunk: int, data: st.DataObject) -> None:
    for name in ALL_ZONES[chunk::CHUNKS]:
        weekdays = data.draw(st.one_of(st.sets(st.integers(0, 6), min_size=1, max_size=3),
                                       st.just(None)), label=f"{name} days")  # fmt: skip
        clock = data.draw(clocks, label=f"{name} clock")
        start = data.draw(starts, label=f"{name} start")
        check(name, phrase_for(clock, weekdays), [clock], weekdays, start)


def test_every_zone_is_visited() -> None:
    visited = {name for chunk in range(CHUNKS) for name in ALL_ZONES[chunk::CHUNKS]}
    assert visited | {"localtime"} == available_timezones() | {"localtime"}
    with pytest.raises(InvalidInput, match="Unknown time zone"):
        parse_when("every day at 9am", tz="localtime", now=datetime(2026, 1, 1, tzinfo=UTC))


@settings(FAST, max_examples=40)
@given(name=st.sampled_from(ALL_ZONES), clock=clocks, weekdays=kinds, start=starts)
def test_any_zone(name: str, clock: time, weekdays: set[int] | None, start: datetime) -> None:
    check(name, phrase_for(clock, weekdays), [clock], weekdays, start)


@settings(FAST, max_examples=30)
@given(
    name=st.sampled_from(ALL_ZONES),
    hours=st.sets(st.sampled_from([0, 1, 2, 3, 23]) | st.integers(0, 23), min_size=1, max_size=3),
    minutes=st.sets(st.sampled_from([0, 15, 30, 45]) | st.integers(0, 59), min_size=1, max_size=3),
    start=starts,
)
def test_several_times_a_day(
    name: str, hours: set[int], minutes: set[int], start: datetime
) -> None:
    """Cron with hour and minute lists is one wall-clock rule with several times a
    day, where a time in a gap lands among (or on) the later ones."""
    expression = f"{','.join(map(str, sorted(minutes)))} {','.join(map(str, sorted(hours)))} * * *"
    times = sorted(time(h, m) for h in hours for m in minutes)
    check(name, expression, times, None, start, years=2)


@settings(FAST, max_examples=25)
@given(
    name=st.sampled_from(ALL_ZONES),
    minutes=st.sampled_from([15, 30, 60, 120]),
    start=starts,
)
def test_sub_daily_rules_run_on_elapsed_time(name: str, minutes: int, start: datetime) -> None:
    phrase = "every hour" if minutes == 60 else (
        f"every {minutes // 60} hours" if minutes > 60 else f"every {minutes} minutes"
    )  # fmt: skip
    when = parse_when(phrase, tz=name, now=start)
    assert when.rule is not None
    step = timedelta(minutes=minutes)
    got = occurrences(when.rule, count=int(timedelta(days=366) / step), after=start)
    assert got[0] == when.first and start < got[0] <= start + step
    assert all(b - a == step for a, b in pairwise(got)), "a step was skipped or doubled"
    assert all(t.second == 0 and t.microsecond == 0 for t in got)


FREQS = st.sampled_from(
    [
        "FREQ=DAILY",
        "FREQ=DAILY;INTERVAL=3",
        "FREQ=WEEKLY;BYDAY=MO,TH",
        "FREQ=WEEKLY;INTERVAL=2;BYDAY=FR",
        "FREQ=MONTHLY;BYMONTHDAY=31",
        "FREQ=MONTHLY;INTERVAL=5",
        "FREQ=MONTHLY;BYDAY=-1FR",
        "FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=29",
        "FREQ=HOURLY;INTERVAL=7",
        "FREQ=MINUTELY;INTERVAL=45",
        "FREQ=HOURLY;BYMINUTE=0,20,40",
    ]
)


@settings(FAST, max_examples=60)
@given(
    name=st.sampled_from(ALL_ZONES),
    parts=FREQS,
    dtstart=st.datetimes(min_value=datetime(1990, 1, 1), max_value=datetime(2030, 1, 1)),
    skip=st.integers(0, 300),
)
def test_asking_from_any_point_matches_walking_from_the_start(
    name: str, parts: str, dtstart: datetime, skip: int
) -> None:
    rule = f"DTSTART;TZID={name}:{dtstart:%Y%m%dT%H%M00}\nRRULE:{parts}"
    walked = occurrences(rule, count=skip + 4)
    after = walked[skip] if skip < len(walked) else walked[-1]
    assert occurrences(rule, count=3, after=after) == [t for t in walked if t > after][:3]
    assert next_occurrence(rule, after - timedelta(seconds=1)) == after
