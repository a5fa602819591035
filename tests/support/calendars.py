"""iCalendar test helpers shared by the calendar, Slack and Discord tests: the sample
calendars (tests/calendars/data) and a local .ics server."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path

import pytest

from core.actors import ActorRef
from core.cases import Herald
from core.models import CalendarSource, Schedule
from tests.fakes.ics import ICSServer

DATA = Path(__file__).parents[1] / "calendars" / "data"


@pytest.fixture
async def ics() -> AsyncIterator[ICSServer]:
    """A local server of .ics files with ETag and Last-Modified."""
    async with ICSServer() as server:
        yield server


def data(name: str) -> str:
    """A sample calendar's text: ``holidays.ics`` (Good Friday and Easter Monday 2026,
    Labour Day every 1 May, a Christmas break) or ``team.ics``."""
    return (DATA / name).read_text()


async def attach_skip_calendars(
    herald: Herald,
    actor_id: ActorRef,
    schedule_id: int,
    sources: Sequence[str] = (),
    files: Mapping[str, str] | None = None,
    *,
    loaded: Sequence[CalendarSource] = (),
) -> Schedule:
    """Make a schedule skip the events of these calendars (URLs, uploaded files by
    name → text, or calendars already ``loaded``), replacing any it had, as its owner
    would when creating it with them. InvalidInput for a source that cannot be read;
    NotFound if the schedule is not the actor's (refusals are audited)."""
    actor = await herald.actor(actor_id)
    schedule = await herald._changeable(actor, schedule_id, None)
    found = list(loaded) + await herald.load_calendars(actor_id, sources, files)
    ids = [c.id for c in found if c.id is not None]
    return await herald._apply_skips(schedule, found, ids, actor)
