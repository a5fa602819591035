"""The Slack adapter: a slack-bolt ``AsyncApp`` in Herald's event loop.

Socket Mode when ``SLACK_APP_TOKEN`` is set (no public URL needed). Otherwise HTTP
mode: ``POST /slack/events`` with ``SLACK_SIGNING_SECRET`` verification (unsigned,
forged and stale requests get 401; oversized, slow and malformed ones 413, 408 and 400;
each refusal is one log line), on the service's own HTTP server when
``herald run`` attaches it (:meth:`SlackAdapter.attach_http`), else on a server of its
own at ``HERALD_HTTP_HOST:HERALD_HTTP_PORT``. Web API calls go to ``SLACK_API_URL``.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import logging
import re
import time
from collections.abc import Iterable
from typing import Any

import aiohttp
import yarl
from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.app.async_app import AsyncApp
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.adapter_start import PlatformDown, Starter, probe
from bot.http_guard import (
    BodyRefused,
    HttpLimits,
    body_limit,
    guarded_app,
    read_body,
    start_guarded,
)
from bot.slack import approvals, pending
from bot.slack.actions import Actions
from bot.slack.base import Tracker
from bot.slack.blocks import PAGE_NEXT, PAGE_PREVIOUS, SCHEDULE_ACTIONS, Blocks
from bot.slack.dead import DECISIONS, DeadLetterAlerts
from bot.slack.modal import CALLBACK
from bot.slack.notices import ACTIONS as NOTICE_ACTIONS
from bot.slack.notices import SlackNotices
from bot.slack.prefs import CALLBACK as PREFS_CALLBACK
from bot.slack.reminders import ACTION_PATTERN as REMINDER_ACTIONS
from bot.slack.skips import SkipNotices
from core.actors import slack_tenant
from core.cases import Herald
from core.channels.answers import shown_url
from core.channels.slack import DONE_ACTION_ID
from core.errors import ConfigError
from core.http_client import failure
from core.settings import Settings
from core.store import Settled

log = logging.getLogger(__name__)

EVENTS_PATH = "/slack/events"
COMMAND = "/schedule"
#: Seconds a request's signature stays valid (Slack's own verifiers use five minutes).
SIGNATURE_MAX_AGE = 5 * 60
#: How long running handlers may finish at shutdown.
STOP_GRACE = 5.0
_BAD_TOKEN = {"invalid_auth", "not_authed", "token_revoked", "token_expired", "account_inactive"}


def _one_of(action_ids: Iterable[str]) -> re.Pattern[str]:
    """A pattern matching exactly these action ids (the buttons of core/verbs.py's verbs)."""
    return re.compile("^(" + "|".join(re.escape(a) for a in action_ids) + ")$")


def register(app: AsyncApp, handlers: Actions) -> None:
    """Wire every listener of Herald's Slack surface into ``app``."""
    app.command(COMMAND)(handlers.on_command)
    app.view(CALLBACK)(handlers.on_submit)
    app.view(PREFS_CALLBACK)(handlers.on_prefs_submit)
    app.action({"block_id": "when", "action_id": "when"})(handlers.on_preview)
    app.action({"block_id": "template", "action_id": "template"})(handlers.on_template_picked)
    app.options({"action_id": "template"})(handlers.on_template_options)
    app.action(_one_of(SCHEDULE_ACTIONS))(handlers.on_schedule_button)
    app.action("herald_open_modal")(handlers.on_open_modal)
    app.action(re.compile(f"^({PAGE_PREVIOUS}|{PAGE_NEXT})$"))(handlers.on_list_page)
    app.action(re.compile(REMINDER_ACTIONS))(handlers.on_reminder_button)
    app.action(_one_of(DECISIONS))(handlers.on_dead_letter_button)
    app.action(_one_of(NOTICE_ACTIONS))(handlers.on_notice_button)
    app.action(DONE_ACTION_ID)(handlers.on_done)
    app.action(_one_of(approvals.ACTIONS))(handlers.on_approval_button)
    app.action(_one_of(pending.ACTIONS))(handlers.on_duplicate_button)
    app.view(approvals.REJECT_CALLBACK)(handlers.on_reject_submit)
    app.event("app_home_opened")(handlers.on_home_opened)

    async def on_error(error: Exception) -> None:
        log.error("slack listener failed", exc_info=error)

    app.error(on_error)


class SlackAdapter:
    """Herald's Slack surface (see the module docstring). Build it with
    :func:`bot.slack.create_adapter`."""

    name = "slack"

    def __init__(self, settings: Settings, herald: Herald) -> None:
        if settings.slack_bot_token is None:
            raise ConfigError("The Slack adapter needs SLACK_BOT_TOKEN (a bot token, xoxb-...).")
        self.mode = "socket" if settings.slack_app_token is not None else "http"
        if self.mode == "http" and not _secret(settings.slack_signing_secret):
            raise ConfigError(
                "Slack's HTTP mode needs SLACK_SIGNING_SECRET (Basic Information in the app's "
                "settings); or set SLACK_APP_TOKEN to use Socket Mode."
            )
        self.settings = settings
        self.herald = herald
        self.limits = HttpLimits.from_settings(settings)
        self._signing_key = _secret(settings.slack_signing_secret).encode()
        self.tracker = Tracker()
        #: Seconds dead letters are collected before they are posted (a burst: a digest).
        self.alert_window = 1.0
        #: Seconds running handlers may take to finish at shutdown.
        self.stop_grace = STOP_GRACE
        #: The port the adapter's own HTTP server listens on (HTTP mode, not attached).
        self.port: int | None = None
        self.bolt: AsyncApp | None = None
        self.client: AsyncWebClient | None = None
        self._session: aiohttp.ClientSession | None = None
        self._socket: AsyncSocketModeHandler | None = None
        self._runner: web.AppRunner | None = None
        self._alerts: DeadLetterAlerts | None = None
        #: The workspaces this deployment serves (auth.test / HERALD_SLACK_TEAM_IDS).
        self.teams: frozenset[str] = frozenset()
        #: Authors told of their reminders skipped by a recipient's preferences (a
        #: burst of one author's within ``window`` seconds: one message).
        self.skips = SkipNotices(self._tell_author, lambda: self.teams, window=3.0)
        #: Authors told of their failures (dead letters, expired messages, schedules
        #: paused for failing): swept from the database every HERALD_SWEEP_SECONDS.
        self.notices = SlackNotices(
            herald,
            self._tell_author,
            lambda: self.teams,
            self._alert_tenant,
            every=settings.sweep_seconds,
            alert=self._post_alert if settings.slack_alert_channel else None,
        )
        self._attached = False
        #: The tenant of the bot token's workspace (auth.test), once known.
        self.tenant: str | None = None
        #: Starts the adapter, and again while Slack's API is down (``problem`` says why).
        self._starter = Starter(self.name, self._connect)

    @property
    def problem(self) -> str | None:
        """Why the adapter is down (a sentence for ``/readyz``), or None."""
        return self._starter.problem

    # --- integration with herald run ----------------------------------------------

    def attach_http(self, app: web.Application) -> None:
        """In HTTP mode, serve ``POST /slack/events`` on the service's HTTP server."""
        if self.mode == "http":
            app.router.add_post(EVENTS_PATH, self.handle_http)
            body_limit(app, EVENTS_PATH, self.limits.max_body)
            self._attached = True

    def connected(self) -> bool:
        """Whether Slack can reach Herald (for ``/readyz``)."""
        if self.bolt is None:
            return False
        if self._socket is not None:
            session = self._socket.client.current_session
            return session is not None and not session.closed
        return True

    async def handle_http(self, request: web.Request) -> web.Response:
        """One request from Slack: its body read within the port's limits, its signature
        checked, then Bolt dispatches it. Whatever is wrong with a request gets a 4xx and
        one log line, never a 500 (nothing of it reaches a listener)."""
        bolt = self.bolt
        if bolt is None:
            return web.json_response({"error": "starting"}, status=503)
        try:
            body = await read_body(request, self.limits)
        except BodyRefused as refused:
            return _refuse(request, refused.response.status, refused.reason)
        if not self._signed(request, body):
            return _refuse(request, 401, "not signed with SLACK_SIGNING_SECRET in the last 5 min")
        try:
            bolt_request = AsyncBoltRequest(
                body=body.decode("utf-8"),
                query=request.query_string,
                headers=request.headers,  # type: ignore[arg-type]
            )
        except Exception:  # not UTF-8, not JSON, not an object: Bolt raises what it meets
            return _refuse(request, 400, "body is not a Slack payload")
        try:
            response = await bolt.async_dispatch(bolt_request)
        except Exception as exc:  # a signed payload Bolt cannot take: the request's fault
            return _refuse(request, 400, f"payload Bolt cannot handle ({type(exc).__name__})")
        return await to_aiohttp_response(response)

    def _signed(self, request: web.Request, body: bytes) -> bool:
        """Whether Slack signed ``body`` with the signing secret in the last five minutes:
        ``X-Slack-Signature`` is ``v0=`` + hex HMAC-SHA256 of ``v0:{timestamp}:{body}``
        (https://api.slack.com/authentication/verifying-requests-from-slack). Over the
        raw bytes: slack_sdk's verifier raises on a body that is not UTF-8."""
        stamp = request.headers.get("X-Slack-Request-Timestamp", "")
        signature = request.headers.get("X-Slack-Signature", "")
        if not (stamp.isascii() and stamp.isdigit() and len(stamp) <= 20 and signature.isascii()):
            return False  # (a stamp of thousands of digits is past what int() reads)
        if abs(time.time() - int(stamp)) > SIGNATURE_MAX_AGE:
            return False
        base = b"v0:" + stamp.encode() + b":" + body
        expected = "v0=" + hmac.new(self._signing_key, base, hashlib.sha256).hexdigest()
        return hmac.compare_digest(expected, signature)

    # --- lifecycle ----------------------------------------------------------------

    async def start(self) -> None:
        """Check the bot token, build the Bolt app, then connect (Socket Mode) or serve
        (HTTP, unless attached to the service's server). Raises ConfigError when Slack
        refuses a token. When Slack's API answers something else than itself (a wrong
        SLACK_API_URL), or nothing in time, the adapter is down (one log line,
        ``/readyz``) and tries again in the background (:mod:`bot.adapter_start`)."""
        try:
            await self._starter.start()
        except BaseException:
            await self.stop()
            raise

    async def _connect(self) -> None:
        settings = self.settings
        token = _secret(settings.slack_bot_token)
        if self._session is None:
            self._session = aiohttp.ClientSession()
        try:
            teams = self.teams = await self._check_token(token)
            client = AsyncWebClient(
                token=token,
                base_url=settings.slack_api_url,
                session=self._session,
                timeout=max(1, round(settings.http_timeout)),
                logger=logging.getLogger("bot.slack.sdk"),
            )
            bolt = AsyncApp(
                client=client,
                signing_secret=_secret(settings.slack_signing_secret),
                request_verification_enabled=self.mode == "http",
                process_before_response=False,
                logger=logging.getLogger("bot.slack.bolt"),
            )
            register(bolt, Actions(settings, self.herald, client, self.tracker, teams))
            if settings.slack_alert_channel and self._alerts is None:
                self._alerts = DeadLetterAlerts(
                    self._post_alert, window=self.alert_window, keep=self._alert_keep
                )
            if self.mode == "socket":
                await self._connect_socket(bolt, client)
            elif not self._attached and self._runner is None:
                await self._serve()
            self.client, self.bolt = client, bolt
            self.notices.start()
        except PlatformDown:
            await self._close_session()
            raise
        log.info("slack adapter running", extra={"mode": self.mode})

    async def _connect_socket(self, bolt: AsyncApp, client: AsyncWebClient) -> None:
        """Open Socket Mode (apps.connections.open, then the websocket) within the
        timeout; PlatformDown with a sentence when that fails."""
        app_token = _secret(self.settings.slack_app_token)
        socket = AsyncSocketModeHandler(bolt, app_token, web_client=client)
        timeout = self.settings.http_timeout
        try:
            async with asyncio.timeout(timeout):
                await socket.connect_async()
        except (TimeoutError, SlackApiError, aiohttp.ClientError, OSError, AttributeError) as exc:
            await socket.close_async()
            where = self.settings.slack_api_url
            if isinstance(exc, TimeoutError):
                why = f"no answer within {timeout:g} s"
            elif isinstance(exc, SlackApiError) and isinstance(exc.response.data, dict):
                why = str(exc.response.data.get("error") or "unknown_error")
            elif isinstance(exc, SlackApiError | AttributeError):
                why = "an answer that is not JSON"  # slack_sdk reads such a body as text
            else:
                why = failure(exc, yarl.URL(where))
            raise PlatformDown(
                f"Slack's Socket Mode did not connect through {shown_url(where)} ({why}): "
                "check SLACK_APP_TOKEN and SLACK_API_URL."
            ) from None
        self._socket = socket

    async def _check_token(self, token: str) -> frozenset[str]:
        """Check the bot token with auth.test; return the workspaces this deployment
        serves (HERALD_SLACK_TEAM_IDS, else the token's own team, as auth.test says).
        Raises ConfigError for a refused token, PlatformDown when the answer is not
        Slack's (not JSON, none in time, no connection)."""
        assert self._session is not None
        url = self.settings.slack_api_url.rstrip("/") + "/auth.test"
        _, found = await probe(
            self._session,
            "POST",
            url,
            provider="Slack",
            setting="SLACK_API_URL",
            within=self.settings.http_timeout,
            headers={"Authorization": f"Bearer {token}"},
        )
        if found.get("ok") is True:
            team, enterprise = found.get("team_id"), found.get("enterprise_id")
            if isinstance(team, str) and team:
                #: the alert channel is this workspace's: it hears of its dead letters only
                self.tenant = slack_tenant(team, enterprise if enterprise else None)
                if not self.settings.slack_team_ids:
                    # an org-wide install (Enterprise Grid) serves every workspace of the org
                    org = enterprise if found.get("is_enterprise_install") else None
                    return frozenset({team, org} - {None, ""})
        else:
            code = str(found.get("error") or "unknown_error")
            if code in _BAD_TOKEN:
                raise ConfigError(
                    f"Slack refused SLACK_BOT_TOKEN ({code}): reinstall the app and copy its "
                    "Bot User OAuth Token."
                )
            log.warning("slack auth.test failed: %s", code)
        if not self.settings.slack_team_ids:
            log.warning(
                "slack: the bot token's workspace is unknown and HERALD_SLACK_TEAM_IDS is "
                "empty, so every Slack request is refused until Herald restarts"
            )
        return self.settings.slack_team_ids

    async def _serve(self) -> None:
        app = guarded_app()
        app.router.add_post(EVENTS_PATH, self.handle_http)
        body_limit(app, EVENTS_PATH, self.limits.max_body)
        settings = self.settings
        self._runner, site = await start_guarded(
            app, settings.http_host, settings.http_port, self.limits, shutdown_timeout=STOP_GRACE
        )
        self.port = site.port
        log.info("slack http mode listening", extra={"port": self.port, "path": EVENTS_PATH})

    async def stop(self) -> None:
        """Post pending alerts, let running handlers finish, disconnect, close."""
        await self._starter.stop()
        await self.notices.close()
        await self.skips.close()
        if self._alerts is not None:
            await self._alerts.close()
            self._alerts = None
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        await self.tracker.drain(self.stop_grace)
        if self._socket is not None:
            await self._socket.close_async()
            self._socket = None
        self.bolt = None
        await self._close_session()

    async def _close_session(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    # --- dead letters -------------------------------------------------------------

    def on_finished(self, item: Settled) -> None:
        """Queue a dead letter for the alert channel, or a reminder skipped by its
        recipient's preferences for its author (never blocks)."""
        if item.state == "dead" and self._alerts is not None:
            self._alerts.add(item)
            self.notices.alerting(item.job.id)
        elif item.state == "skipped":
            self.skips.add(item)

    async def _alert_keep(self, job_ids: list[int]) -> set[int]:
        """The dead letters the alert channel may hear of: its own workspace's."""
        if self.tenant is None:
            return set()
        return await self.herald.dead_of_tenant(job_ids, self.tenant)

    async def _alert_tenant(self) -> str | None:
        """The workspace whose alert channel this adapter posts to (None: none)."""
        return self.tenant if self.settings.slack_alert_channel else None

    async def _tell_author(self, user: str, text: str, blocks: Blocks | None = None) -> None:
        """A direct message to ``user``: conversations.open, then chat.postMessage."""
        assert self.client is not None
        opened = await self.client.conversations_open(users=user)
        channel = str((opened.get("channel") or {}).get("id", ""))
        await self.client.chat_postMessage(channel=channel, text=text, blocks=blocks)

    async def _post_alert(self, text: str, blocks: Blocks) -> None:
        assert self.client is not None and self.settings.slack_alert_channel
        channel = self.settings.slack_alert_channel.removeprefix("slack:")
        await self.client.chat_postMessage(channel=channel, text=text, blocks=blocks)


def _refuse(request: web.Request, status: int, reason: str) -> web.Response:
    """Answer ``status`` to a request to /slack/events and log why, in one line."""
    log.warning(
        "slack request refused: %s",
        reason,
        extra={"status": status, "remote": request.remote, "path": request.path},
    )
    return web.json_response({"error": "invalid request"}, status=status)


def _secret(value: Any) -> str:
    return value.get_secret_value() if value is not None else ""
