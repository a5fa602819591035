"""The phrase tables of core.timeexpr's tests (tests/unit/test_timeexpr_phrases.py),
here so that the time-phrase gallery (docs/time-phrases.md, ``python -m docs.gen
phrases``) shows the same phrases the tests prove.

Every expected instant below was worked out by hand from the zone's offsets, not
copied from the code. The default "now" is Friday 2026-03-06 15:00 UTC, which is

    America/New_York   Fri 10:00 EST (-5)  -> EDT (-4) on Sun 8 Mar 02:00
    Europe/Berlin      Fri 16:00 CET (+1)  -> CEST (+2) on Sun 29 Mar 02:00
    Australia/Sydney   Sat 02:00 AEDT (+11) -> AEST (+10) on Sun 5 Apr 03:00;
                                           back to AEDT on Sun 4 Oct 02:00
    Australia/Lord_Howe Sat 02:00 (+11) -> +10:30 on Sun 5 Apr 02:00;
                                           back to +11 on Sun 4 Oct 02:00
    Asia/Kolkata       Fri 20:30 IST (+5:30, no DST)
    Asia/Tokyo         Sat 00:00 JST (+9, no DST)
    UTC                Fri 15:00

Rows with their own "now" sit next to a DST change.
"""

from __future__ import annotations

from datetime import UTC, datetime

NOW = "2026-03-06T15:00:00Z"
NY, BER, SYD, LHI = "America/New_York", "Europe/Berlin", "Australia/Sydney", "Australia/Lord_Howe"
KOL, TYO, UTC_ = "Asia/Kolkata", "Asia/Tokyo", "UTC"


def instant(text: str) -> datetime:
    """An instant of the tables (``2026-03-06T15:00:00Z``) as an aware UTC datetime."""
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)


# (zone, phrase, expected first occurrences in UTC, now, whole: the list is all there is)
Row = tuple[str, str, list[str], str, bool]


def row(tz: str, phrase: str, *expected: str, now: str = NOW, whole: bool = False) -> Row:
    return (tz, phrase, list(expected), now, whole)


