"""Lists that show what matters (issue 33): ``herald list`` says each schedule's rule or
time in words and how many it left out at its limit, its lines and ``herald dead
list``'s fit 100 columns, and a webhook's owner and the admins see its host, port and
path (its secrets still hidden). The CLI's own functions, on SQLite and PostgreSQL."""

from __future__ import annotations

import io
import json
import random
from datetime import timedelta

import pytest

from bot.cli.commands import Cli
from bot.cli.main import COMMANDS, handler
from bot.cli.parser import build_parser
from core.actors import Principal, Surface
from core.cases import Herald
from core.channels import parse_destination
from core.clock import ManualClock
from core.dispatcher import Dispatcher, DispatcherConfig
from core.settings import Settings
from core.store import AttemptFilter, AttemptRecord, Verdict
from tests.support.channels import RecordingChannel

ADMIN = "local:root-admin"  # HERALD_ADMINS in the settings fixture
MEMBER = "local:bob"
OPERATOR = "local:olive"
HOOK = "webhook:http://127.0.0.1:8080/deploy?token=s3cret-t0ken"
OTHER_HOOK = "webhook:http://127.0.0.1:9090/alerts"


async def cli(herald: Herald, settings: Settings, *argv: str, actor: str = MEMBER) -> str:
    """What ``herald <argv>`` prints, run as ``actor`` through the CLI's own command."""
    args = build_parser().parse_args(list(argv))
    out = io.StringIO()
    command = Cli(args, settings, out)
    command.actor = Principal(actor, surface=Surface.CLI)
    await handler(COMMANDS[args.command]).action.with_herald(command, herald)  # type: ignore[attr-defined]
    return out.getvalue()


async def test_list_says_each_schedules_time_in_words(herald: Herald, settings: Settings) -> None:
    """A weekday standup and a one-off tea no longer look alike: a WHEN column."""
    standup, _ = await herald.create_schedule(
        MEMBER, to="log:", when="every weekday at 9am", text="Standup", tz="Europe/Berlin"
    )
    tea, _ = await herald.create_schedule(
        MEMBER, to="log:", when="tomorrow at 4pm", text="Tea", tz="UTC"
    )
    lines = (await cli(herald, settings, "list")).splitlines()
    assert lines[0].split()[:3] == ["ID", "STATE", "WHEN"]
    [standup_line] = [line for line in lines if line.startswith(f"{standup.id} ")]
    [tea_line] = [line for line in lines if line.startswith(f"{tea.id} ")]
    assert "every weekday at 09:00" in standup_line
    assert "Europe/Berlin" in standup_line  # the next run in the schedule's own zone
    assert tea_line.split()[2] == "once" and "16:00 UTC" in tea_line


