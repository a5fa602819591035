"""A schedule whose rule carries EXDATE and RDATE lines keeps them when stored, and
the dispatcher's next occurrences honour them (real SQLite and PostgreSQL, drain mode,
an injected clock)."""

from __future__ import annotations

import random

from core.cases import Herald
from core.clock import ManualClock
from core.dispatcher import Dispatcher, DispatcherConfig
from tests.support.channels import RecordingChannel

ALICE = "local:alice"


async def test_dispatcher_skips_exdates_and_sends_rdates(
    herald: Herald, clock: ManualClock
) -> None:
    # the clock starts at 2026-03-02 12:00 UTC; Berlin is UTC+1 in early March
    rule = (
        "RRULE:FREQ=DAILY;BYHOUR=9;BYMINUTE=0\n"
        "EXDATE;TZID=Europe/Berlin:20260304T090000\n"
        "RDATE;TZID=Europe/Berlin:20260304T170000"
    )
    s, _ = await herald.create_schedule(
        ALICE, to="log:", when=rule, text="standup", tz="Europe/Berlin"
    )
    stored = (await herald.show_schedule(ALICE, s.id)).schedule
    assert stored.rrule is not None
    assert "EXDATE:20260304T080000Z" in stored.rrule.splitlines()
    assert "RDATE:20260304T160000Z" in stored.rrule.splitlines()

    channel = RecordingChannel()
    dispatcher = Dispatcher(
        herald.store,
        {channel.kind: channel},
        clock=clock,
        config=DispatcherConfig(max_lateness=3600),
        rng=random.Random(7),
    )
    summary = await dispatcher.drain(retry_window=3 * 86400 - 3600)
    assert summary.outcomes["delivered"] == 3
    assert [d.occurrence_at.isoformat() for d in channel.deliveries] == [
        "2026-03-03T08:00:00+00:00",
        "2026-03-04T16:00:00+00:00",  # the RDATE, in place of the excluded 09:00
        "2026-03-05T08:00:00+00:00",
    ]
    after = (await herald.show_schedule(ALICE, s.id)).schedule
    assert after.next_run_at is not None
    assert after.next_run_at.isoformat() == "2026-03-06T08:00:00+00:00"
