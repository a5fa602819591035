"""The Discord adapter: a discord.py client in ``herald run``'s event loop.

Intents are minimal (``guilds`` only: the channel and role cache that channel
permissions need; no privileged intent). Commands are synced at start-up, globally or,
with ``DISCORD_GUILD_IDS``, to those servers (instant, for testing). Dead letters are
posted to ``HERALD_DISCORD_ALERT_CHANNEL`` with Retry / Discard buttons, and requests
for approval with Approve / Reject.
"""

from __future__ import annotations

import asyncio
import logging
import re

import aiohttp
import discord
import discord.gateway
import discord.http
import discord.webhook.async_
import yarl

from bot.adapter_start import PlatformDown, Starter, probe
from bot.discord_bot import actions
from bot.discord_bot.approvals import ApprovalButton
from bot.discord_bot.commands import HeraldTree, ScheduleGroup
from bot.discord_bot.components import (
    DeadLetterButton,
    DuplicateButton,
    PageButton,
    ScheduleButton,
    view_for,
)
from bot.discord_bot.duplicates import Requests
from bot.discord_bot.interact import NO_MENTIONS
from bot.discord_bot.ladders import DoneButton
from bot.discord_bot.notices import DiscordNotices, NoticeButton
from bot.discord_bot.reminders import ReminderButton
from bot.discord_bot.skips import SkipNotices
from core.cases import Herald
from core.channels.answers import no_answer, shown_url
from core.channels.discord import DEFAULT_BASE_URL
from core.errors import ConfigError
from core.http_client import failure
from core.settings import Settings
from core.store import Settled

log = logging.getLogger(__name__)

#: What Herald does in a server: see channels, post (also in threads), post embeds.
PERMISSIONS = discord.Permissions(
    view_channel=True,
    send_messages=True,
    send_messages_in_threads=True,
    embed_links=True,
)
SCOPES = ("bot", "applications.commands")


def invite_url(application_id: int) -> str:
    """The OAuth2 link that adds Herald to a server with exactly the permissions it needs."""
    return discord.utils.oauth_url(application_id, permissions=PERMISSIONS, scopes=SCOPES)


def _snowflakes(text: str, what: str) -> list[int]:
    ids = []
    for part in re.split(r"[,\s]+", text.strip()):
        if not part:
            continue
        digits = part.removeprefix("discord:").strip("<#>")
        if not digits.isdigit():
            raise ConfigError(f"{what} must be Discord ids (numbers); {part[:30]!r} is not one.")
        ids.append(int(digits))
    return ids


def use_api_url(url: str) -> bool:
    """Point discord.py's REST calls (and interaction webhooks) at ``url``, e.g. a local
    fake; True when that is not Discord itself. discord.py keeps its base URL per
    process, not per client."""
    base = url.rstrip("/")
    discord.http.Route.BASE = base
    discord.webhook.async_.Route.BASE = base  # type: ignore[attr-defined]
    return base != DEFAULT_BASE_URL


class HeraldClient(discord.Client):
    """The discord.py client, carrying what callbacks need (``herald``, ``settings``)."""

    def __init__(self, herald: Herald, settings: Settings) -> None:
        intents = discord.Intents.none()
        intents.guilds = True
        discord.VoiceClient.warn_nacl = False  # Herald has no voice: no warning about it
        discord.VoiceClient.warn_dave = False
        super().__init__(intents=intents, allowed_mentions=NO_MENTIONS)
        self.herald = herald
        self.settings = settings
        #: Creates refused for a duplicate, waiting for Create anyway (issue 41).
        self.requests = Requests()
        self.tree = HeraldTree(self)
        self.tree.add_command(ScheduleGroup())
        # Persistent buttons: a click on any message with these custom_ids is handled,
        # also on messages posted before this process started.
        self.add_dynamic_items(
            ScheduleButton,
            DeadLetterButton,
            PageButton,
            ReminderButton,
            NoticeButton,
            DoneButton,
            ApprovalButton,
            DuplicateButton,
        )


