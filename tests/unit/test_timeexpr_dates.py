"""EXDATE and RDATE lines in rule input (RFC 5545 3.8.5.1-2), read as the RFC says:
the recurrence set is every RRULE and RDATE instant less every EXDATE one."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from core import timeexpr
from core.errors import InvalidInput
from core.timeexpr.dates import MAX_DATES
from core.timeexpr.rule_text import parse_rule

NEW_YORK = ZoneInfo("America/New_York")


def local(values: list[datetime], zone: ZoneInfo) -> list[str]:
    return [v.astimezone(zone).strftime("%Y-%m-%d %H:%M %Z") for v in values]


def test_rfc_5545_every_friday_the_13th_with_its_exdate() -> None:
    """RFC 5545 3.8.5.3, "Every Friday the 13th, forever", pasted as the RFC prints it:
    ==> (1998 9:00 AM EST) February 13;March 13;November 13
        (1999 9:00 AM EDT) August 13
        (2000 9:00 AM EDT) October 13"""
    text = (
        "DTSTART;TZID=America/New_York:19970902T090000\n"
        "EXDATE;TZID=America/New_York:19970902T090000\n"
        "RRULE:FREQ=MONTHLY;BYDAY=FR;BYMONTHDAY=13"
    )
    when = timeexpr.parse_when(text, tz="Europe/Berlin", now=datetime(1997, 9, 1, tzinfo=UTC))
    assert local(when.occurrences(5), NEW_YORK) == [
        "1998-02-13 09:00 EST",
        "1998-03-13 09:00 EST",
        "1998-11-13 09:00 EST",
        "1999-08-13 09:00 EDT",
        "2000-10-13 09:00 EDT",
    ]
    # the stored rule keeps the exclusion (as the instant it names)
    assert when.rule is not None
    assert "EXDATE:19970902T130000Z" in when.rule.splitlines()
    assert parse_rule(when.rule).text() == when.rule


def test_exdate_removes_and_rdate_adds_and_count_counts_the_rule() -> None:
    text = (
        "DTSTART;TZID=Europe/Berlin:20270104T090000 RRULE:FREQ=DAILY;COUNT=4 "
        "EXDATE;TZID=Europe/Berlin:20270105T090000,20270106T090000 "
        "RDATE:20270110T170000Z RDATE;TZID=Europe/Berlin:20270107T090000"
    )
    when = timeexpr.parse_when(text, tz="UTC", now=datetime(2027, 1, 1, tzinfo=UTC))
    berlin = ZoneInfo("Europe/Berlin")
    # COUNT=4 is the 4th to the 7th (two of them excluded); the RDATE on the 7th is
    # one instance with the rule's own, the one on the 10th comes on top
    assert local(when.occurrences(10), berlin) == [
        "2027-01-04 09:00 CET",
        "2027-01-07 09:00 CET",
        "2027-01-10 18:00 CET",
    ]
    assert "also on" in when.description and "not on Tue 5 Jan 2027 09:00" in when.description
    assert timeexpr.next_occurrence(when.rule or "", datetime(2027, 1, 4, 9, tzinfo=UTC)) == (
        datetime(2027, 1, 7, 8, tzinfo=UTC)
    )


def test_excluded_days_and_floating_values_are_in_the_persons_zone() -> None:
    now = datetime(2026, 12, 1, 12, tzinfo=UTC)
    when = timeexpr.parse_when(
        "RRULE:FREQ=DAILY;BYHOUR=9;BYMINUTE=0 EXDATE;VALUE=DATE:20261203,20261205 "
        "EXDATE:20261206T090000",
        tz="Europe/Berlin",
        now=now,
    )
    assert local(when.occurrences(3), ZoneInfo("Europe/Berlin")) == [
        "2026-12-02 09:00 CET",
        "2026-12-04 09:00 CET",
        "2026-12-07 09:00 CET",
    ]
    assert when.description == (
        "every day at 09:00; not on Sun 6 Dec 2026 09:00, Thu 3 Dec 2026, Sat 5 Dec 2026 "
        "(Europe/Berlin)"
    )


def test_a_rule_whose_only_future_instances_are_rdates() -> None:
    when = timeexpr.parse_when(
        "DTSTART:20200101T090000Z RRULE:FREQ=DAILY;COUNT=1 RDATE:20300101T090000Z",
        tz="UTC",
        now=datetime(2026, 1, 1, tzinfo=UTC),
    )
    assert when.first == datetime(2030, 1, 1, 9, tzinfo=UTC)
    assert when.occurrences(3) == [datetime(2030, 1, 1, 9, tzinfo=UTC)]


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("RRULE:FREQ=DAILY RDATE;VALUE=PERIOD:19970101T180000Z/PT5H", "VALUE=PERIOD"),
        ("RRULE:FREQ=DAILY RDATE:20270101", "RDATE needs dates with times"),
        ("RRULE:FREQ=DAILY EXDATE;X-FOO=1:20270101T090000", "parameter Herald does not"),
        ("RRULE:FREQ=DAILY EXDATE:20270101T090000,20270102", "mixes dates"),
        ("RRULE:FREQ=DAILY EXDATE;VALUE=DATE:20270101T090000", "not of its VALUE=DATE"),
        ("RRULE:FREQ=DAILY EXDATE:2027", "is not a date"),
        ("RRULE:FREQ=DAILY EXDATE:30270101T090000Z", "outside the years"),
        ("RRULE:FREQ=DAILY EXDATE;TZID=Mars/Olympus:20270101T090000", "Unknown time zone"),
        ("RRULE:FREQ=DAILY EXRULE:FREQ=WEEKLY", "none of DTSTART, RRULE, EXDATE, RDATE"),
        ("EXDATE:20270101T090000Z", "there is no RRULE"),
    ],
)
def test_bad_date_lines_get_one_sentence(text: str, said: str) -> None:
    with pytest.raises(InvalidInput, match=said) as caught:
        timeexpr.parse_when(text, tz="UTC", now=datetime(2026, 12, 1, tzinfo=UTC))
    assert "\n" not in str(caught.value)


def test_dates_are_bounded() -> None:
    values = ",".join(f"2027{m:02d}{d:02d}T090000Z" for m in range(1, 6) for d in range(1, 22))
    assert len(values.split(",")) > MAX_DATES
    with pytest.raises(InvalidInput, match=f"at most {MAX_DATES}"):
        parse_rule(f"DTSTART;TZID=UTC:20270101T090000\nRRULE:FREQ=DAILY\nEXDATE:{values}")
