"""What a preview of a time shows, before anything is saved: the reading, the zone it
was read in and where that zone came from, the next occurrences and the ones a skip
calendar skips.

Pure (no store, no clock, no network): the use case
:meth:`core.cases.schedules.ScheduleCases.preview_when` chooses the zone as
``create_schedule`` does, reads the calendars and builds a :class:`Preview` here; so
does ``herald when`` when it needs no database (a zone given with ``--tz``, or no
database yet, so no member zone). Every surface's preview is one of these.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo

if TYPE_CHECKING:
    from core import timeexpr
    from core.calendars import Blackouts


class ZoneSource(StrEnum):
    """Where the zone a time was read in came from."""

    GIVEN = "given"  # named with the request (--tz, the form's zone, ?tz=, Slack's)
    MEMBER = "member"  # the member's own (herald timezone, /schedule timezone)
    DEFAULT = "default"  # Herald's (HERALD_DEFAULT_TZ)


@dataclass(frozen=True)
class Preview:
    """How one expression reads for one person, stored nowhere.

    ``occurrences`` are the next sends (the first is the schedule's first send);
    ``skipped`` the occurrences the ``calendars`` named in the phrase skip, with the
    event's name (empty when the calendars were not read: ``calendars_read`` False)."""

    reading: timeexpr.When
    source: ZoneSource
    occurrences: list[datetime]
    skipped: list[tuple[datetime, str]] = field(default_factory=list)
    calendars: list[str] = field(default_factory=list)
    calendars_read: bool = False

    @property
    def zone(self) -> str:
        return self.reading.timezone


_TICK = timedelta(microseconds=1)


def build_preview(
    reading: timeexpr.When,
    source: ZoneSource,
    *,
    count: int,
    calendars: list[str] | None = None,
    skips: Blackouts | None = None,
) -> Preview:
    """The preview of ``reading``: its next ``count`` sends, skipping the blackouts of
    ``skips`` (the calendars' events, read in the reading's zone) as a schedule created
    from it would. InvalidInput for a rule too costly to expand."""
    skipped: list[tuple[datetime, str]] = []
    zone = ZoneInfo(reading.timezone)
    if skips is not None and reading.rule is not None:
        from core.calendars import skip_preview

        before_first = reading.first - _TICK
        upcoming, skipped = skip_preview(reading.rule, before_first, skips, count=count)
    elif skips is not None and (name := skips.hit(reading.first, zone)) is not None:
        upcoming, skipped = [], [(reading.first, name)]
    else:  # expanded once: a calendar's preview finds the sends itself
        upcoming = reading.occurrences(count=count)
    return Preview(
        reading,
        source,
        upcoming,
        skipped,
        list(calendars or []),
        calendars_read=skips is not None,
    )