class DiscordAdapter:
    """``herald run``'s Discord surface (see :class:`bot.adapters.Adapter`)."""

    name = "discord"

    def __init__(self, settings: Settings, herald: Herald) -> None:
        self.settings = settings
        self.herald = herald
        self.client = HeraldClient(herald, settings)
        self.guild_ids = _snowflakes(settings.discord_guild_ids, "DISCORD_GUILD_IDS")
        alert = settings.discord_alert_channel
        found = _snowflakes(alert, "HERALD_DISCORD_ALERT_CHANNEL") if alert else []
        self.alert_channel: int | None = found[0] if found else None
        #: The tenant of the alert channel's server, once looked up.
        self._alert_tenant: str | None = None
        #: Authors told of their reminders skipped by a recipient's preferences (a
        #: burst of one author's within ``window`` seconds: one message).
        self.skips = SkipNotices(self._tell_author, frozenset(self.guild_ids), window=3.0)
        #: Authors told of their failures (dead letters, expired messages, schedules
        #: paused for failing): swept from the database every HERALD_SWEEP_SECONDS.
        self.notices = DiscordNotices(
            herald,
            self._tell_author,
            frozenset(self.guild_ids),
            self.alert_tenant,
            every=settings.sweep_seconds,
            alert=self._tell_alert_channel,
        )
        self._gateway: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[object]] = set()
        #: Starts the adapter, and again while Discord's API is down (``problem``).
        self._starter = Starter(self.name, self._connect)

    @property
    def problem(self) -> str | None:
        """Why the adapter is down (a sentence for ``/readyz``), or None."""
        return self._starter.problem

    def attach_http(self, app: aiohttp.web.Application) -> None:
        """Discord reaches Herald through the gateway: no route on the service's server."""

    def connected(self) -> bool:
        """Whether the adapter is logged in with its gateway running (``/readyz``)."""
        gateway = self._gateway
        return (
            self._starter.problem is None
            and gateway is not None
            and not gateway.done()
            and not self.client.is_closed()
        )

    async def start(self) -> None:
        """Log in, sync the commands, then connect to the gateway in the background.
        Raises ConfigError when Discord refuses the token. When Discord's API answers
        something else than itself (a wrong DISCORD_API_URL), nothing in time, or
        cannot be reached, the adapter is down (one log line, ``/readyz``) and tries
        again in the background (:mod:`bot.adapter_start`)."""
        token = self.settings.discord_bot_token
        if token is None:
            raise ConfigError("The Discord adapter needs DISCORD_BOT_TOKEN.")
        await self._starter.start()

    async def _connect(self) -> None:
        token = self.settings.discord_bot_token
        assert token is not None
        secret = token.get_secret_value()
        api = self.settings.discord_api_url
        within = self.settings.http_timeout
        elsewhere = use_api_url(api)
        async with aiohttp.ClientSession() as session:  # the bot user, as login asks it
            status, _ = await probe(
                session,
                "GET",
                api.rstrip("/") + "/users/@me",
                provider="Discord",
                setting="DISCORD_API_URL",
                within=within,
                headers={"Authorization": f"Bot {secret}"},
            )
        if status == 401:
            raise _refused_token()
        try:
            async with asyncio.timeout(within):
                await self.client.login(secret)
                if elsewhere:
                    # Another API (a local fake) serves its own gateway: ask it where, as
                    # the protocol allows (discord.py otherwise goes straight to Discord's).
                    _, url, _ = await self.client.http.get_bot_gateway()
                    discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(url)
        except discord.LoginFailure:
            raise _refused_token() from None
        except TimeoutError:
            await self.client.http.close()
            raise PlatformDown(no_answer("Discord", api, within, "DISCORD_API_URL")) from None
        except (
            discord.DiscordException,
            aiohttp.ClientError,
            OSError,
            LookupError,
            TypeError,
        ) as exc:
            # TypeError, KeyError: discord.py reading an answer that is not Discord's
            log.debug("discord login failed", exc_info=exc)
            await self.client.http.close()
            why = (
                f"HTTP {exc.status}"
                if isinstance(exc, discord.HTTPException)
                else failure(exc, yarl.URL(api))
            )
            raise PlatformDown(
                f"Herald could not log in to Discord at {shown_url(api)} ({why}): check "
                "the network and DISCORD_API_URL."
            ) from None
        await self.sync_commands()
        self._gateway = asyncio.create_task(
            self.client.connect(reconnect=True), name="herald-discord-gateway"
        )
        self._gateway.add_done_callback(_gateway_ended)
        self.notices.start()

    async def sync_commands(self) -> None:
        """Register ``/schedule`` globally, or in each of ``DISCORD_GUILD_IDS``. A refusal
        is logged (Herald still delivers); it is not fatal."""
        tree = self.client.tree
        targets: list[discord.Object | None] = [discord.Object(id=gid) for gid in self.guild_ids]
        targets = targets or [None]
        for guild in targets:
            if guild is not None:
                tree.copy_global_to(guild=guild)
            try:
                async with asyncio.timeout(self.settings.http_timeout):
                    synced = await tree.sync(guild=guild)
            except discord.HTTPException as exc:
                log.warning(
                    "could not sync discord commands",
                    extra={"guild_id": guild and guild.id, "status": exc.status},
                )
                continue
            except (TimeoutError, aiohttp.ClientError, OSError, TypeError, KeyError) as exc:
                # no answer in time, or one that is not Discord's (discord.py reads it)
                log.warning(
                    "could not sync discord commands: %s",
                    "no answer in time"
                    if isinstance(exc, TimeoutError)
                    else failure(exc, yarl.URL(self.settings.discord_api_url)),
                    extra={"guild_id": guild and guild.id},
                )
                continue
            log.info(
                "discord commands synced",
                extra={"guild_id": guild and guild.id, "commands": len(synced)},
            )

    async def stop(self) -> None:
        """Close the gateway and HTTP session; pending alert posts are cancelled."""
        await self._starter.stop()
        await self.notices.close()
        await self.skips.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.client.close()
        if self._gateway is not None:
            self._gateway.cancel()
            await asyncio.gather(self._gateway, return_exceptions=True)
            self._gateway = None

    def on_finished(self, item: Settled) -> None:
        """Post each new dead letter to the alert channel, in the background; queue a
        reminder skipped by its recipient's preferences for its author."""
        if item.state == "skipped":
            self.skips.add(item)
            return
        if item.state != "dead" or self.alert_channel is None:
            return
        self.notices.alerting(item.job.id)
        task: asyncio.Task[object] = asyncio.get_running_loop().create_task(
            self.post_alert(item), name=f"herald-discord-alert-{item.job.id}"
        )
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _tell_author(
        self, user_id: int, text: str, view: discord.ui.View | None = None
    ) -> None:
        """A direct message to ``user_id`` (its DM channel opened, then a message that
        mentions no one), with ``view``'s buttons."""
        opened = await self.client.http.start_private_message(user_id)
        channel = self.client.get_partial_messageable(int(opened["id"]))
        if view is None:
            await channel.send(text, allowed_mentions=NO_MENTIONS)
        else:
            await channel.send(text, allowed_mentions=NO_MENTIONS, view=view)

    async def _tell_alert_channel(self, text: str, view: discord.ui.View | None = None) -> None:
        """A message to the alert channel that mentions no one (a request for approval),
        with ``view``'s buttons; Discord's refusal propagates (the sweep tries again)."""
        if self.alert_channel is None:
            return
        channel = self.client.get_partial_messageable(self.alert_channel)
        if view is None:
            await channel.send(text, allowed_mentions=NO_MENTIONS)
        else:
            await channel.send(text, allowed_mentions=NO_MENTIONS, view=view)

    async def post_alert(self, item: Settled) -> discord.Message | None:
        """Post the alert for one dead letter; None (logged) when Discord refuses."""
        if self.alert_channel is None:
            return None
        if not await self._alert_may_hear(item.job.id):
            return None
        reply = actions.alert(item)
        channel = self.client.get_partial_messageable(self.alert_channel)
        view = view_for(reply)
        try:
            if view is None:
                return await channel.send(reply.text, allowed_mentions=NO_MENTIONS)
            return await channel.send(reply.text, view=view, allowed_mentions=NO_MENTIONS)
        except discord.HTTPException as exc:
            log.warning(
                "could not post a dead-letter alert to discord",
                extra={"job_id": item.job.id, "channel": self.alert_channel, "status": exc.status},
            )
        except Exception:
            log.exception("dead-letter alert failed", extra={"job_id": item.job.id})
        return None

    async def alert_tenant(self) -> str | None:
        """The tenant of the alert channel's server (looked up once; None: no alert
        channel, or it cannot be looked up now)."""
        if self._alert_tenant is None and self.alert_channel is not None:
            try:
                data = await self.client.http.get_channel(self.alert_channel)
            except discord.HTTPException as exc:
                log.warning("could not look up the alert channel", extra={"status": exc.status})
                return None
            guild = data.get("guild_id")
            if guild is None:
                log.warning("the alert channel is not in a server: no alerts are posted")
                return None
            self._alert_tenant = f"discord:{int(str(guild))}"
        return self._alert_tenant

    async def _alert_may_hear(self, job_id: int) -> bool:
        """Whether the alert channel's server may hear of this dead letter: it hears of
        its own tenant's only (the server the channel belongs to)."""
        tenant = await self.alert_tenant()
        if tenant is None:
            return False
        return job_id in await self.herald.dead_of_tenant([job_id], tenant)


def _refused_token() -> ConfigError:
    return ConfigError(
        "Discord refused DISCORD_BOT_TOKEN: copy the bot token again from the "
        "Developer Portal (Bot → Reset Token)."
    )


def _gateway_ended(task: asyncio.Task[None]) -> None:
    if task.cancelled():
        return
    error = task.exception()
    if error is not None:
        log.error("discord gateway stopped", exc_info=error)


def create_adapter(settings: Settings, herald: Herald) -> DiscordAdapter:
    """The Discord adapter for ``herald run`` (see :mod:`bot.adapters`)."""
    return DiscordAdapter(settings, herald)
