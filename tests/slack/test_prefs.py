"""``/schedule prefs`` (issue 37): the preferences modal opened, submitted and refused on
its fields, the tenant's defaults for admins; ``/schedule urgent …`` for admins and
operators only; a blocked author's refusal through ``/schedule``. Over signed HTTP
against the fake Slack, on SQLite (the use cases' own tests cover PostgreSQL)."""

from __future__ import annotations

from typing import Any

import pytest

from bot.slack import grammar
from core.cases import PreferenceChanges
from tests.slack.conftest import SlackEnv
from tests.slack.support import text_of, who
from tests.slack.test_payload_contract import valid_view

#: What each block's element sends back as it stands (Slack sends every input's value).
_KEYS = {
    "static_select": "selected_option",
    "radio_buttons": "selected_option",
    "multi_users_select": "selected_users",
    "timepicker": "selected_time",
    "checkboxes": "selected_options",
    "plain_text_input": "value",
}


async def open_prefs(env: SlackEnv, text: str = "prefs", user: str = "U1") -> dict[str, Any]:
    count = len(env.slack.opened)
    answer = await env.send.command(text, user=user)
    assert answer.status == 200
    await env.slack.until(lambda: len(env.slack.opened) > count)
    view: dict[str, Any] = env.slack.opened[-1]["view"]
    valid_view(view)  # slack_sdk's View model and the documented limits
    return view