TABLE: list[Row] = [
    # ---- America/New_York: relative, clock and day words, across the March change
    row(NY, "in 90 seconds", "2026-03-06T15:01:30Z"),
    row(NY, "in 5 minutes", "2026-03-06T15:05:00Z"),
    row(NY, "in 2 hours", "2026-03-06T17:00:00Z"),
    row(NY, "in 3 days", "2026-03-09T14:00:00Z"),  # same wall clock, now on EDT
    row(NY, "in 1 week", "2026-03-13T14:00:00Z"),
    row(NY, "in 48 hours", "2026-03-08T15:00:00Z"),  # elapsed time
    row(NY, "at 3pm", "2026-03-06T20:00:00Z"),
    row(NY, "at 9am", "2026-03-07T14:00:00Z"),  # past today: tomorrow
    row(NY, "tomorrow at noon", "2026-03-07T17:00:00Z"),
    row(NY, "sunday at 2:30", "2026-03-08T07:30:00Z"),  # in the gap: offset before it
    row(NY, "monday 9:30", "2026-03-09T13:30:00Z"),
    row(NY, "next friday at 9:30", "2026-03-13T13:30:00Z"),
    row(NY, "friday at 11:00", "2026-03-06T16:00:00Z"),  # today, still ahead
    row(NY, "on june 5 at 14:00", "2026-06-05T18:00:00Z"),
    row(NY, "on 2026-11-01 at 1:30", "2026-11-01T05:30:00Z"),  # ambiguous: first (EDT)
    row(NY, "2026-11-01 01:30", "2026-11-01T05:30:00Z"),
    row(NY, "2026-03-08 02:30", "2026-03-08T07:30:00Z"),
    row(NY, "2026-04-01T08:00:00Z", "2026-04-01T08:00:00Z"),
    row(NY, "2026-04-01T08:00:00+02:00", "2026-04-01T06:00:00Z"),
    row(
        NY,
        "every day at 9am",
        "2026-03-07T14:00:00Z",
        "2026-03-08T13:00:00Z",
        "2026-03-09T13:00:00Z",
    ),
    row(
        NY,
        "every day at 2:30",
        "2026-03-07T07:30:00Z",
        "2026-03-08T07:30:00Z",
        "2026-03-09T06:30:00Z",
    ),
    row(NY, "every weekday at 9am", "2026-03-09T13:00:00Z", "2026-03-10T13:00:00Z"),
    row(NY, "every hour", "2026-03-06T16:00:00Z", "2026-03-06T17:00:00Z"),
    row(NY, "every 30 minutes", "2026-03-06T15:30:00Z", "2026-03-06T16:00:00Z"),
    row(NY, "0 9 * * 1-5", "2026-03-09T13:00:00Z", "2026-03-10T13:00:00Z"),
    row(
        NY,
        "RRULE:FREQ=WEEKLY;BYDAY=TU,TH;BYHOUR=18;BYMINUTE=0",
        "2026-03-10T22:00:00Z",
        "2026-03-12T22:00:00Z",
    ),
    row(NY, "every other friday at 16:00", "2026-03-06T21:00:00Z", "2026-03-20T20:00:00Z"),
    row(
        NY,
        "every hour",
        "2026-03-08T07:00:00Z",
        "2026-03-08T08:00:00Z",
        now="2026-03-08T06:30:00Z",  # 01:30 EST; 02:00 does not exist
    ),
    # ---- America/New_York in the autumn: EDT ends Sun 1 Nov 02:00 -> 01:00 EST
    row(
        NY,
        "every day at 1:30",
        "2026-10-31T05:30:00Z",
        "2026-11-01T05:30:00Z",  # the first 01:30, EDT
        "2026-11-02T06:30:00Z",
        now="2026-10-30T12:00:00Z",
    ),
    row(
        NY,
        "every hour",
        "2026-11-01T06:00:00Z",  # 01:00 EST, the repeated hour
        "2026-11-01T07:00:00Z",
        "2026-11-01T08:00:00Z",
        now="2026-11-01T05:30:00Z",  # 01:30 EDT
    ),
    row(NY, "in 1 day", "2026-11-01T13:00:00Z", now="2026-10-31T12:00:00Z"),
    row(
        NY,
        "15,45 2,3 * * *",  # 02:15 and 03:15 (EDT) are one instant on the 8th, and so on
        "2026-03-08T07:15:00Z",
        "2026-03-08T07:45:00Z",
        "2026-03-09T06:15:00Z",
        "2026-03-09T06:45:00Z",
        "2026-03-09T07:15:00Z",
        now="2026-03-08T05:00:00Z",
    ),
    # ---- Europe/Berlin
    row(BER, "at 17:30", "2026-03-06T16:30:00Z"),
    row(BER, "at 3pm", "2026-03-07T14:00:00Z"),
    row(BER, "tomorrow at 9am", "2026-03-07T08:00:00Z"),
    row(BER, "in 1 week", "2026-03-13T15:00:00Z"),
    row(BER, "on 2026-03-29 at 2:30", "2026-03-29T01:30:00Z"),  # gap
    row(BER, "2026-10-25 02:30", "2026-10-25T00:30:00Z"),  # ambiguous: CEST
    row(
        BER,
        "every day at 9am",
        "2026-03-28T08:00:00Z",
        "2026-03-29T07:00:00Z",
        "2026-03-30T07:00:00Z",
        now="2026-03-27T12:00:00Z",
    ),
    row(
        BER,
        "every monday at 9am until 2026-03-23",
        "2026-03-09T08:00:00Z",
        "2026-03-16T08:00:00Z",
        "2026-03-23T08:00:00Z",
        whole=True,
    ),
    row(
        BER,
        "every day at 10:00 for 3 times",
        "2026-03-07T09:00:00Z",
        "2026-03-08T09:00:00Z",
        "2026-03-09T09:00:00Z",
        whole=True,
    ),
    row(
        BER,
        "every month on the 15th at 10:00",
        "2026-03-15T09:00:00Z",
        "2026-04-15T08:00:00Z",
        "2026-05-15T08:00:00Z",
    ),
    row(
        BER,
        "every first monday of the month at 9am",
        "2026-04-06T07:00:00Z",
        "2026-05-04T07:00:00Z",
        "2026-06-01T07:00:00Z",
    ),
    row(
        BER,
        "every monday and wednesday at 10:00",
        "2026-03-09T09:00:00Z",
        "2026-03-11T09:00:00Z",
        "2026-03-16T09:00:00Z",
    ),
    row(
        BER,
        "every 2 weeks on tuesday",  # no time of day: the default, 09:00
        "2026-03-10T08:00:00Z",
        "2026-03-24T08:00:00Z",
        "2026-04-07T07:00:00Z",
    ),
    row(
        BER,
        "every last friday of the month at 17:00",
        "2026-03-27T16:00:00Z",
        "2026-04-24T15:00:00Z",
    ),
    row(
        BER, "*/15 * * * *", "2026-03-06T15:15:00Z", "2026-03-06T15:30:00Z", "2026-03-06T15:45:00Z"
    ),
    row(BER, "0 0 1 * *", "2026-03-31T22:00:00Z", "2026-04-30T22:00:00Z"),
    row(
        BER,
        "RRULE:FREQ=DAILY;BYHOUR=8,20;BYMINUTE=0",
        "2026-03-06T19:00:00Z",
        "2026-03-07T07:00:00Z",
        "2026-03-07T19:00:00Z",
    ),
    row(
        BER,
        "DTSTART:20260401T090000\nRRULE:FREQ=DAILY;COUNT=2",
        "2026-04-01T07:00:00Z",
        "2026-04-02T07:00:00Z",
        whole=True,
    ),
    row(
        BER,
        "every 2 hours starting at 9:15",
        "2026-03-07T08:15:00Z",
        "2026-03-07T10:15:00Z",
        "2026-03-07T12:15:00Z",
    ),
    row(BER, "every year on june 5 at 9am", "2026-06-05T07:00:00Z", "2027-06-05T07:00:00Z"),
    row(BER, "April 1st, 2026 8:00 AM", "2026-04-01T06:00:00Z"),  # dateparser
    row(BER, "12:00 on 1 may", "2026-05-01T10:00:00Z"),  # dateparser
    row(
        BER,
        "every sunday at 2:30",
        "2026-10-25T00:30:00Z",  # ambiguous: the first, CEST
        "2026-11-01T01:30:00Z",
        now="2026-10-23T10:00:00Z",
    ),
    row(
        BER,
        "every 30 minutes",
        "2026-10-25T01:00:00Z",  # 02:00 CET, the repeated hour
        "2026-10-25T01:30:00Z",
        "2026-10-25T02:00:00Z",
        now="2026-10-25T00:40:00Z",  # 02:40 CEST
    ),
    # ---- Australia/Sydney (southern hemisphere)
    row(SYD, "at 9am", "2026-03-06T22:00:00Z"),
    row(SYD, "tomorrow at 9am", "2026-03-07T22:00:00Z"),
    row(
        SYD,
        "every day at 9am",
        "2026-04-03T22:00:00Z",
        "2026-04-04T23:00:00Z",  # AEST from 5 Apr
        "2026-04-05T23:00:00Z",
        now="2026-04-03T00:00:00Z",
    ),
    row(SYD, "2026-04-05 02:30", "2026-04-04T15:30:00Z"),  # ambiguous: first, AEDT
    row(SYD, "2026-10-04 02:30", "2026-10-03T16:30:00Z"),  # gap: AEST offset
    row(
        SYD,
        "every sunday at 2:30",
        "2026-10-03T16:30:00Z",
        "2026-10-10T15:30:00Z",
        now="2026-09-30T00:00:00Z",
    ),
    row(SYD, "every monday at 9am", "2026-03-08T22:00:00Z", "2026-03-15T22:00:00Z"),
    row(SYD, "in 3 days", "2026-03-09T15:00:00Z"),
    row(SYD, "on june 5 at 14:00", "2026-06-05T04:00:00Z"),
    row(
        SYD,
        "every hour",
        "2026-04-04T16:00:00Z",  # 02:00 AEST, the repeated hour
        "2026-04-04T17:00:00Z",
        "2026-04-04T18:00:00Z",
        now="2026-04-04T15:30:00Z",  # 02:30 AEDT
    ),
    row(
        SYD,
        "every 30 minutes",
        "2026-04-04T16:00:00Z",
        "2026-04-04T16:30:00Z",
        "2026-04-04T17:00:00Z",
        now="2026-04-04T15:30:00Z",
    ),
    # ---- Australia/Lord_Howe: a half-hour DST shift
    row(LHI, "2026-04-05 01:45", "2026-04-04T14:45:00Z"),  # ambiguous: first (+11)
    row(LHI, "2026-10-04 02:15", "2026-10-03T15:45:00Z"),  # gap: +10:30
    row(
        LHI,
        "every day at 1:45",
        "2026-04-03T14:45:00Z",
        "2026-04-04T14:45:00Z",
        "2026-04-05T15:15:00Z",
        now="2026-04-03T12:00:00Z",
    ),
    # ---- Asia/Kolkata (+5:30)
    row(KOL, "at 21:00", "2026-03-06T15:30:00Z"),
    row(KOL, "at 8pm", "2026-03-07T14:30:00Z"),
    row(KOL, "every hour", "2026-03-06T15:30:00Z", "2026-03-06T16:30:00Z"),
    row(KOL, "every 30 minutes", "2026-03-06T15:30:00Z", "2026-03-06T16:00:00Z"),
    row(KOL, "every day at 9am", "2026-03-07T03:30:00Z", "2026-03-08T03:30:00Z"),
    row(KOL, "0 9 * * 1-5", "2026-03-09T03:30:00Z"),
    row(KOL, "tomorrow at noon", "2026-03-07T06:30:00Z"),
    row(KOL, "in 90 seconds", "2026-03-06T15:01:30Z"),
    row(
        KOL,
        "every month on the 31st at 9am",
        "2026-03-31T03:30:00Z",
        "2026-05-31T03:30:00Z",
        "2026-07-31T03:30:00Z",
    ),
    row(KOL, "2026-04-01 08:00", "2026-04-01T02:30:00Z"),
    # ---- Asia/Tokyo (+9): now is exactly local midnight
    row(TYO, "at midnight", "2026-03-07T15:00:00Z"),  # now is not after now
    row(TYO, "at 9am", "2026-03-07T00:00:00Z"),
    row(TYO, "every weekday at 9am", "2026-03-09T00:00:00Z"),
    row(TYO, "every 2 hours", "2026-03-06T17:00:00Z", "2026-03-06T19:00:00Z"),
    row(TYO, "next monday at 9:30", "2026-03-09T00:30:00Z"),
    row(TYO, "every first monday of the month at 9am", "2026-04-06T00:00:00Z"),
    row(TYO, "on 2026-04-01 at 8am", "2026-03-31T23:00:00Z"),
    row(
        TYO,
        "every day at 9am until 2026-03-09",
        "2026-03-07T00:00:00Z",
        "2026-03-08T00:00:00Z",
        "2026-03-09T00:00:00Z",
        whole=True,
    ),
    # ---- UTC
    row(UTC_, "in 1 hour and 30 minutes", "2026-03-06T16:30:00Z"),
    row(UTC_, "at 3pm", "2026-03-07T15:00:00Z"),  # exactly now: tomorrow
    row(UTC_, "every hour", "2026-03-06T16:00:00Z"),
    row(
        UTC_, "0 */6 * * *", "2026-03-06T18:00:00Z", "2026-03-07T00:00:00Z", "2026-03-07T06:00:00Z"
    ),
    row(
        UTC_,
        "every monday at 9am for 2 times",
        "2026-03-09T09:00:00Z",
        "2026-03-16T09:00:00Z",
        whole=True,
    ),
    row(UTC_, "2026-03-06T15:00:01Z", "2026-03-06T15:00:01Z"),
    row(UTC_, "daily at 8", "2026-03-07T08:00:00Z"),
    row(UTC_, "@hourly", "2026-03-06T16:00:00Z"),
]


