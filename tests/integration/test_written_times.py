"""Issue 33, "times people write", saved through the use cases on SQLite and PostgreSQL:
a one-off without a time takes the configured default time and its confirmation says
so; a zone ending the phrase is the rule's zone; a time in the past changes nothing.

Now is Monday 2026-03-02 12:00 UTC (13:00 in Berlin, CET; Los Angeles changes to PDT on
Sunday 8 March).
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from core import views
from core.cases import Herald
from core.clock import ManualClock
from core.errors import InvalidInput
from core.settings import Settings, load_settings
from core.store import Store
from tests.conftest import START

MEMBER = "local:berliner"


@pytest.fixture
def settings(db_url: str) -> Settings:
    return load_settings(
        HERALD_DATABASE_URL=db_url,
        HERALD_DEFAULT_TZ="UTC",
        HERALD_DEFAULT_TIME="07:45",  # not 09:00: the setting is what a one-off takes
        _env_file=None,
    )


@pytest.fixture
async def berlin(store: Store, settings: Settings) -> Herald:
    herald = Herald(store, settings, ManualClock(START))
    await herald.set_timezone(MEMBER, "Europe/Berlin")
    return herald


async def test_a_day_without_a_time_takes_the_default_time_and_says_so(berlin: Herald) -> None:
    saved, created = await berlin.create_schedule(MEMBER, to="log:", when="tomorrow", text="x")
    assert created and saved.rrule is None
    assert saved.starts_at == datetime(2026, 3, 3, 6, 45, tzinfo=UTC)  # 07:45 CET
    assert views.read_back(saved) == (
        "once, Tue 3 Mar 2026 07:45 (Europe/Berlin) — add 'at …' to change it"
    )
    given, _ = await berlin.create_schedule(MEMBER, to="log:", when="jan 4 at 10", text="y")
    assert views.read_back(given) == "once, Mon 4 Jan 2027 10:00 (Europe/Berlin)"


async def test_a_zone_at_the_end_of_the_phrase_is_the_rules_zone(berlin: Herald) -> None:
    saved, _ = await berlin.create_schedule(
        MEMBER, to="log:", when="every sunday at 6pm PST", text="x"
    )
    assert saved.rrule is not None
    assert saved.rrule.startswith("DTSTART;TZID=America/Los_Angeles:20260308T180000\n")
    assert saved.next_run_at == datetime(2026, 3, 9, 1, 0, tzinfo=UTC)  # 18:00 PDT
    assert views.read_back(saved) == (
        "every Sunday at 18:00 (America/Los_Angeles) — PST is read as America/Los_Angeles "
        "(US Pacific time, with daylight saving)"
    )
    assert saved.timezone == "America/Los_Angeles"  # the schedule's zone too, not the member's
    once, _ = await berlin.create_schedule(
        MEMBER, to="log:", when="tomorrow 9am America/New_York", text="z"
    )
    assert (once.timezone, once.starts_at) == (
        "America/New_York",
        datetime(2026, 3, 3, 14, 0, tzinfo=UTC),  # 09:00 EST
    )
    assert views.read_back(once).startswith("once, Tue 3 Mar 2026 09:00 (America/New_York)")
    night, _ = await berlin.create_schedule(MEMBER, to="log:", when="every night", text="y")
    assert views.read_back(night) == (
        "every day at 20:00 (Europe/Berlin) — 'night' is 20:00; add 'at …' to change it"
    )


async def test_a_time_in_the_past_says_so_and_saves_nothing(berlin: Herald) -> None:
    with pytest.raises(InvalidInput, match="that is in the past"):
        await berlin.create_schedule(MEMBER, to="log:", when="yesterday at 9", text="x")
    assert await berlin.list_schedules(MEMBER) == []