def as_shown(view: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The state Slack submits for a view nobody touched: each element's initial value."""
    values: dict[str, dict[str, Any]] = {}
    for block in view["blocks"]:
        if block["type"] != "input":
            continue
        element = block["element"]
        kind = element["type"]
        initial = {
            "static_select": element.get("initial_option"),
            "radio_buttons": element.get("initial_option"),
            "multi_users_select": element.get("initial_users", []),
            "timepicker": element.get("initial_time"),
            "checkboxes": element.get("initial_options", []),
            "plain_text_input": element.get("initial_value"),
        }[kind]
        values[block["block_id"]] = {element["action_id"]: {"type": kind, _KEYS[kind]: initial}}
    return values


def submitted(view: dict[str, Any], **changed: Any) -> dict[str, Any]:
    """``view`` as submitted, with ``changed`` fields (by block id) set: a select or radio
    by its value, checkboxes by their values, users and times as Slack sends them."""
    values = as_shown(view)
    for block_id, value in changed.items():
        [(action, current)] = values[block_id].items()
        kind = current["type"]
        if kind in ("static_select", "radio_buttons"):
            value = {"value": value} if value else None
        elif kind == "checkboxes":
            value = [{"value": v} for v in value]
        values[block_id][action] = {"type": kind, _KEYS[kind]: value}
    return {**view, "id": "VPREFS", "state": {"values": values}}


def block(view: dict[str, Any], block_id: str) -> dict[str, Any]:
    return next(b for b in view["blocks"] if b.get("block_id") == block_id)


async def test_prefs_opens_a_valid_modal_showing_what_applies(env: SlackEnv) -> None:
    await env.herald.set_timezone(who("U1"), "Europe/Berlin")
    view = await open_prefs(env)
    assert view["callback_id"] == "herald_prefs" and view["type"] == "modal"
    ids = [b.get("block_id") for b in view["blocks"] if b["type"] == "input"]
    assert ids == [
        "place",
        "address",
        "accept",
        "blocked",
        "quiet_start",
        "quiet_end",
        "quiet_days",
    ]
    place = block(view, "place")["element"]
    # no email, SMS or push configured in these tests: only where sent and a DM
    assert [o["value"] for o in place["options"]] == ["where", "dm"]
    assert place["initial_option"]["value"] == "where"
    assert block(view, "accept")["element"]["initial_option"]["value"] == "anyone"
    assert block(view, "quiet_start")["element"]["type"] == "timepicker"
    assert "Read in Europe/Berlin." in block(view, "quiet_start")["hint"]["text"]


async def test_a_valid_submission_saves_and_shows_them_in_words(env: SlackEnv) -> None:
    view = await open_prefs(env)
    hint = block(view, "quiet_start")["hint"]["text"]  # Herald's zone of Ada is not Slack's
    assert "Read in UTC, not your Slack profile's Europe/Berlin: /schedule timezone" in hint
    answer = await env.send.submit(
        submitted(
            view,
            place="dm",
            accept="admins",
            blocked=["U2"],
            quiet_start="22:00",
            quiet_end="08:00",
            quiet_days=["sat", "sun"],
        )
    )
    assert answer.status == 200
    data = answer.json()
    assert data["response_action"] == "update"
    valid_view(data["view"])
    words = "\n".join(b["text"]["text"] for b in data["view"]["blocks"])
    assert "Reminders to you go to: your direct messages" in words
    assert "Who may remind you: only admins" in words
    assert "Blocked: <@U2>" in words
    assert "Quiet hours: 22:00–08:00 and weekends (UTC)" in words  # Herald's zone of Ada
    mine = await env.herald.preferences(who("U1"))
    assert mine.own.place == "slack:@U1" and mine.own.accept_from == "admins"
    assert mine.own.blocked == ("slack:U2",)
    assert mine.own.quiet is not None and mine.own.quiet.describe() == "22:00–08:00 and weekends"
    # opened again: it shows what was saved, and a user taken off the list is unblocked
    again = await open_prefs(env)
    assert block(again, "blocked")["element"]["initial_users"] == ["U2"]
    assert block(again, "quiet_start")["element"]["initial_time"] == "22:00"
    answer = await env.send.submit(submitted(again, blocked=[], quiet_start=None, quiet_end=None))
    assert answer.json()["response_action"] == "update"
    mine = await env.herald.preferences(who("U1"))
    assert mine.own.blocked == () and mine.own.quiet is not None
    assert mine.own.quiet.describe() == "weekends"


@pytest.mark.parametrize(
    ("fields", "where", "sentence"),
    [
        ({"quiet_start": "22:00"}, "quiet_end", "Give both the start and the end"),
        ({"quiet_start": "08:00", "quiet_end": "08:00"}, "quiet_end", "same time"),
        ({"blocked": ["U1"]}, "blocked", "Nobody can block themselves"),
    ],
)
async def test_a_refusal_is_shown_on_its_field_and_nothing_is_saved(
    env: SlackEnv, fields: dict[str, Any], where: str, sentence: str
) -> None:
    view = await open_prefs(env)
    answer = await env.send.submit(submitted(view, accept="self", **fields))
    data = answer.json()
    assert data["response_action"] == "errors"
    assert list(data["errors"]) == [where] and sentence in data["errors"][where]
    assert data["errors"][where].count(".") <= 2  # one sentence (a time has no dot)
    mine = await env.herald.preferences(who("U1"))
    assert mine.own.accept_from is None  # nothing changed, not even the valid field


@pytest.mark.parametrize("slack_extra", [{"HERALD_SMTP_HOST": "127.0.0.1"}], indirect=True)
async def test_email_needs_an_address_and_a_bad_one_gets_cores_sentence(
    env: SlackEnv,
) -> None:
    """Email is offered once a provider is configured (nothing is sent here)."""
    view = await open_prefs(env)
    assert "email" in [o["value"] for o in block(view, "place")["element"]["options"]]
    data = (await env.send.submit(submitted(view, place="email"))).json()
    assert data["errors"] == {"address": "Type the email address reminders should go to."}
    data = (await env.send.submit(submitted(view, place="email", address="not-an-address"))).json()
    assert (
        list(data["errors"]) == ["address"] and "not an email address" in data["errors"]["address"]
    )
    data = (await env.send.submit(submitted(view, place="email", address="ada@example.com"))).json()
    assert data["response_action"] == "update"
    assert (await env.herald.preferences(who("U1"))).own.place == "email:ada@example.com"


async def test_an_untouched_field_keeps_following_the_tenants_default(env: SlackEnv) -> None:
    await env.herald.set_tenant_preferences(
        who("UADMIN"), PreferenceChanges(accept_from="admins", quiet="22:00-07:00")
    )
    view = await open_prefs(env)
    assert block(view, "accept")["element"]["initial_option"]["value"] == "admins"
    assert block(view, "quiet_end")["element"]["initial_time"] == "07:00"
    answer = await env.send.submit(submitted(view, place="dm"))
    words = "\n".join(b["text"]["text"] for b in answer.json()["view"]["blocks"])
    assert "Who may remind you: only admins (the workspace's default)" in words
    mine = await env.herald.preferences(who("U1"))
    assert mine.own.accept_from is None and mine.own.quiet is None
    assert mine.own.place == "slack:@U1"


async def test_the_tenants_defaults_are_for_admins(env: SlackEnv) -> None:
    await env.send.command("prefs tenant", user="U1")
    reply = await env.reply()
    assert "Only an admin can see or change the tenant's default preferences." in text_of(reply)
    view = await open_prefs(env, "prefs tenant", user="UADMIN")
    assert "place" not in {b.get("block_id") for b in view["blocks"]}
    answer = await env.send.submit(
        submitted(view, accept="admins", hold=["hold"], quiet_days=["sun"]), user="UADMIN"
    )
    data = answer.json()
    assert data["response_action"] == "update"
    valid_view(data["view"])
    tenant = await env.herald.tenant_preferences(who("UADMIN"))
    assert tenant.accept_from == "admins" and tenant.hold_channels is True
    assert tenant.quiet is not None and tenant.quiet.describe() == "sun"


async def test_urgent_is_for_admins_and_operators(env: SlackEnv) -> None:
    await env.send.command("urgent <#C0123|general> in 5 minutes: the database is down")
    reply = await env.reply()
    assert "Only admins and operators can send urgent messages" in text_of(reply)
    assert await env.schedules() == []
    await env.send.command(
        "urgent <#C0123|general> in 5 minutes: the database is down", user="UADMIN"
    )
    reply = await env.reply(2)
    [schedule] = await env.schedules()
    assert schedule.priority == "urgent"
    assert "Priority: *urgent*" in text_of(reply)


async def test_a_blocked_author_is_refused_through_schedule(env: SlackEnv) -> None:
    await env.send.command("me in 5 minutes: hello")  # Ada is a member of the tenant
    await env.reply()
    await env.herald.set_preferences(who("U2"), PreferenceChanges(block=("slack:U1",)))
    await env.send.command("<@U2|grace> in 5 minutes: the deck")
    reply = await env.reply(2)
    assert "does not accept reminders from you" in text_of(reply)
    assert [s.destination for s in await env.schedules()] == ["slack:@U1"]


def test_the_grammar_reads_prefs_and_urgent() -> None:
    assert grammar.parse("prefs") == grammar.Prefs()
    assert grammar.parse("PREFS tenant") == grammar.Prefs(tenant=True)
    made = grammar.parse("urgent <#C0123|general> in 5 minutes: down")
    assert isinstance(made, grammar.Create) and made.urgent and made.channel == "C0123"
    assert grammar.parse("urgent me in 5 minutes: stretch").urgent  # type: ignore[union-attr]
    for text, said in (
        ("urgent", "Say what is urgent"),
        ("urgent list", "`urgent` goes before a message"),
        ("prefs everyone", "`/schedule prefs` takes nothing"),
    ):
        with pytest.raises(grammar.Refusal, match=said):
            grammar.parse(text)


def test_the_largest_modals_are_still_valid_block_kit() -> None:
    """A full block list (200 members, the most core keeps), the longest address, every
    quiet day; the tenant's modal; the saved summary: all valid for slack_sdk's models
    and within the documented limits no model checks."""
    from bot.slack.prefs import prefs_modal, saved_view, tenant_modal
    from core.cases import MemberPreferences
    from core.preferences import MAX_BLOCKED, Preferences, QuietHours

    blocked = tuple(f"slack:U{n:010d}" for n in range(MAX_BLOCKED))
    quiet = QuietHours.parse("22:00-08:00", ["mon", "tue", "wed", "thu", "fri", "sat", "sun"])
    own = Preferences(
        place="email:" + "a" * 64 + "@" + "b" * 180 + ".example",
        accept_from="self",
        blocked=blocked,
        quiet=quiet,
    )
    tenant = Preferences(accept_from="admins", blocked=blocked, quiet=quiet, hold_channels=True)
    member = MemberPreferences("slack:U1", "America/Argentina/ComodRivadavia", own, tenant, own)
    view = prefs_modal(member, "U1", ("email", "sms", "push"))
    valid_view(view)
    assert len(view["private_metadata"]) <= 3000
    valid_view(tenant_modal(tenant))
    valid_view(saved_view("Your preferences", ["x" * 400] * 6))


def test_the_help_says_prefs_and_urgent_in_whole_sections() -> None:
    """The help outgrew one section (3,000 characters): it is cut between lines, never
    inside one, and nothing is lost."""
    from bot.slack.blocks import long_notice
    from tests.slack.test_payload_contract import valid_message

    reply = long_notice(grammar.HELP)
    valid_message(reply)
    texts = [b["text"]["text"] for b in reply[1]]
    assert "\n".join(texts) == grammar.HELP
    assert "`/schedule prefs`" in grammar.HELP and "`/schedule prefs tenant`" in grammar.HELP
    assert grammar.URGENT_EXAMPLE in grammar.HELP


async def test_the_read_back_says_when_quiet_hours_hold_a_reminder(env: SlackEnv) -> None:
    await env.send.command("me in 5 minutes: hello", user="U2")  # Grace is a member
    await env.reply()
    await env.herald.set_preferences(who("U2"), PreferenceChanges(quiet="00:00-23:59"))
    await env.send.command("<@U2|grace> in 5 minutes: the deck")
    reply = text_of(await env.reply(2))
    assert "quiet hours" in reply and "23:59" in reply