# ---- times people write (issue 33): what /remind users type, in five zones, with the
# read-back each gets. Now is still Friday 2026-03-06 15:00 UTC:
#
#     UTC                  Fri 15:00
#     Europe/Berlin        Fri 16:00 CET (+1)  -> CEST (+2) on Sun 29 Mar
#     America/Los_Angeles  Fri 07:00 PST (-8)  -> PDT (-7) on Sun 8 Mar 02:00
#     Asia/Kolkata         Fri 20:30 IST (+5:30)
#     Australia/Sydney     Sat 02:00 AEDT (+11) -> AEST (+10) on Sun 5 Apr 03:00
#
# A one-off without a time takes the default time (09:00, or the caller's) and says so;
# a zone ending the phrase is the zone it is read in, and the read-back names it.

LA = "America/Los_Angeles"
DEFAULT = " — add 'at …' to change it"
PST = " — PST is read as America/Los_Angeles (US Pacific time, with daylight saving)"
TWICE = " — twice a day is 09:00 and 17:00; add 'at …' to change it"
QUARTERS = "every 1st of January, April, July and October at 09:00"


def _part(name: str, clock: str) -> str:
    return f" — '{name}' is {clock}; add 'at …' to change it"


def _second(day: str, nth: str = "second") -> str:
    return f" — for the {nth} {day.title()} of each month, say 'every {nth} {day} of the month'"


