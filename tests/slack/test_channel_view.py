"""The channel's view in Slack (issue 41), over signed HTTP against the fake Slack, on
SQLite and PostgreSQL: ``/schedule list here`` (who can see a channel, asked of Slack
by :meth:`core.channels.slack.SlackChannel.member_sees`), duplicates caught with
[Create anyway] and [Cancel], a save's warnings, ``private``, and Send now."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pytest

from bot.slack import blocks as b
from bot.slack import grammar, modal, pending
from bot.slack.pending import Pending
from core.actors import Principal
from core.cases import Herald
from core.channels import parse_destination
from core.channels.slack import MAX_MEMBER_PAGES, SlackChannel
from core.clock import ManualClock
from core.errors import InvalidInput, PermissionDenied
from core.models import Schedule
from core.store import AuditFilter
from tests.fakes.http import Scripted
from tests.fakes.slack import slack_error
from tests.fakes.slack_app import FakeSlackApp
from tests.slack.conftest import SlackEnv, slack_env
from tests.slack.support import TENANT, action_ids, filled, text_of, who
from tests.slack.test_payload_contract import valid_message, valid_view
from tests.support import extremes as x

OTHER_TENANT = "slack:T0OTHER"
ANYWAY, CANCEL = pending.ANYWAY, pending.CANCEL


def views_of(slack: FakeSlackApp) -> None:
    """A private channel with the bot in it, a guest, someone of another workspace,
    a channel of another workspace of the same org."""
    slack.add_channel("GPRIV", "private-plans", is_private=True)
    slack.add_members("GPRIV", "U1", "UADMIN")
    slack.add_user("UGUEST", name="Guest", guest=True)
    slack.add_members("C0RANDOM", "UGUEST")
    slack.add_user("UFAR", name="Far", team="T0OTHER")
    slack.add_channel("CFAR", "far-away", team="T0OTHER")


@pytest.fixture
async def env(slack: FakeSlackApp, db_url: str, clock: ManualClock) -> AsyncIterator[SlackEnv]:
    views_of(slack)
    async with slack_env(slack, db_url, clock, {}) as built:
        yield built


@pytest.fixture
async def channel(slack: FakeSlackApp) -> AsyncIterator[SlackChannel]:
    views_of(slack)
    found = SlackChannel(slack.token, base_url=slack.api_url)
    yield found
    await found.close()


async def sees(channel: SlackChannel, where: str, user: str, tenant: str = TENANT) -> bool:
    return await channel.member_sees(parse_destination(where), user, tenant=tenant)


# --- the grammar ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "command"),
    [
        ("list here", grammar.Agenda()),
        ("LIST HERE", grammar.Agenda()),
        ("list <#C0123|general>", grammar.Agenda(channel="C0123")),
        ("list in <#GPRIV>", grammar.Agenda(channel="GPRIV")),
        ("list #General", grammar.Agenda(channel_name="general")),
        ("list", grammar.Listing()),
        ("list all failed", grammar.Listing(everyone=True, state="failed")),
        ("send-now 12", grammar.Act("send-now", 12)),
        ("now #12", grammar.Act("send-now", 12)),
        ("private 12", grammar.Privacy(12, True)),
        ("Public #12", grammar.Privacy(12, False)),
    ],
)
def test_the_channel_s_commands_read(text: str, command: grammar.Command) -> None:
    assert grammar.parse(text) == command


def test_private_goes_before_a_schedule() -> None:
    made = grammar.parse("private #general every friday at 4pm: Cake")
    assert isinstance(made, grammar.Create) and made.private and made.channel_name == "general"
    both = grammar.parse("urgent private <#C0123|general> in 5 minutes: Now")
    assert isinstance(both, grammar.Create) and both.private and both.urgent
    plain = grammar.parse("<#C0123|general> in 5 minutes: private matters")
    assert isinstance(plain, grammar.Create) and not plain.private
    for text, says in [
        ("private", "Say what to schedule after `private`"),
        ("private list", "`private` goes before a message to schedule"),
        ("list here please", "takes nothing more"),
        ("privte 3", "Did you mean `private`?"),
    ]:
        with pytest.raises(InvalidInput, match=says):
            grammar.parse(text)


# --- who can see a channel: SlackChannel.member_sees ------------------------------------


async def test_a_public_channel_is_seen_by_every_member_of_its_workspace(
    channel: SlackChannel,
) -> None:
    assert await sees(channel, "slack:C0RANDOM", "U1")  # not in it, but it is public
    assert await sees(channel, "slack:C0123/1700000000.000100", "U2")  # a thread of it
    assert not await sees(channel, "slack:C0123", "UFAR")  # another workspace's person
    assert not await sees(channel, "slack:C0123", "UNOBODY")  # users.info: user_not_found
    assert not await sees(channel, "slack:C0123", "U1", tenant=OTHER_TENANT)
    assert not await sees(channel, "slack:CFAR", "U1")  # another workspace's channel
    assert not await sees(channel, "slack:@U1", "U1")  # a direct message has no viewers


async def test_an_answer_without_its_workspace_is_the_bot_token_s(
    slack: FakeSlackApp, channel: SlackChannel
) -> None:
    info = {"ok": True, "channel": {"id": "C0123", "is_channel": True, "is_private": False}}
    slack.script(Scripted(json=info), Scripted(json=info), on="conversations.info")
    assert await sees(channel, "slack:C0123", "U1")
    assert not await sees(channel, "slack:C0123", "U1", tenant=OTHER_TENANT)
    assert len(slack.calls("auth.test")) == 2


async def test_an_enterprise_grid_member_sees_the_workspaces_they_belong_to(
    slack: FakeSlackApp, channel: SlackChannel
) -> None:
    grid = "slack:E0ORG/T0HERALD"
    for user, teams in (("UIN", ["T0ELSE", "T0HERALD"]), ("UOUT", ["T0ELSE"])):
        slack.add_user(user, team="T0ELSE")
        slack.users[user]["enterprise_user"] = {"enterprise_id": "E0ORG", "teams": teams}
    assert await sees(channel, "slack:C0123", "UIN", tenant=grid)
    assert not await sees(channel, "slack:C0123", "UOUT", tenant=grid)
    assert not await sees(channel, "slack:C0123", "UIN")  # not of the org's tenant


async def test_a_guest_sees_only_the_public_channels_they_are_in(channel: SlackChannel) -> None:
    assert await sees(channel, "slack:C0RANDOM", "UGUEST")
    assert not await sees(channel, "slack:C0123", "UGUEST")


async def test_a_private_channel_is_seen_by_its_members(
    slack: FakeSlackApp, channel: SlackChannel
) -> None:
    assert await sees(channel, "slack:GPRIV", "U1")
    assert not await sees(channel, "slack:GPRIV", "U2")
    assert not any(c["channel"] == "GPRIV" for c in slack.calls("users.info"))
    with pytest.raises(InvalidInput, match="GSECRET was not found") as hidden:
        await sees(channel, "slack:GSECRET", "U1")  # the bot is not in it: Slack hides it
    assert slack.token not in str(hidden.value)


async def test_members_are_read_page_by_page_within_a_bound(
    slack: FakeSlackApp, channel: SlackChannel
) -> None:
    slack.page_size = 2
    slack.add_members("GPRIV", "U7", "U8", "U9")  # U1, UADMIN, U7 | U8, U9
    assert await sees(channel, "slack:GPRIV", "U9")
    assert len(slack.calls("conversations.members")) == 3
    cursors = [c.get("cursor") for c in slack.calls("conversations.members")]
    assert cursors == [None, "2", "4"]
    slack.page_size = 1
    slack.add_members("GPRIV", *(f"UM{i}" for i in range(MAX_MEMBER_PAGES + 5)))
    before = len(slack.calls("conversations.members"))
    with pytest.raises(InvalidInput, match="members for Herald to look through"):
        await sees(channel, "slack:GPRIV", "U2")
    assert len(slack.calls("conversations.members")) - before == MAX_MEMBER_PAGES


async def test_what_slack_cannot_answer_is_said_in_one_sentence(
    slack: FakeSlackApp, channel: SlackChannel
) -> None:
    slack.scopes = ("chat:write", "users:read", "channels:read")
    with pytest.raises(InvalidInput, match="lacks the groups:read scope") as scope:
        await sees(channel, "slack:GPRIV", "U1")
    slack.scopes = ("chat:write", "users:read", "groups:read")
    with pytest.raises(InvalidInput, match="lacks the channels:read scope"):
        await sees(channel, "slack:C0123", "U1")
    slack.script(Scripted(status=503), on="conversations.info")
    with pytest.raises(InvalidInput, match="could not ask Slack who is in channel C0123") as down:
        await sees(channel, "slack:C0123", "U1")
    for said in (scope.value, down.value):
        assert slack.token not in str(said) and str(said).count(". ") == 0
    silent = SlackChannel(None, base_url=slack.api_url)
    with pytest.raises(InvalidInput, match="SLACK_BOT_TOKEN"):
        await sees(silent, "slack:C0123", "U1")
    await silent.close()


# --- /schedule list here ------------------------------------------------------------------


async def scheduled(env: SlackEnv, text: str, *, user: str = "U1", channel: str = "C0123") -> str:
    count = len(env.slack.responses)
    await env.send.command(text, user=user, channel=channel)
    return text_of(await env.reply(count + 1))


async def answer(env: SlackEnv, text: str, **kw: Any) -> dict[str, Any]:
    count = len(env.slack.responses)
    await env.send.command(text, **kw)
    return await env.reply(count + 1)


async def test_list_here_shows_everyone_s_schedules_into_the_channel(env: SlackEnv) -> None:
    await scheduled(env, "every weekday at 9am: Stand-up in 5 minutes", user="U1")
    await scheduled(env, "private tomorrow at 10am: Cake, do not tell", user="U1")
    await scheduled(env, "me tomorrow at 8am: stretch", user="U1")  # a DM: never listed
    await env.herald.create_schedule(
        Principal("slack:UFAR", OTHER_TENANT), to="slack:C0123", when="tomorrow", text="far"
    )
    reply = await answer(env, "list here", user="U2", channel="C0123")
    valid_message((reply["text"], reply["blocks"]))
    shown = text_of(reply)
    assert reply["response_type"] == "ephemeral"
    assert "Scheduled into <#C0123>* (1)" in shown
    assert "<@U1> · every weekday at 09:00 (Europe/Berlin) · next <!date^" in shown
    assert ">Stand-up in 5 minutes" in shown
    assert "Cake" not in shown and "stretch" not in shown and "far" not in shown
    mine = text_of(await answer(env, "list here", user="U1", channel="C0123"))
    assert "(2)" in mine and "· you ·" in mine and "_private_" in mine
    own = text_of(await answer(env, "list", user="U2"))  # /schedule list: still their own
    assert "Your schedule list is empty" in own
    audits = await env.herald.store.audit_page(AuditFilter(action="view.channel"), limit=10)
    assert {a.actor for a in audits} == {"slack:U2"}


async def test_list_another_channel_asks_slack_who_can_see_it(env: SlackEnv) -> None:
    await scheduled(env, "<#GPRIV|private-plans> every monday at 10am: Plans", user="U1")
    await scheduled(env, "<#C0123|general> every monday at 10am: Hello all", user="U1")
    seen = text_of(await answer(env, "list <#GPRIV|private-plans>", user="UADMIN"))
    assert ">Plans" in seen  # a member (an admin sees it anyway)
    refused = text_of(await answer(env, "list <#GPRIV|private-plans>", user="U2"))
    assert "is not one of them" in refused and "Plans" not in refused
    by_name = text_of(await answer(env, "list #general", user="U2", channel="C0RANDOM"))
    assert ">Hello all" in by_name  # public: U2 is of the workspace
    guest = text_of(
        await answer(env, "list in <#C0123|general>", user="UGUEST", channel="C0RANDOM")
    )
    assert "is not one of them" in guest and "Hello" not in guest
    here = text_of(await answer(env, "list here", user="UGUEST", channel="C0123"))
    assert ">Hello all" in here  # typed in the channel: the signed request proves it
    dm = text_of(await answer(env, "list here", user="U1", channel="D0000001"))
    assert "A direct message has no agenda" in dm
    denied = await env.herald.store.audit_page(AuditFilter(action="view.channel.denied"), limit=10)
    assert {a.actor for a in denied} == {"slack:U2", "slack:UGUEST"}


async def test_a_long_agenda_stays_within_fifty_blocks(env: SlackEnv) -> None:
    for i in range(b.AGENDA_SHOWN + 7):
        await env.herald.create_schedule(
            who("U2"), to="slack:C0123", when=f"tomorrow at {i % 24}:{i % 60:02d}", text=f"m{i}"
        )
    reply = await answer(env, "list here", user="U1")
    valid_message((reply["text"], reply["blocks"]))
    assert len(reply["blocks"]) <= 50
    assert "… and 7 more: `herald list --to slack:C0123`" in text_of(reply)


# --- duplicates ---------------------------------------------------------------------------


def token_of(reply: dict[str, Any]) -> str:
    [value] = {
        e["value"]
        for block in reply["blocks"]
        if block["type"] == "actions"
        for e in block["elements"]
    }
    return str(value)


async def test_a_duplicate_asks_before_anything_is_saved(env: SlackEnv) -> None:
    await scheduled(env, "every weekday at 9am: Stand-up in 5 minutes", user="U1")
    await scheduled(env, "timezone Europe/Berlin", user="U2")  # Ada's zone
    asked = await answer(env, "every weekday at 9:05am: stand-up in 5 MINUTES", user="U2")
    valid_message((asked["text"], asked["blocks"]))
    shown = text_of(asked)
    assert asked["response_type"] == "ephemeral"
    assert ":warning: Ada already scheduled 'Stand-up in 5 minutes' into <#C0123>" in shown
    assert "(id 1)" in shown
    assert action_ids(asked) == [ANYWAY, CANCEL]
    assert len(await env.schedules()) == 1  # nothing saved yet
    token = token_of(asked)
    count = len(env.slack.responses)
    await env.send.click(ANYWAY, token, user="U1")  # someone else: refused, kept
    refused = await env.reply(count + 1)
    assert pending.NOT_YOURS in text_of(refused) and refused["replace_original"] is False
    assert len(await env.schedules()) == 1
    await env.send.click(ANYWAY, token, user="U2")
    created = await env.reply(count + 2)
    assert created["replace_original"] is True
    assert ":white_check_mark: Scheduled for <#C0123>" in text_of(created)
    assert "already scheduled" not in text_of(created)  # created anyway: no duplicate line
    schedules = sorted(await env.schedules(), key=lambda s: s.id or 0)
    assert [s.owner for s in schedules] == ["slack:U1", "slack:U2"]
    await env.send.click(ANYWAY, token, user="U2")  # pressed twice: gone
    assert pending.EXPIRED in text_of(await env.reply(count + 3))
    assert len(await env.schedules()) == 2


async def test_cancel_says_nothing_was_scheduled(env: SlackEnv) -> None:
    await scheduled(env, "tomorrow at 9am: Lunch!", user="U1")
    asked = await answer(env, "<#C0123|general> tomorrow at 9:03am: lunch!", user="U1")
    assert "You already scheduled 'Lunch!'" in text_of(asked)
    count = len(env.slack.responses)
    await env.send.click(CANCEL, token_of(asked), user="U2")
    assert pending.NOT_YOURS in text_of(await env.reply(count + 1))
    await env.send.click(CANCEL, token_of(asked), user="U1")
    cancelled = await env.reply(count + 2)
    assert text_of(cancelled).startswith(pending.CANCELLED) and cancelled["replace_original"]
    await env.send.click(ANYWAY, token_of(asked), user="U1")
    assert pending.EXPIRED in text_of(await env.reply(count + 3))
    assert len(await env.schedules()) == 1


async def test_a_duplicate_from_the_modal_is_asked_beside_it(env: SlackEnv) -> None:
    await scheduled(env, "timezone Europe/Berlin", user="U2")  # Ada's zone
    await scheduled(env, "every friday at 17:00: Retro", user="U2")
    count = len(env.slack.opened)
    await env.send.command("", user="U1")
    await env.slack.until(lambda: len(env.slack.opened) > count)
    view = filled(env.slack.opened[-1], channel="C0123", text="retro", when="every friday at 17:00")
    submitted = await env.send.submit(view)
    assert submitted.status == 200 and submitted.text == ""  # the modal closes
    await env.slack.until(lambda: env.slack.ephemerals)
    [asked] = env.slack.ephemerals
    valid_message((asked["text"], asked["blocks"]))
    assert (asked["channel"], asked["user"]) == ("C0123", "U1")
    assert "Grace already scheduled 'Retro'" in text_of(asked)
    assert len(await env.schedules()) == 1
    count = len(env.slack.responses)
    await env.send.click(ANYWAY, token_of(asked), user="U1")
    created = await env.reply(count + 1)
    assert ":white_check_mark: Scheduled for <#C0123>" in text_of(created)
    assert sorted((s.id, s.owner) for s in await env.schedules()) == [
        (1, "slack:U2"),
        (2, "slack:U1"),
    ]


async def test_the_question_goes_to_a_direct_message_when_the_channel_refuses(
    env: SlackEnv,
) -> None:
    await scheduled(env, "timezone Europe/Berlin", user="U2")
    await scheduled(env, "every friday at 17:00: Retro", user="U2")
    await env.send.command("", user="U1")
    await env.slack.until(lambda: env.slack.opened)
    view = filled(env.slack.opened[-1], channel="C0123", text="retro", when="every friday at 17:00")
    env.slack.script(slack_error("not_in_channel"), on="chat.postEphemeral")
    await env.send.submit(view)
    await env.slack.until(lambda: env.slack.messages)
    [asked] = env.slack.messages
    assert asked["channel"].startswith("D") and "Grace already scheduled" in text_of(asked)
    await env.send.click(
        ANYWAY, token_of(asked), user="U1", channel=asked["channel"], message=asked
    )
    assert ":white_check_mark: Scheduled" in text_of(await env.reply(3))
    assert len(await env.schedules()) == 2


def test_a_held_request_expires_and_only_so_many_are_kept() -> None:
    now = [0.0]
    held = Pending(expires=60, kept=2, clock=lambda: now[0])

    async def rerun(_: Any) -> Any:
        return None

    first = held.hold(TENANT, "U1", rerun)
    with pytest.raises(PermissionDenied):
        held.take(first, TENANT, "U2")
    with pytest.raises(PermissionDenied):
        held.take(first, OTHER_TENANT, "U1")
    now[0] = 60
    with pytest.raises(InvalidInput, match="expired"):
        held.take(first, TENANT, "U1")
    tokens = [held.hold(TENANT, "U1", rerun) for _ in range(3)]
    assert len(held) == 2 and len(set(tokens)) == 3
    with pytest.raises(InvalidInput):
        held.take(tokens[0], TENANT, "U1")  # the oldest went first
    assert held.take(tokens[2], TENANT, "U1").owner == (TENANT, "U1")


async def test_unknown_tokens_are_expired_requests(env: SlackEnv) -> None:
    await env.send.click(ANYWAY, "not-a-token", user="U1")
    assert pending.EXPIRED in text_of(await env.reply())


# --- a save's warnings --------------------------------------------------------------------


async def test_a_crowded_channel_is_said_in_the_reply(env: SlackEnv) -> None:
    for i in range(60):
        await env.herald.create_schedule(
            who("UADMIN"), to="slack:C0123", when="tomorrow at 9am", tz="Europe/Berlin", text=f"{i}"
        )
    reply = await answer(env, "tomorrow at 9am: me too", user="U1")
    valid_message((reply["text"], reply["blocks"]))
    [line] = [b for b in reply["blocks"] if "warning" in str(b) and b["type"] == "context"]
    said = line["elements"][0]["text"]
    assert said.startswith(":warning: 61 messages are due into <#C0123> at 09:00; ")
    assert "Slack sends about 1 a second there: this one ≈" in said
    assert reply["blocks"][0]["type"] == "section" and reply["blocks"][1] is line


@dataclass(frozen=True)
class Row:
    schedule: Schedule
    author: str
    when: str
    next_at: datetime | None


async def test_agendas_of_extreme_schedules_are_valid_payloads(herald: Herald) -> None:
    many = await x.extreme_schedules(herald)
    rows = [Row(s, "N<&>" * 100, "w&" * 2000, s.next_run_at) for s in many * 10]
    rows.append(Row(many[0], "slack:U1", "once", None))
    for count in (0, 1, len(many), len(rows)):
        reply = b.agenda_reply(rows[:count], "slack:C" + "9" * 20, many[0].owner)
        valid_message(reply)
        assert len(reply[1]) <= b.AGENDA_SHOWN + 2


def test_warnings_past_five_are_counted() -> None:
    class Said:
        def __init__(self, text: str) -> None:
            self.text = text

    lines = b.warning_blocks([Said(f"w{i}") for i in range(8)])
    assert len(lines) == 6 and lines[-1]["elements"][0]["text"] == ":warning: … and 3 more."
    valid_message(b.duplicate_reply([Said("x" * 5000)] * 9, "t" * 22))


# --- private ------------------------------------------------------------------------------


async def test_private_keeps_a_schedule_out_of_the_channel_s_list(env: SlackEnv) -> None:
    shown = await scheduled(env, "private <#C0123|general> every friday at 4pm: Cake")
    [schedule] = await env.schedules()
    assert schedule.private is True and "Scheduled" in shown
    assert ":lock: Private: left out of its channel's list" in shown
    nothing = text_of(await answer(env, "list here", user="U2"))
    assert "Nothing is scheduled into <#C0123>" in nothing
    assert "`private`" in grammar.HELP and grammar.PRIVATE_EXAMPLE in grammar.HELP
    public = await scheduled(env, f"public {schedule.id}")
    assert f"Schedule #{schedule.id} is in its channel's list again" in public
    assert ">Cake" in text_of(await answer(env, "list here", user="U2"))
    refused = await scheduled(env, f"private {schedule.id}", user="U2")
    assert "another member's" in refused
    hidden = await scheduled(env, f"private {schedule.id}")
    assert f":lock: Schedule #{schedule.id} is private" in hidden
    assert "Cake" not in text_of(await answer(env, "list here", user="U2"))


async def test_the_form_marks_a_new_schedule_private(env: SlackEnv) -> None:
    await env.send.command("", user="U1")
    await env.slack.until(lambda: env.slack.opened)
    opened = env.slack.opened[-1]
    valid_view(opened["view"])
    view = filled(opened, channel="C0123", text="Cake", when="every friday at 4pm")
    ticked = [{"value": modal.PRIVATE, "text": modal.PRIVATE_OPTION["text"]}]
    view["state"]["values"][modal.PRIVATE] = {
        modal.PRIVATE: {"type": "checkboxes", "selected_options": ticked}
    }
    await env.send.submit(view)
    await env.slack.until(lambda: env.slack.ephemerals)
    [schedule] = await env.schedules()
    assert schedule.private is True
    assert ":lock: Private" in text_of(env.slack.ephemerals[-1])


# --- send now -----------------------------------------------------------------------------


async def test_send_now_from_the_buttons_and_the_command(env: SlackEnv) -> None:
    await scheduled(env, "every day at 9am: Daily", user="U1")
    [daily] = await env.schedules()
    listing = await answer(env, "list", user="U1")
    assert action_ids(listing) == [
        "herald_edit",
        "herald_pause",
        "herald_send-now",
        "herald_skip",
        "herald_cancel",
    ]
    count = len(env.slack.responses)
    await env.send.click(
        "herald_send-now", str(daily.id), user="U2", block_id=f"schedule:{daily.id}"
    )
    assert "another member's" in text_of(await env.reply(count + 1))
    await env.send.click(
        "herald_send-now", str(daily.id), user="U1", block_id=f"schedule:{daily.id}"
    )
    sent = await env.reply(count + 2)
    valid_message((sent["text"], sent["blocks"]))
    assert ":outbox_tray: Sending now: schedule #1." in text_of(sent)
    assert "occurrence now; the next ones stay as planned" in text_of(sent)
    [job] = await env.herald.store.schedule_jobs(daily.id)
    assert job.due_at == env.clock.now()
    await scheduled(env, "tomorrow at 9am: Once", user="U1")
    said = await scheduled(env, "send-now 2", user="U1")
    assert ":outbox_tray: Sending now: schedule #2." in said and "sending now" in said
    await scheduled(env, "pause 1", user="U1")
    assert "Schedule 1 is paused: resume it to send it now." in await scheduled(env, "now 1")
