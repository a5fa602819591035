"""``herald show`` tells a terminal author why their message failed (issue 38): the
last failed job, when, its error, and what can be done (a dead letter's retry request;
an expired one cannot be retried). On SQLite and PostgreSQL."""

from __future__ import annotations

import io

from bot.cli.commands import Cli
from bot.cli.main import COMMANDS, handler
from bot.cli.parser import build_parser
from core.actors import Principal, Surface
from core.cases import Herald
from core.channels.base import DeliveryResult
from core.clock import ManualClock
from core.dispatcher import Dispatcher, DispatcherConfig
from core.settings import Settings
from tests.support.channels import RecordingChannel

ALICE = "local:alice"
WHY = "the receiver answered 410 Gone"


async def show(herald: Herald, settings: Settings, schedule_id: int) -> list[str]:
    args = build_parser().parse_args(["show", str(schedule_id)])
    out = io.StringIO()
    command = Cli(args, settings, out)
    command.actor = Principal(ALICE, surface=Surface.CLI)
    await handler(COMMANDS[args.command]).action.with_herald(command, herald)  # type: ignore[attr-defined]
    return out.getvalue().splitlines()


async def test_show_says_why_the_last_message_failed(
    herald: Herald, settings: Settings, clock: ManualClock
) -> None:
    schedule, _ = await herald.create_schedule(
        ALICE, to="webhook:https://hooks.example.com/in", when="in 1 minute", text="hi"
    )
    assert schedule.id is not None
    assert not [x for x in await show(herald, settings, schedule.id) if "last failure" in x]
    clock.advance(60)
    failing = RecordingChannel(lambda d: DeliveryResult.permanent(WHY, 410), kind="webhook")
    dispatcher = Dispatcher(
        herald.store, {"webhook": failing}, clock=clock, config=DispatcherConfig(max_attempts=1)
    )
    await dispatcher.drain()
    [job] = [d.job_id for d in await herald.dead_letters(ALICE)]
    [line] = [x for x in await show(herald, settings, schedule.id) if "last failure" in x]
    assert line == (
        f"  last failure: job {job} (dead) at 2026-03-02 12:01 UTC: {WHY} "
        f"(ask for a retry: herald dead retry {job})"
    )