async def test_list_says_how_many_it_left_out(
    herald: Herald, settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    """A list cut at its limit says so, counting what its filters match (it stopped
    silently at 200 rows)."""
    for i in range(12):
        text = f"{'Deploy' if i % 2 else 'Lunch'} {i}"
        await herald.create_schedule(MEMBER, to="log:", when=f"in {i + 1} hours", text=text)
    await herald.create_schedule(OPERATOR, to="log:", when="in 3 hours", text="Deploy x")
    lines = (await cli(herald, settings, "list", "--limit", "5")).splitlines()
    assert len(lines) == 1 + 5 + 1
    assert lines[-1] == "5 of 12 shown; use --limit 12 to see them all."
    searched = await cli(herald, settings, "list", "--limit", "5", "--search", "deploy")
    assert searched.splitlines()[-1] == "5 of 6 shown; use --limit 6 to see them all."
    everyone = await cli(herald, settings, "list", "--all", "--limit", "5", actor=ADMIN)
    assert everyone.splitlines()[-1] == "5 of 13 shown; use --limit 13 to see them all."
    whole = (await cli(herald, settings, "list", "--limit", "12")).splitlines()
    assert len(whole) == 1 + 12 and "shown" not in whole[-1]
    capsys.readouterr()
    data = json.loads(await cli(herald, settings, "list", "--limit", "5", "--json"))
    assert len(data) == 5  # the JSON stays JSON: the count goes to stderr
    assert capsys.readouterr().err == "5 of 12 shown; use --limit 12 to see them all.\n"


async def test_list_lines_fit_100_columns(herald: Herald, settings: Settings) -> None:
    long_text = "Quarterly planning: bring the roadmap, the numbers and your questions " * 3
    s, _ = await herald.create_schedule(
        MEMBER,
        to="webhook:https://hooks.example.com/services/quarterly/planning/channel/announcements",
        when="every 2nd tuesday of the month at 3pm",
        text=long_text,
        tz="America/Los_Angeles",
    )
    await herald.create_schedule(MEMBER, to="log:", when="in 2 hours", text="short")
    lines = (await cli(herald, settings, "list")).splitlines()
    assert max(len(line) for line in lines) <= 100, lines
    [row] = [line for line in lines if line.startswith(f"{s.id} ")]
    assert "every second Tuesday" in row
    assert row.endswith("…")  # the text, cut
    assert "2026-03-10 15:00" in row and "webhook:https://hooks.example" in row


async def test_dead_list_fits_100_columns(
    herald: Herald, settings: Settings, clock: ManualClock
) -> None:
    """``herald dead list`` printed 187-character lines."""
    error = (
        "Could not reach webhook:https://hooks.example.com/…: connection refused by "
        "hooks.example.com:443; the receiver has been down since the morning and its "
        "owner was told twice already."
    )
    await herald.create_schedule(
        MEMBER,
        to="webhook:https://hooks.example.com/very/long/path/to/the/receiver/of/alerts",
        when="in 1 minute",
        text="Alert",
    )
    clock.advance(61)
    now = clock.now()
    jobs = await herald.store.claim_due(
        now=now, worker="w1", lease_until=now + timedelta(seconds=60), limit=10
    )
    attempt = AttemptRecord(now, now, "permanent", None, error)
    await herald.store.finish(
        [Verdict(job, "dead", attempt=attempt, error=error) for job in jobs], worker="w1", now=now
    )
    lines = (await cli(herald, settings, "dead", "list")).splitlines()
    assert len(lines) == 2
    assert max(len(line) for line in lines) <= 100, lines
    assert "Could not reach" in lines[1] and lines[1].endswith("…")


async def test_owner_and_admins_see_a_webhooks_host_port_and_path(
    herald: Herald, settings: Settings
) -> None:
    """Four hooks looked alike (``webhook:http://127.0.0.1/…``); the owner and the
    admins now see which is which, and no one sees the token in its query."""
    await herald.set_role(ADMIN, OPERATOR, "operator")
    await herald.create_schedule(MEMBER, to=HOOK, when="in 1 hour", text="Deploy")
    await herald.create_schedule(MEMBER, to=OTHER_HOOK, when="in 2 hours", text="Alerts")
    own = await cli(herald, settings, "list")
    admin = await cli(herald, settings, "list", "--all", actor=ADMIN)
    for shown in (own, admin):
        assert "webhook:http://127.0.0.1:8080/deploy?…" in shown
        assert "webhook:http://127.0.0.1:9090/alerts" in shown
        assert "s3cret-t0ken" not in shown
    operator = await cli(herald, settings, "list", "--all", actor=OPERATOR)
    assert operator.count("webhook:http://127.0.0.1/…") == 2  # not theirs: as before
    assert "s3cret-t0ken" not in operator and "deploy" not in operator


@pytest.mark.parametrize(
    ("uri", "owner_sees"),
    [
        (HOOK, "webhook:http://127.0.0.1:8080/deploy?…"),
        (
            "webhook:https://hooks.slack.com/services/T0123ABCD/B0123EFGH/abcdefghijklmnopqrstuvwx",
            "webhook:https://hooks.slack.com/services/T0123ABCD/B0123EFGH/…",
        ),
        (
            "discord-webhook:https://discord.com/api/webhooks/123456789012345678/"
            "Zk9hYWxvb2tzLXRva2VuLWhlcmUtZm9yLWEtdGVzdA_abc-def",
            "discord-webhook:https://discord.com/api/webhooks/123456789012345678/…",
        ),
        (
            "webhook:https://user:pa55word@example.com/in/3f2504e0-4f89-11d3-9a0c-0305e82c3301",
            "webhook:https://example.com/in/…",
        ),
        ("webhook:https://example.com/hook#frag", "webhook:https://example.com/hook?…"),
        ("slack:C0123ABC", "slack:C0123ABC"),
        ("apprise:tgram://123456:ABCDEF/-100200", "apprise:tgram://…"),
    ],
)
def test_the_owners_view_hides_secrets_in_the_path_and_query(uri: str, owner_sees: str) -> None:
    parsed = parse_destination(uri)
    assert parsed.for_owner() == owner_sees


async def test_the_delivery_log_shows_the_text_as_sent(
    herald: Herald, settings: Settings, clock: ManualClock
) -> None:
    """The delivery log and the timeline showed the schedule's template (``{date:%A}``);
    they show the text each attempt sent, also after the schedule's text is edited."""
    s, _ = await herald.create_schedule(
        MEMBER, to="log:", when="every day at 13:00", text="Happy {date:%A}, #{schedule.id}!"
    )
    channel = RecordingChannel()
    config = DispatcherConfig(max_attempts=4, backoff_base=5, backoff_cap=60, max_lateness=3600)
    dispatcher = Dispatcher(
        herald.store, {"log": channel}, clock=clock, config=config, rng=random.Random(7)
    )
    clock.advance(timedelta(hours=1))  # Monday 2 March 2026, 13:00 UTC
    assert (await dispatcher.drain()).outcomes["delivered"] == 1
    sent = f"Happy Monday, #{s.id}!"
    assert [d.body for d in channel.deliveries] == [sent]
    await herald.edit_schedule(MEMBER, s.id, text="Something else on {date:%d}")

    [row] = await herald.delivery_log(ADMIN, AttemptFilter(schedule_id=s.id))
    assert row.body == sent
    detail = await herald.show_schedule(MEMBER, s.id)
    [attempt] = detail.attempts
    assert attempt.body == sent
    timeline = await herald.timeline(MEMBER, schedule_id=s.id)
    [event] = [e for e in timeline.events if e.kind == "attempt"]
    assert f'sent "{sent}"' in event.text
    shown = await cli(herald, settings, "show", str(s.id))
    assert f'sent "{sent}"' in shown
    assert (
        json.loads(await cli(herald, settings, "show", str(s.id), "--json"))["attempts"][0]["text"]
        == sent
    )
