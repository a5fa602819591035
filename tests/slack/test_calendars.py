"""Calendars from Slack: ``… except holidays from URL`` in /schedule and the form's
"Skip dates from calendars" field, and event feeds for admins (``/schedule feed``);
signed requests against the fake Slack, calendars from a local .ics server."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from core.models import JobState
from tests.fakes.ics import ICSServer
from tests.slack.conftest import SlackEnv
from tests.slack.support import filled, text_of
from tests.slack.test_modal import block, open_modal
from tests.support.calendars import data
from tests.support.store import audit_trail


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)


async def skipped_jobs(env: SlackEnv, schedule_id: int) -> list[tuple[datetime, str | None]]:
    jobs = await env.herald.store.schedule_jobs(schedule_id)
    return sorted((j.occurrence_at, j.last_error) for j in jobs if j.state == JobState.SKIPPED)


# --- /schedule … except holidays from URL ----------------------------------------------


async def test_except_holidays_from_a_link_skips_them_and_says_which(
    env: SlackEnv, ics: ICSServer
) -> None:
    url = ics.publish("/holidays.ics", data("holidays.ics"))
    # Slack sends a URL in command text as a link: <https://…> (or <https://…|label>)
    await env.send.command(f"every weekday at 9am except holidays from <{url}>: Standup")
    shown = text_of(await env.reply())
    assert ":white_check_mark: Scheduled" in shown
    assert "every weekday at 09:00 (Europe/Berlin)" in shown
    assert "Skips the event dates of 1 calendar; next skipped: " in shown
    assert "(Good Friday)" in shown and "(Easter Monday)" in shown and "(Labour Day)" in shown
    assert f"<!date^{int(utc(2026, 4, 3, 7).timestamp())}^" in shown  # 09:00 in Berlin

    [schedule] = await env.schedules()
    assert schedule.expression == "every weekday at 9am" and schedule.body == "Standup"
    assert (await skipped_jobs(env, schedule.id))[:2] == [
        (utc(2026, 4, 3, 7), "Skipped: Good Friday"),
        (utc(2026, 4, 6, 7), "Skipped: Easter Monday"),
    ]
    await env.send.command(f"show {schedule.id}")
    assert "(Good Friday)" in text_of(await env.reply(2))


async def test_a_calendar_that_cannot_be_read_schedules_nothing(
    env: SlackEnv, ics: ICSServer
) -> None:
    await env.send.command(f"every weekday at 9am except holidays from <{ics.url}/gone.ics>: x")
    shown = text_of(await env.reply())
    assert ":warning:" in shown and "gone.ics answered HTTP 404" in shown
    await env.send.command("every weekday at 9am except holidays: x")
    shown = text_of(await env.reply(2))
    assert "needs the calendar to read the dates from" in shown
    assert "except holidays from https://" in shown  # an example that works
    assert await env.schedules() == []


# --- the form ---------------------------------------------------------------------------


async def test_the_form_skips_the_calendars_of_its_field(env: SlackEnv, ics: ICSServer) -> None:
    url = ics.publish("/holidays.ics", data("holidays.ics"))
    opened = await open_modal(env)
    field = block(opened["view"], "skip")
    assert field["optional"] and field["label"]["text"] == "Skip dates from calendars"
    answer = await env.send.submit(
        filled(opened, text="Standup", when="every weekday at 9am", skip=f"{url}\n")
    )
    assert answer.status == 200 and answer.text == ""  # the modal closes
    await env.slack.until(lambda: env.slack.ephemerals)
    shown = text_of(env.slack.ephemerals[0])
    assert "Skips the event dates of 1 calendar" in shown and "(Good Friday)" in shown
    [schedule] = await env.schedules()
    assert (utc(2026, 4, 3, 7), "Skipped: Good Friday") in await skipped_jobs(env, schedule.id)


async def test_a_bad_calendar_in_the_form_is_shown_on_its_field(
    env: SlackEnv, ics: ICSServer
) -> None:
    opened = await open_modal(env)

    async def errors(**fields: Any) -> dict[str, str]:
        answer = await env.send.submit(filled(opened, text="x", **fields))
        data = answer.json()
        assert data["response_action"] == "errors"
        return dict(data["errors"])

    found = await errors(when="every weekday at 9am", skip=f"{ics.url}/gone.ics")
    assert list(found) == ["skip"] and "answered HTTP 404" in found["skip"]
    found = await errors(when="every weekday at 9am", skip="holidays.ics")
    assert "'holidays.ics' is not a calendar URL" in found["skip"]
    found = await errors(when=f"every weekday at 9am except holidays from {ics.url}/gone.ics")
    assert list(found) == ["when"] and "answered HTTP 404" in found["when"]
    found = await errors(when="every weekday at 9am except holidays")
    assert "needs the calendar" in found["when"]
    assert await env.schedules() == []
    assert env.slack.ephemerals == []


async def test_the_preview_reads_the_phrase(env: SlackEnv) -> None:
    opened = await open_modal(env)
    when = "every weekday at 9am except holidays from https://example.org/h.ics"
    await env.send.preview({**filled(opened, text="hi", when=when), "id": "V9"})
    await env.slack.until(lambda: env.slack.updated)
    preview = text_of({"blocks": [block(env.slack.updated[0]["view"], "preview")]})
    assert "every weekday at 09:00 (Europe/Berlin)" in preview
    assert "Skips the event dates of https://example.org/h.ics" in preview


async def test_a_schedule_being_edited_cannot_take_a_calendar(env: SlackEnv) -> None:
    await env.send.command("every day at 9: daily")
    await env.reply()
    opened = await open_modal(env, "edit 1")
    assert "skip" not in {b.get("block_id") for b in opened["view"]["blocks"]}
    when = "every day at 10 except holidays from https://example.org/h.ics"
    answer = await env.send.submit(filled(opened, text="daily", when=when))
    assert "only when you create a schedule" in answer.json()["errors"]["when"]


# --- /schedule feed -----------------------------------------------------------------------


async def test_an_admin_subscribes_this_channel_to_a_feed(env: SlackEnv, ics: ICSServer) -> None:
    url = ics.publish("/team.ics", data("team.ics"))
    await env.send.command(
        f"feed add <{url}|example/team.ics> before 10m: {{event.summary}} in 10 minutes",
        user="UADMIN",
        channel="C0123",
    )
    shown = text_of(await env.reply())
    assert ":white_check_mark: Feed #1: a reminder 10 minutes before each event" in shown
    assert "<#C0123>" in shown
    reminders = [s for s in await env.schedules() if s.expression == "feed 1 reminder"]
    assert {s.destination for s in reminders} == {"slack:C0123"}
    assert {s.owner for s in reminders} == {"slack:UADMIN"}
    first = min(reminders, key=lambda s: s.starts_at)
    assert first.body == "Team stand-up in 10 minutes"
    assert first.starts_at == utc(2026, 3, 2, 14, 20)  # 09:30 in New York, less 10 minutes

    await env.send.command("feed list", user="UADMIN")
    assert "#1* · 10 minutes before each event of calendar 1 · <#C0123>" in text_of(
        await env.reply(2)
    )
    await env.send.command("feed remove 1", user="UADMIN")
    assert f"Feed #1 removed; {len(reminders)} waiting reminders cancelled" in text_of(
        await env.reply(3)
    )
    assert [s.state for s in await env.schedules(state="active")] == []


async def test_a_feed_can_post_into_another_channel(env: SlackEnv, ics: ICSServer) -> None:
    url = ics.publish("/team.ics", data("team.ics"))
    await env.send.command(
        f"feed add {url} before 1h to <#C0RANDOM|random>", user="UADMIN", channel="C0123"
    )
    assert "a reminder 1 hour before each event" in text_of(await env.reply())
    destinations = {s.destination for s in await env.schedules()}
    assert destinations == {"slack:C0RANDOM"}


async def test_only_admins_may_add_or_remove_feeds(env: SlackEnv, ics: ICSServer) -> None:
    url = ics.publish("/team.ics", data("team.ics"))
    await env.send.command(f"feed add <{url}> before 10m", user="U1")
    assert ":warning: Only an admin can subscribe to event feeds." in text_of(await env.reply())
    assert await env.schedules() == [] and await env.herald.list_feeds("slack:UADMIN") == []

    await env.send.command(f"feed add <{url}>", user="UADMIN")
    await env.reply(2)
    await env.send.command("feed remove 1", user="U1")
    assert "There is no feed 1 of yours." in text_of(await env.reply(3))
    assert len(await env.herald.list_feeds("slack:UADMIN")) == 1
    refused = [
        (a.actor, a.action)
        for kind, key in (("feed", ""), ("feed", "1"))
        for a in await audit_trail(env.herald.store, kind, key)
        if a.action.endswith(".denied")
    ]
    assert refused == [("slack:U1", "feed.add.denied"), ("slack:U1", "feed.remove.denied")]


async def test_a_feed_command_that_cannot_be_read_says_how(env: SlackEnv) -> None:
    await env.send.command("feed add before 10m", user="UADMIN")
    shown = text_of(await env.reply())
    assert "Say which calendar" in shown and "/schedule feed add https://" in shown
    await env.send.command("feed add https://example.org/a.ics before soon", user="UADMIN")
    assert "is not a lead time" in text_of(await env.reply(2))
