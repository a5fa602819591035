"""One message to each channel, delivered by `herald run --drain` (a real process) to
local servers that speak Slack's, Discord's, Standard Webhooks' and SMTP's protocols."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from core.cases import Herald
from core.channels import build_channels
from core.clock import ManualClock
from core.errors import InvalidInput
from core.settings import Settings, load_settings
from core.store import Store
from tests.fakes import FakeDiscord, FakeSlack, FakeSMTP, WebhookReceiver

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"


def env_for(
    settings: Settings,
    slack: FakeSlack,
    discord: FakeDiscord,
    smtp: FakeSMTP,
    hook: WebhookReceiver,
) -> dict[str, str]:
    return {
        "HERALD_DATABASE_URL": settings.database_url,
        "SLACK_BOT_TOKEN": slack.token,
        "SLACK_API_URL": slack.api_url,
        "DISCORD_BOT_TOKEN": discord.token,
        "DISCORD_API_URL": discord.api_url,
        "HERALD_SMTP_HOST": "127.0.0.1",
        "HERALD_SMTP_PORT": str(smtp.port),
        "HERALD_SMTP_TLS": "none",
        "HERALD_SMTP_FROM": "Herald <herald@example.com>",
        "HERALD_WEBHOOK_SECRETS": f"{hook.url}/={SECRET}",
        "HERALD_WEBHOOK_ALLOW_PRIVATE": "true",  # the fakes listen on 127.0.0.1
    }


async def test_each_channel_receives_its_message(tmp_path: Path) -> None:
    async with (
        FakeSlack() as slack,
        FakeDiscord() as discord,
        FakeSMTP() as smtp,
        WebhookReceiver(secret=SECRET) as hook,
    ):
        slack.add_channel("C0123ABC", "general")
        discord.add_channel("123456789012345678")
        discord_hook = discord.add_webhook("998877", "hooktoken", "223456789012345678")
        env = env_for(
            load_settings(HERALD_DATABASE_URL=f"sqlite:///{tmp_path}/h.db", _env_file=None),
            slack,
            discord,
            smtp,
            hook,
        )
        settings = load_settings(_env_file=None, **env)
        store = await Store.open(settings.database_url)
        channels = build_channels(settings)
        # a clock a minute behind: what it schedules "in 30 seconds" is due now
        herald = Herald(
            store,
            settings,
            ManualClock(datetime.now(UTC) - timedelta(minutes=1)),
            channels=channels,
        )
        try:
            targets = {
                "slack:C0123ABC": "to Slack",
                "discord:123456789012345678": "to Discord",
                f"discord-webhook:{discord_hook}": "to a Discord webhook",
                f"webhook:{hook.hook_url}": "to a webhook",
                "email:ops@example.com": "Subject line\nto email",
            }
            for to, text in targets.items():
                await herald.create_schedule("local:alice", to=to, when="in 30 seconds", text=text)
            # checked at schedule time: a Slack channel that does not exist is refused now
            with pytest.raises(InvalidInput, match="C0NOPE"):
                await herald.create_schedule(
                    "local:alice", to="slack:C0NOPE", when="in 30 seconds", text="x"
                )
        finally:
            for channel in channels.values():
                await channel.close()
            await store.close()

        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bot.cli",
            "run",
            "--drain",
            "--json",
            env={**{k: v for k, v in os.environ.items() if not k.startswith("HERALD_")}, **env},
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(proc.communicate(), timeout=60)
        assert proc.returncode == 0, err.decode()
        assert json.loads(out)["delivered"] == 5

        [posted] = slack.messages
        # a member Herald knows no name of is credited by their id (issue 32, finding 6)
        credited = "to Slack\n_scheduled by @alice_"
        assert (posted["channel"], posted["text"]) == ("C0123ABC", credited)
        [message] = discord.channels["123456789012345678"].messages
        assert message["content"] == "to Discord\n-# scheduled by @\u200balice" and message["nonce"]
        [via_hook] = discord.channels["223456789012345678"].messages
        assert via_hook["content"] == "to a Discord webhook"
        [received] = hook.received
        assert received.verified is True and received.payload["text"] == "to a webhook"
        [mail] = smtp.messages
        assert mail.message["Subject"] == "Subject line"
        assert mail.message["To"] == "ops@example.com"
        # no secret in what the service printed
        for secret in (slack.token, discord.token, SECRET, "hooktoken"):
            assert secret not in out.decode() + err.decode()
