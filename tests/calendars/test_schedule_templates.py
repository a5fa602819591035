"""Variables in an ordinary schedule's text: checked when saved, filled in per occurrence."""

from __future__ import annotations

from datetime import timedelta

import pytest

from core.cases import Herald
from core.clock import ManualClock
from core.dispatcher import Dispatcher, DispatcherConfig
from core.errors import InvalidInput
from tests.support.channels import RecordingChannel

ALICE = "local:alice"


def dispatcher(herald: Herald, channel: RecordingChannel) -> Dispatcher:
    return Dispatcher(herald.store, {"log": channel}, clock=herald.clock, config=DispatcherConfig())


async def test_date_and_id_are_filled_in_for_each_occurrence_in_the_schedules_zone(
    herald: Herald, clock: ManualClock
) -> None:
    # 00:30 in Berlin is still the day before in UTC: {date} is the Berlin date
    s, _ = await herald.create_schedule(
        ALICE,
        to="log:",
        when="every day at 00:30",
        tz="Europe/Berlin",
        text="Report for {date:%A %d %B} ({date}), schedule #{schedule.id}",
    )
    channel = RecordingChannel()
    d = dispatcher(herald, channel)
    clock.advance(timedelta(hours=11, minutes=30))  # 2026-03-02 23:30 UTC
    await d.drain()
    clock.advance(timedelta(days=1))
    await d.drain()

    bodies = [x.body for x in channel.deliveries]
    assert bodies == [
        f"Report for Tuesday 03 March (2026-03-03), schedule #{s.id}",
        f"Report for Wednesday 04 March (2026-03-04), schedule #{s.id}",
    ]
    detail = await herald.show_schedule(ALICE, s.id)
    assert detail.schedule.body.startswith("Report for {date:%A %d %B}")  # stored as written


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("Agenda: {event.summary}", "{event.summary}"),
        ("Deploy {service} now", "{service}"),
        ("Today is {date.year}", "{date.year}"),
    ],
)
async def test_an_unknown_variable_is_refused_when_saved_and_nothing_is_created(
    herald: Herald, text: str, shown: str
) -> None:
    with pytest.raises(InvalidInput) as refused:
        await herald.create_schedule(ALICE, to="log:", when="in 5 minutes", text=text)
    message = str(refused.value)
    assert shown in message and "{date}, {schedule.id}" in message and "{{" in message
    assert await herald.list_schedules(ALICE) == []


async def test_other_braces_are_plain_text(herald: Herald, clock: ManualClock) -> None:
    texts = ['payload {"ok": true}', "empty { } and escaped {{date}}", "a } b {"]
    for text in texts:
        await herald.create_schedule(ALICE, to="log:", when="in 5 minutes", text=text)
    channel = RecordingChannel()
    clock.advance(timedelta(minutes=5))
    await dispatcher(herald, channel).drain()
    assert sorted(x.body for x in channel.deliveries) == sorted(texts)


async def test_editing_the_text_turns_variables_on_and_off(
    herald: Herald, clock: ManualClock
) -> None:
    s, _ = await herald.create_schedule(ALICE, to="log:", when="every day at 13:00", text="plain")
    s = await herald.edit_schedule(ALICE, s.id, text="Day {date:%d}")
    with pytest.raises(InvalidInput, match="does not know"):
        await herald.edit_schedule(ALICE, s.id, text="Day {day}")
    channel = RecordingChannel()
    d = dispatcher(herald, channel)
    clock.advance(timedelta(hours=1))
    await d.drain()
    await herald.edit_schedule(ALICE, s.id, text="back to {plain}}}".replace("{plain}", "plain"))
    clock.advance(timedelta(days=1))
    await d.drain()
    assert [x.body for x in channel.deliveries] == ["Day 02", "back to plain}}"]
