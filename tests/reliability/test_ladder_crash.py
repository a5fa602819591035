"""A crash mid-ladder (issue 40): messages sent until done have their ladders written
(24 nags a minute apart and an escalation by direct message each, all due), half to
Slack and half to Discord; ``herald run`` is killed with SIGKILL while the steps go
out, a full window of them in flight, and a second one finishes. Every step is
delivered and recorded once, none lost; each nag still replies to its own occurrence's
message; a step re-sent after the kill carries its first key (Slack's metadata,
Discord's nonce), so Discord, which keeps one message per nonce, shows each step once.

Slack's ``chat.postMessage`` takes no idempotency key: a step the killed process had
posted but not yet recorded is posted again (with the same key in its metadata), as
for any message (at-least-once); the test counts those re-sends, each of them a step
the killed process held (claimed, its outcome not yet recorded).

The default run (`make test`) crashes it on PostgreSQL, as the other crash scenarios
(tests/reliability/test_routing_crash.py says why); ``HERALD_RELIABILITY=full`` runs it
on SQLite too."""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import subprocess
import sys
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from aiohttp import web
from pydantic import SecretStr

from core.actors import Principal
from core.cases import Herald
from core.channels.discord import DiscordChannel, discord_nonce
from core.channels.slack import SlackChannel
from core.clock import ManualClock
from core.dispatcher import Dispatcher
from core.models import Job, JobState
from core.routing import step_key
from core.settings import load_settings
from core.store import Store
from tests.fakes import FakeDiscord, FakeSlack
from tests.reliability.conftest import FULL, report, size
from tests.support.waiting import until

JOB = Job.__table__  # type: ignore[attr-defined]
SLACK_TOKEN = "xoxb-1234-secret-token"
DISCORD_TOKEN = "MTIz.bot-secret-token"
ROOT = "local:root-admin"
LEAD_SLACK, LEAD_DISCORD = "ULEAD", "223456789012345670"
#: Each ladder: 24 nags (core.until_done.MAX_NAGS) and one escalation.
STEPS = 25
#: How long each fake takes to answer once the crash run starts: the kill finds a full
#: window of sends (64) in flight, and answered ones not yet recorded.
LATENCY = 0.1


class SlowSlack(FakeSlack):
    """The fake Slack API, its answers ``latency`` seconds on their way back, counting
    each post by the idempotency key in its metadata."""

    latency = 0.0

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.keys: Counter[str] = Counter()

    async def _dispatch(self, request: web.Request) -> web.Response:
        args = self.requests[-1].params()
        answer = await super()._dispatch(request)  # reads self.requests[-1]: first
        if self.latency:  # done, and the answer on its way back when the kill comes
            await asyncio.sleep(self.latency)
        key = ((args.get("metadata") or {}).get("event_payload") or {}).get("idempotency_key")
        if key and request.match_info["method"] == "chat.postMessage":
            if json.loads(answer.text or "{}").get("ok"):
                self.keys[key] += 1
        return answer


class SlowDiscord(FakeDiscord):
    """The fake Discord API, its answers ``latency`` seconds on their way back, counting
    each message created by its nonce (Discord keeps one message per nonce)."""

    latency = 0.0

    def __init__(self, *args: Any, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.nonces: Counter[str] = Counter()

    async def _create_message(self, request: web.Request) -> web.Response:
        nonce = str(self.requests[-1].json().get("nonce"))
        answer = await super()._create_message(request)  # reads self.requests[-1]: first
        if self.latency:
            await asyncio.sleep(self.latency)
        if answer.status == 200:
            self.nonces[nonce] += 1
        return answer


def start(url: str, slack: SlowSlack, discord: SlowDiscord, log: Path) -> subprocess.Popen[bytes]:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("HERALD_", "SLACK_"))},
        "HERALD_DATABASE_URL": url,
        "HERALD_ADAPTERS": "none",  # the channels only: no Socket Mode, no gateway
        "SLACK_BOT_TOKEN": SLACK_TOKEN,
        "SLACK_API_URL": slack.api_url,
        "DISCORD_BOT_TOKEN": DISCORD_TOKEN,
        "DISCORD_API_URL": discord.api_url,
        # a ladder's 25 steps in one channel at once: lift the platforms' 1/s per channel
        "HERALD_RATE_LIMITS": "slack:=2000/s,discord:=2000/s",
        "HERALD_LEASE_SECONDS": "2",
        "HERALD_SWEEP_SECONDS": "0.5",
        "HERALD_HTTP_PORT": "0",
    }
    with log.open("ab") as sink:
        return subprocess.Popen(
            [sys.executable, "-m", "bot.cli", "run"], env=env, stdout=sink, stderr=sink
        )