# (zone, phrase, first occurrence in UTC, read-back, stored rule or None, default time)
Said = tuple[str, str, str, str, str | None, str | None]


def said(
    tz: str, phrase: str, first: str, read_back: str, rule: str | None = None, default: str = ""
) -> Said:
    return (tz, phrase, first, read_back, rule, default or None)


SAID: list[Said] = [
    # ---- UTC
    said(UTC_, "tomorrow", "2026-03-07T09:00:00Z", "once, Sat 7 Mar 2026 09:00 (UTC)" + DEFAULT),
    said(UTC_, "monday", "2026-03-09T09:00:00Z", "once, Mon 9 Mar 2026 09:00 (UTC)" + DEFAULT),
    said(UTC_, "jan 4", "2027-01-04T09:00:00Z", "once, Mon 4 Jan 2027 09:00 (UTC)" + DEFAULT),
    # today is Friday and 09:00 has passed: the coming one
    said(UTC_, "friday", "2026-03-13T09:00:00Z", "once, Fri 13 Mar 2026 09:00 (UTC)" + DEFAULT),
    said(
        UTC_,
        "tomorrow",
        "2026-03-07T08:30:00Z",
        "once, Sat 7 Mar 2026 08:30 (UTC)" + DEFAULT,
        default="08:30",  # the tenant's default time
    ),
    said(UTC_, "in 20 minutes", "2026-03-06T15:20:00Z", "once, Fri 6 Mar 2026 15:20 (UTC)"),
    said(UTC_, "at 17h", "2026-03-06T17:00:00Z", "once, Fri 6 Mar 2026 17:00 (UTC)"),
    said(
        UTC_,
        "every night at 11pm",
        "2026-03-06T23:00:00Z",
        "every day at 23:00 (UTC)",
        "DTSTART;TZID=UTC:20260306T230000\nRRULE:FREQ=DAILY",
    ),
    said(
        UTC_,
        "twice a day",
        "2026-03-06T17:00:00Z",
        "every day at 09:00 and 17:00 (UTC)" + TWICE,
        "DTSTART;TZID=UTC:20260306T170000\nRRULE:FREQ=DAILY;BYHOUR=9,17;BYMINUTE=0;BYSECOND=0",
    ),
    said(
        UTC_,
        "every quarter",
        "2026-04-01T09:00:00Z",
        f"{QUARTERS} (UTC){DEFAULT}",
        "DTSTART;TZID=UTC:20260401T090000\nRRULE:FREQ=MONTHLY;BYMONTH=1,4,7,10;BYMONTHDAY=1",
    ),
    said(
        UTC_,
        "every sunday at 6pm PST",  # Sunday 8 March is already on PDT (-7)
        "2026-03-09T01:00:00Z",
        "every Sunday at 18:00 (America/Los_Angeles)" + PST,
        "DTSTART;TZID=America/Los_Angeles:20260308T180000\nRRULE:FREQ=WEEKLY;BYDAY=SU",
    ),
    said(
        UTC_,
        "at 5pm GMT",
        "2026-03-06T17:00:00Z",
        "once, Fri 6 Mar 2026 17:00 (UTC) — GMT is read as UTC (no summer time)",
    ),
    said(
        UTC_,
        "on the 15th of every month",
        "2026-03-15T09:00:00Z",
        "every month on the 15th at 09:00 (UTC)" + DEFAULT,
        "DTSTART;TZID=UTC:20260315T090000\nRRULE:FREQ=MONTHLY;BYMONTHDAY=15",
    ),
    said(UTC_, "at 5pm UTC+2", "2026-03-07T15:00:00Z", "once, Sat 7 Mar 2026 17:00 (Etc/GMT-2)"),
    said(
        UTC_,
        "every quarter on the last day",
        "2026-04-30T09:00:00Z",
        "every last day of January, April, July and October at 09:00 (UTC)" + DEFAULT,
    ),
    # ---- Europe/Berlin
    said(
        BER,
        "tomorrow",
        "2026-03-07T08:00:00Z",
        "once, Sat 7 Mar 2026 09:00 (Europe/Berlin)" + DEFAULT,
    ),
    said(
        BER,
        "monday",
        "2026-03-09T08:00:00Z",
        "once, Mon 9 Mar 2026 09:00 (Europe/Berlin)" + DEFAULT,
    ),
    said(
        BER, "jan 4", "2027-01-04T08:00:00Z", "once, Mon 4 Jan 2027 09:00 (Europe/Berlin)" + DEFAULT
    ),
    said(
        BER,
        "monday",
        "2026-03-09T06:30:00Z",
        "once, Mon 9 Mar 2026 07:30 (Europe/Berlin)" + DEFAULT,
        default="07:30",
    ),
    said(
        BER,
        "april the 1st",  # read by dateparser: a day, at the default time too
        "2026-04-01T07:00:00Z",
        "once, Wed 1 Apr 2026 09:00 (Europe/Berlin)" + DEFAULT,
    ),
    said(
        BER,
        "tomorrow morning",
        "2026-03-07T08:00:00Z",
        "once, Sat 7 Mar 2026 09:00 (Europe/Berlin)" + _part("morning", "09:00"),
    ),
    said(
        BER,
        "this evening",
        "2026-03-06T17:00:00Z",
        "once, Fri 6 Mar 2026 18:00 (Europe/Berlin)" + _part("evening", "18:00"),
    ),
    said(
        BER,
        "tomorrow night at 11",
        "2026-03-07T22:00:00Z",
        "once, Sat 7 Mar 2026 23:00 (Europe/Berlin)",
    ),
    said(BER, "at 17h", "2026-03-06T16:00:00Z", "once, Fri 6 Mar 2026 17:00 (Europe/Berlin)"),
    said(
        BER, "tomorrow 17h30", "2026-03-07T16:30:00Z", "once, Sat 7 Mar 2026 17:30 (Europe/Berlin)"
    ),
    said(
        BER,
        "every 2nd tuesday at 3pm",  # every other Tuesday, as /remind reads it
        "2026-03-10T14:00:00Z",
        "every other Tuesday at 15:00, starting Tue 10 Mar 2026 (Europe/Berlin)"
        + _second("tuesday"),
        "DTSTART;TZID=Europe/Berlin:20260310T150000\nRRULE:FREQ=WEEKLY;INTERVAL=2;BYDAY=TU",
    ),
    said(
        BER,
        "every second tuesday of the month at 3pm",
        "2026-03-10T14:00:00Z",
        "every second Tuesday of the month at 15:00 (Europe/Berlin)",
        "DTSTART;TZID=Europe/Berlin:20260310T150000\nRRULE:FREQ=MONTHLY;BYDAY=2TU",
    ),
    said(
        BER,
        "every fortnight on friday",  # today's 09:00 has passed: from the 13th
        "2026-03-13T08:00:00Z",
        "every other Friday at 09:00, starting Fri 13 Mar 2026 (Europe/Berlin)" + DEFAULT,
        "DTSTART;TZID=Europe/Berlin:20260313T090000\nRRULE:FREQ=WEEKLY;INTERVAL=2;BYDAY=FR",
    ),
    said(
        BER,
        "on the 15th of every month at 3pm",
        "2026-03-15T14:00:00Z",
        "every month on the 15th at 15:00 (Europe/Berlin)",
        "DTSTART;TZID=Europe/Berlin:20260315T150000\nRRULE:FREQ=MONTHLY;BYMONTHDAY=15",
    ),
    said(
        BER,
        "twice a day at 8am and 8pm",
        "2026-03-06T19:00:00Z",
        "every day at 08:00 and 20:00 (Europe/Berlin)",
    ),
    said(
        BER,
        "every quarter on the 15th",  # 15 April is on CEST
        "2026-04-15T07:00:00Z",
        "every 15th of January, April, July and October at 09:00 (Europe/Berlin)" + DEFAULT,
    ),
    said(
        BER,
        "every day at 9am until friday",  # typed on a Friday after 09:00: the next Friday
        "2026-03-07T08:00:00Z",
        "every day at 09:00, until Fri 13 Mar 2026 (Europe/Berlin)",
        "DTSTART;TZID=Europe/Berlin:20260307T090000\nRRULE:FREQ=DAILY;UNTIL=20260313T225959Z",
    ),
    said(
        BER,
        "every hour until friday",  # still happens today: this Friday
        "2026-03-06T16:00:00Z",
        "every hour at :00, until Fri 6 Mar 2026 (Europe/Berlin)",
    ),
    said(
        BER,
        "at 5pm CET",
        "2026-03-06T16:00:00Z",
        "once, Fri 6 Mar 2026 17:00 (Europe/Berlin) — CET is read as Europe/Berlin "
        "(Central European time, with summer time)",
    ),
    said(
        BER,
        "every night",
        "2026-03-06T19:00:00Z",
        "every day at 20:00 (Europe/Berlin)" + _part("night", "20:00"),
    ),
    said(
        BER,
        "every weekday morning",
        "2026-03-09T08:00:00Z",
        "every weekday at 09:00 (Europe/Berlin)" + _part("morning", "09:00"),
        "DTSTART;TZID=Europe/Berlin:20260309T090000\nRRULE:FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR",
    ),
    # ---- America/Los_Angeles
    said(
        LA,
        "tomorrow",
        "2026-03-07T17:00:00Z",
        "once, Sat 7 Mar 2026 09:00 (America/Los_Angeles)" + DEFAULT,
    ),
    said(
        LA,
        "monday",
        "2026-03-09T16:00:00Z",
        "once, Mon 9 Mar 2026 09:00 (America/Los_Angeles)" + DEFAULT,
    ),
    # 09:00 is still ahead this Friday: today
    said(
        LA,
        "friday",
        "2026-03-06T17:00:00Z",
        "once, Fri 6 Mar 2026 09:00 (America/Los_Angeles)" + DEFAULT,
    ),
    said(
        LA,
        "jan 4",
        "2027-01-04T17:00:00Z",
        "once, Mon 4 Jan 2027 09:00 (America/Los_Angeles)" + DEFAULT,
    ),
    said(
        LA,
        "tomorrow 9am Europe/Berlin",
        "2026-03-07T08:00:00Z",
        "once, Sat 7 Mar 2026 09:00 (Europe/Berlin)",
    ),
    said(
        LA,
        "every sunday at 6pm PST",
        "2026-03-09T01:00:00Z",
        "every Sunday at 18:00 (America/Los_Angeles)" + PST,
    ),
    said(
        LA,
        "at 5pm EST",
        "2026-03-06T22:00:00Z",
        "once, Fri 6 Mar 2026 17:00 (America/New_York) — EST is read as America/New_York "
        "(Eastern time, with daylight saving)",
    ),
    said(
        LA,
        "every day at 9 in new york",
        "2026-03-07T14:00:00Z",
        "every day at 09:00 (America/New_York)",
        "DTSTART;TZID=America/New_York:20260307T090000\nRRULE:FREQ=DAILY",
    ),
    said(
        LA,
        "at noon london time",
        "2026-03-07T12:00:00Z",
        "once, Sat 7 Mar 2026 12:00 (Europe/London)",
    ),
    said(
        LA,
        "in 20 minutes",
        "2026-03-06T15:20:00Z",
        "once, Fri 6 Mar 2026 07:20 (America/Los_Angeles)",
    ),
    said(
        LA,
        "every night at 11pm",
        "2026-03-07T07:00:00Z",
        "every day at 23:00 (America/Los_Angeles)",
        "DTSTART;TZID=America/Los_Angeles:20260306T230000\nRRULE:FREQ=DAILY",
    ),
    said(
        LA,
        "twice a day",
        "2026-03-06T17:00:00Z",
        "every day at 09:00 and 17:00 (America/Los_Angeles)" + TWICE,
    ),
    said(LA, "every quarter", "2026-04-01T16:00:00Z", f"{QUARTERS} (America/Los_Angeles){DEFAULT}"),
    said(LA, "at 17h", "2026-03-07T01:00:00Z", "once, Fri 6 Mar 2026 17:00 (America/Los_Angeles)"),
    said(
        LA,
        "every 3rd wednesday at 10am",
        "2026-03-11T17:00:00Z",
        "every 3 weeks on Wednesday at 10:00, starting Wed 11 Mar 2026 (America/Los_Angeles)"
        + _second("wednesday", "third"),
        "DTSTART;TZID=America/Los_Angeles:20260311T100000\nRRULE:FREQ=WEEKLY;INTERVAL=3;BYDAY=WE",
    ),
    said(
        LA,
        "every monday until friday",  # 13 March ends at 23:59:59 PDT
        "2026-03-09T16:00:00Z",
        "every Monday at 09:00, until Fri 13 Mar 2026 (America/Los_Angeles)" + DEFAULT,
        "DTSTART;TZID=America/Los_Angeles:20260309T090000\n"
        "RRULE:FREQ=WEEKLY;BYDAY=MO;UNTIL=20260314T065959Z",
    ),
    # ---- Asia/Kolkata
    said(
        KOL,
        "tomorrow",
        "2026-03-07T03:30:00Z",
        "once, Sat 7 Mar 2026 09:00 (Asia/Kolkata)" + DEFAULT,
    ),
    said(
        KOL, "monday", "2026-03-09T03:30:00Z", "once, Mon 9 Mar 2026 09:00 (Asia/Kolkata)" + DEFAULT
    ),
    said(
        KOL, "jan 4", "2027-01-04T03:30:00Z", "once, Mon 4 Jan 2027 09:00 (Asia/Kolkata)" + DEFAULT
    ),
    said(
        KOL,
        "tomorrow morning",
        "2026-03-07T03:30:00Z",
        "once, Sat 7 Mar 2026 09:00 (Asia/Kolkata)" + _part("morning", "09:00"),
    ),
    said(
        KOL,
        "tomorrow afternoon",
        "2026-03-07T08:30:00Z",
        "once, Sat 7 Mar 2026 14:00 (Asia/Kolkata)" + _part("afternoon", "14:00"),
    ),
    said(
        KOL,
        "friday evening",  # 18:00 has passed this Friday: the next
        "2026-03-13T12:30:00Z",
        "once, Fri 13 Mar 2026 18:00 (Asia/Kolkata)" + _part("evening", "18:00"),
    ),
    said(
        KOL,
        "every night at 11pm",
        "2026-03-06T17:30:00Z",
        "every day at 23:00 (Asia/Kolkata)",
        "DTSTART;TZID=Asia/Kolkata:20260306T230000\nRRULE:FREQ=DAILY",
    ),
    said(KOL, "at 21h", "2026-03-06T15:30:00Z", "once, Fri 6 Mar 2026 21:00 (Asia/Kolkata)"),
    said(
        KOL,
        "on the 15th of every month",
        "2026-03-15T03:30:00Z",
        "every month on the 15th at 09:00 (Asia/Kolkata)" + DEFAULT,
    ),
    said(
        KOL,
        "twice a day",  # 17:00 has passed today: tomorrow's 09:00
        "2026-03-07T03:30:00Z",
        "every day at 09:00 and 17:00 (Asia/Kolkata)" + TWICE,
        "DTSTART;TZID=Asia/Kolkata:20260307T090000\n"
        "RRULE:FREQ=DAILY;BYHOUR=9,17;BYMINUTE=0;BYSECOND=0",
    ),
    said(KOL, "every quarter", "2026-04-01T03:30:00Z", f"{QUARTERS} (Asia/Kolkata){DEFAULT}"),
    said(
        KOL,
        "every 2nd tuesday at 3pm",
        "2026-03-10T09:30:00Z",
        "every other Tuesday at 15:00, starting Tue 10 Mar 2026 (Asia/Kolkata)"
        + _second("tuesday"),
    ),
    said(
        KOL,
        "at 9am IST",
        "2026-03-07T03:30:00Z",
        "once, Sat 7 Mar 2026 09:00 (Asia/Kolkata) — IST is read as Asia/Kolkata "
        "(India Standard Time)",
    ),
    said(
        KOL,
        "every sunday at 6pm PST",
        "2026-03-09T01:00:00Z",
        "every Sunday at 18:00 (America/Los_Angeles)" + PST,
    ),
    said(
        KOL,
        "every day at 9am until friday",  # Friday 20:30 here: the next Friday
        "2026-03-07T03:30:00Z",
        "every day at 09:00, until Fri 13 Mar 2026 (Asia/Kolkata)",
        "DTSTART;TZID=Asia/Kolkata:20260307T090000\nRRULE:FREQ=DAILY;UNTIL=20260313T182959Z",
    ),
    # ---- Australia/Sydney: already Saturday 02:00
    said(
        SYD,
        "tomorrow",
        "2026-03-07T22:00:00Z",
        "once, Sun 8 Mar 2026 09:00 (Australia/Sydney)" + DEFAULT,
    ),
    said(
        SYD,
        "today",
        "2026-03-06T22:00:00Z",
        "once, Sat 7 Mar 2026 09:00 (Australia/Sydney)" + DEFAULT,
    ),
    said(
        SYD,
        "monday",
        "2026-03-08T22:00:00Z",
        "once, Mon 9 Mar 2026 09:00 (Australia/Sydney)" + DEFAULT,
    ),
    said(
        SYD,
        "sunday",
        "2026-03-07T22:00:00Z",
        "once, Sun 8 Mar 2026 09:00 (Australia/Sydney)" + DEFAULT,
    ),
    said(
        SYD,
        "jan 4",
        "2027-01-03T22:00:00Z",
        "once, Mon 4 Jan 2027 09:00 (Australia/Sydney)" + DEFAULT,
    ),
    said(
        SYD,
        "tomorrow morning",
        "2026-03-07T22:00:00Z",
        "once, Sun 8 Mar 2026 09:00 (Australia/Sydney)" + _part("morning", "09:00"),
    ),
    said(
        SYD,
        "every night at 11pm",
        "2026-03-07T12:00:00Z",
        "every day at 23:00 (Australia/Sydney)",
        "DTSTART;TZID=Australia/Sydney:20260307T230000\nRRULE:FREQ=DAILY",
    ),
    said(
        SYD,
        "every quarter",  # 1 April is still on AEDT (+11)
        "2026-03-31T22:00:00Z",
        f"{QUARTERS} (Australia/Sydney){DEFAULT}",
    ),
    said(
        SYD,
        "on the 15th of every month at 3pm",
        "2026-03-15T04:00:00Z",
        "every month on the 15th at 15:00 (Australia/Sydney)",
    ),
    said(
        SYD,
        "every 2nd tuesday at 3pm",
        "2026-03-10T04:00:00Z",
        "every other Tuesday at 15:00, starting Tue 10 Mar 2026 (Australia/Sydney)"
        + _second("tuesday"),
    ),
    said(
        SYD,
        "twice a day",
        "2026-03-06T22:00:00Z",
        "every day at 09:00 and 17:00 (Australia/Sydney)" + TWICE,
        "DTSTART;TZID=Australia/Sydney:20260307T090000\n"
        "RRULE:FREQ=DAILY;BYHOUR=9,17;BYMINUTE=0;BYSECOND=0",
    ),
    said(SYD, "at 17h", "2026-03-07T06:00:00Z", "once, Sat 7 Mar 2026 17:00 (Australia/Sydney)"),
    said(
        SYD,
        "tomorrow 9am Europe/Berlin",  # tomorrow in Berlin, where it is still Friday
        "2026-03-07T08:00:00Z",
        "once, Sat 7 Mar 2026 09:00 (Europe/Berlin)",
    ),
    said(
        SYD,
        "at 9am AEST",
        "2026-03-06T22:00:00Z",
        "once, Sat 7 Mar 2026 09:00 (Australia/Sydney) — AEST is read as Australia/Sydney "
        "(Eastern Australia, with daylight saving)",
    ),
    said(
        SYD,
        "every fortnight on monday at 8",
        "2026-03-08T21:00:00Z",
        "every other Monday at 08:00, starting Mon 9 Mar 2026 (Australia/Sydney)",
        "DTSTART;TZID=Australia/Sydney:20260309T080000\nRRULE:FREQ=WEEKLY;INTERVAL=2;BYDAY=MO",
    ),
    # one day of a month, once (the HTTP API guide's /v1/when example); "every …" is the rule
    said(
        UTC_,
        "last friday of the month at 5pm",
        "2026-03-27T17:00:00Z",
        "once, Fri 27 Mar 2026 17:00 (UTC) — for every month, say 'every last friday of the "
        "month at 5pm'",
    ),
    said(
        BER,
        "the first monday of next month",
        "2026-04-06T07:00:00Z",
        "once, Mon 6 Apr 2026 09:00 (Europe/Berlin)"
        + DEFAULT
        + "; for every month, say 'every first monday of the month'",
    ),
    said(
        LA,
        "on the 2nd tuesday of the month at 3pm",
        "2026-03-10T22:00:00Z",
        "once, Tue 10 Mar 2026 15:00 (America/Los_Angeles) — for every month, say 'every 2nd "
        "tuesday of the month at 3pm'",
    ),
]