async def ladders_due(
    store: Store, url: str, slack: SlowSlack, discord: SlowDiscord, per_platform: int
) -> list[int]:
    """``per_platform`` schedules to Slack channels and as many to Discord channels, sent
    until done (nag every minute, escalate after 30 minutes), their messages delivered
    40 minutes ago (by a dispatcher in this process on a clock set back): every step
    of their ladders is due now, within the hour a message may be late."""
    settings = load_settings(HERALD_DATABASE_URL=url, HERALD_ADMINS=ROOT, _env_file=None)
    clock = ManualClock(datetime.now(UTC) - timedelta(minutes=41))
    herald = Herald(store, settings, clock)
    slack.add_person(LEAD_SLACK)
    discord.add_user(LEAD_DISCORD)
    # the leads have used Herald: a person is escalated to by DM as one reminded
    await herald.sync_member(Principal(f"slack:{LEAD_SLACK}", "slack:TA"))
    await herald.sync_member(Principal(f"discord:{LEAD_DISCORD}", f"discord:{discord.guild_id}"))
    ids = []
    for i in range(per_platform):
        slack.add_channel(f"C{i:08d}", f"ops-{i}")
        discord.add_channel(str(123456789012345000 + i))
        for to, lead in (
            (f"slack:C{i:08d}", f"slack:@{LEAD_SLACK}"),
            (f"discord:{123456789012345000 + i}", f"discord:@{LEAD_DISCORD}"),
        ):
            schedule, _ = await herald.create_schedule(
                ROOT,
                to=to,
                when="in 1 minute",
                text=f"Rotate the keys ({to})",
                until_done={"nag": "1m", "escalate": [{"to": [lead], "after": "30m"}]},
            )
            assert schedule.id is not None
            ids.append(schedule.id)
    channels = {
        "slack": SlackChannel(SecretStr(SLACK_TOKEN), base_url=slack.api_url),
        "discord": DiscordChannel(DISCORD_TOKEN, base_url=discord.api_url),
    }
    clock.advance(timedelta(minutes=1))
    try:
        summary = await Dispatcher(store, channels, clock=clock, rng=random.Random(7)).drain()
    finally:
        for channel in channels.values():
            await channel.close()
    assert summary.outcomes["delivered"] == len(ids)
    return ids


async def steps_of(store: Store) -> list[Any]:
    """Every ladder step: its state, schedule, ladder label, thread and delivery key."""
    async with store._read() as conn:
        rows = await conn.execute(
            sa.select(
                JOB.c.state,
                JOB.c.schedule_id,
                JOB.c.ladder,
                JOB.c.thread,
                JOB.c.idempotency_key,
                JOB.c.destination,
            ).where(JOB.c.ladder != "")
        )
        return list(rows.all())


async def delivered_steps(store: Store) -> int:
    return sum(1 for row in await steps_of(store) if row[0] == JobState.DELIVERED.value)


@pytest.mark.parametrize(
    "db_url",
    [
        pytest.param(
            "sqlite",
            marks=pytest.mark.skipif(
                not FULL,
                reason="SQLite's crash runs in make reliability (HERALD_RELIABILITY=full); "
                "the default run crashes PostgreSQL",
            ),
        ),
        "postgres",
    ],
    indirect=True,
)
@pytest.mark.timeout(900)  # a machine loaded by other suites: minutes, not seconds
async def test_sigkill_mid_ladder_sends_each_step_once_and_loses_none(
    db_url: str, store: Store, tmp_path: Path
) -> None:
    per_platform = size(8, 40)
    async with (
        SlowSlack(token=SLACK_TOKEN, team_id="TA") as slack,
        SlowDiscord(DISCORD_TOKEN, bucket_limit=1_000_000) as discord,
    ):
        ids = await ladders_due(store, db_url, slack, discord, per_platform)
        steps = len(ids) * STEPS
        assert len(await steps_of(store)) == steps
        occurrences = {(m["channel"], m["ts"]) for m in slack.messages}
        occurrences |= {m["id"] for m in discord.messages}
        slack.keys.clear()
        discord.nonces.clear()
        slack.latency = discord.latency = LATENCY

        def accepted() -> int:
            return len(slack.keys) + len(discord.nonces)

        log = tmp_path / "dispatcher.log"
        proc = start(db_url, slack, discord, log)
        try:
            await until(lambda: past(proc, accepted() >= steps // 3), within=300)
            proc.send_signal(signal.SIGKILL)  # mid-ladder: a third of the steps out
            proc.wait(timeout=30)
            killed_at = accepted()
            # the steps the killed process held: the only ones it may have sent
            # without recording (in flight, or answered and not yet written)
            held = {
                step_key(row[4], 0)
                for row in await steps_of(store)
                if row[0] == JobState.CLAIMED.value
            }
            proc = start(db_url, slack, discord, log)
            await until(lambda: past(proc, accepted() >= steps), within=300)
            async with asyncio.timeout(120):  # the last outcomes recorded
                while await delivered_steps(store) < steps:  # noqa: ASYNC110 - another process writes it
                    await asyncio.sleep(0.05)
        except (TimeoutError, ChildProcessError):
            counts = await store.job_counts()
            tail = log.read_text()[-3000:]
            raise AssertionError(f"jobs {counts}; dispatcher log ends:\n{tail}") from None
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=60)

        rows = await steps_of(store)
        assert {row[0] for row in rows} == {JobState.DELIVERED.value}, "a step was lost"
        keys = {step_key(row[4], 0) for row in rows}
        slack_keys = {step_key(r[4], 0) for r in rows if str(r[5]).startswith("slack:")}
        discord_keys = {step_key(r[4], 0) for r in rows if str(r[5]).startswith("discord:")}
        assert len(keys) == steps  # each step its own key
        # every step reached its platform, under its own key, none under another
        assert set(slack.keys) == slack_keys
        assert set(discord.nonces) == {discord_nonce(k) for k in discord_keys}
        # Discord keeps one message per nonce: each step once, whatever was re-sent
        created = [m for m in discord.messages if m["id"] not in occurrences]
        assert len(created) == len(discord_keys)
        assert Counter(m["nonce"] for m in created).most_common(1)[0][1] == 1
        # each nag still replies to its own occurrence's message
        nags = [m for m in created if m.get("message_reference")]
        assert len(nags) == per_platform * 24
        assert all(m["message_reference"]["message_id"] in occurrences for m in nags)
        slack_nags = [m for m in slack.messages if m.get("thread_ts")]
        assert all((m["channel"], m["thread_ts"]) in occurrences for m in slack_nags)
        resent_slack = sum(slack.keys.values()) - len(slack.keys)
        resent_discord = sum(discord.nonces.values()) - len(discord.nonces)
        # only what the killed process held can be re-sent: claimed, its outcome not
        # yet recorded (the 64 sends in flight, and answered ones awaiting their
        # batch's write: a bound of 64 failed once at 68)
        assert {k for k, n in slack.keys.items() if n > 1} <= held
        assert {n for n, c in discord.nonces.items() if c > 1} <= {discord_nonce(k) for k in held}
        assert resent_slack + resent_discord <= len(held)
    backend = "PostgreSQL" if db_url.startswith("postgres") else "SQLite"
    report(
        "crash (until done)",
        f"1 SIGKILL at {killed_at:,} of {steps:,} ladder steps: {len(ids)} ladders of 24 "
        f"nags and an escalation, Slack and Discord ({backend})",
        f"0 lost; Discord 0 duplicates ({resent_discord} re-sent, one message per nonce); "
        f"Slack {resent_slack} re-posted with their first key (no idempotency at Slack); "
        f"all among the {len(held)} the killed process held",
    )


def past(proc: subprocess.Popen[bytes], done: bool) -> bool:
    """``done``; raises ChildProcessError when the dispatcher has exited meanwhile."""
    if not done and proc.poll() is not None:
        raise ChildProcessError(f"the dispatcher exited ({proc.returncode})")
    return done
