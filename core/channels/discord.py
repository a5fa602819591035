"""Discord channels: a bot posting to a channel, and a channel webhook.

``discord:123456789012345678`` posts ``POST {base}/channels/{id}/messages`` with
``Authorization: Bot <token>``, a ``nonce`` derived from the job's idempotency key and
``enforce_nonce: true``: Discord answers a repeated nonce with the message it already
created, so a retried delivery never posts twice. Options: ``embeds``, ``allowed_mentions``.

``discord:@123456789012345678`` is a direct message to that user: the bot opens (or
finds) the DM channel with ``POST {base}/users/@me/channels {"recipient_id": …}``
(https://discord.com/developers/docs/resources/user#create-dm), remembered per user for
the life of the process, and creates the message there with Snooze and Done buttons
(an action row, https://discord.com/developers/docs/components/reference#button;
``custom_id`` from :mod:`core.reminders`). Discord refuses a user who shares no server
with the bot or does not take direct messages: 50007, "Cannot send messages to this user".

``discord-webhook:https://discord.com/api/webhooks/ID/TOKEN`` executes a channel webhook
(``?wait=true``), which also allows a custom sender: options ``username``, ``avatar_url``,
``embeds``, ``allowed_mentions`` and ``thread_id``. Webhooks take no nonce.

A message sent until done (:mod:`core.until_done`) uses three more options, which the
dispatcher sets: ``done_button`` (the occurrence's job id: an action row with one Done
button, ``custom_id`` :data:`DONE_CUSTOM_PREFIX` and the job id; in a direct message it
replaces Snooze and Done, whose Done means "seen" to a reminder), ``reply_to`` (a
message id, as ``send`` returns it: the nag is a reply to it, ``message_reference``,
https://discord.com/developers/docs/resources/message#message-reference-structure) and
``edit_of`` (a message id: instead of posting, ``PATCH`` gives that message the
delivery's text and no components,
https://discord.com/developers/docs/resources/message#edit-message). A webhook carries
no Done button and replies to nothing (see :class:`DiscordWebhookChannel`); it edits its
own messages (https://discord.com/developers/docs/resources/webhook#edit-webhook-message).

Both keep Discord's rate-limit state: per bucket (``X-RateLimit-Bucket``, ``-Remaining``,
``-Reset-After``; a 429's ``retry_after``), and the global 50 requests/s. Before sending
into an exhausted bucket they wait, or, when the wait is longer than ``max_wait``, return
a retry with that ``retry_after`` so the dispatcher can do other work meanwhile.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import re
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar
from urllib.parse import urlsplit

from pydantic import SecretStr

from core import limits, reminders
from core.channels.answers import ApiHealth, content_kind, not_json, not_the_api, shown_url
from core.channels.base import Channel, Delivery, DeliveryResult, Outcome
from core.channels.webhook import parse_retry_after, reveal, truncate
from core.destinations import (
    ChannelName,
    Destination,
    UriSyntax,
    names_need_connection,
    owner_url_view,
    redact_url_path,
    url_parts,
)
from core.errors import InvalidInput
from core.http_client import Answer, HTTPClient, TimedOut, Timeout, Unreachable
from core.netguard import Guard, Refused
from core.ratelimit import RateLimit
from core.until_done import DONE_BUTTON, EDIT_OF, REPLY_TO

DEFAULT_BASE_URL = "https://discord.com/api/v10"
MAX_CONTENT = limits.DISCORD_CONTENT.size
USER_AGENT = "DiscordBot (herald, 0.1.0)"
_WEBHOOK_PATH = re.compile(r"/webhooks/(\d+)/[^/]+/?$")
#: Channels a bot posts in: GUILD_TEXT and GUILD_ANNOUNCEMENT
#: (https://discord.com/developers/docs/resources/channel#channel-object-channel-types).
TEXT_CHANNEL_TYPES = (0, 5)
#: A channel's, a user's or a message's id (a snowflake).
_SNOWFLAKE = re.compile(r"^\d{17,20}$")
#: The ``custom_id`` of the Done button under a message sent until done is this and the
#: occurrence's job id (``herald:done:42``; at most 32 characters of Discord's 100).
DONE_CUSTOM_PREFIX = "herald:done:"


def _check_target(raw: str, target: str) -> None:
    """A channel's numeric id, or ``@`` and a user's for a direct message. (A name,
    ``#general@<server id>``, is looked up before a schedule is saved:
    :meth:`DiscordChannel.channels_named`.)"""
    if target.startswith("@"):
        if not _SNOWFLAKE.match(target[1:]):
            raise InvalidInput(
                f"{raw!r} is not a Discord user: use their numeric id, e.g. "
                "discord:@123456789012345678 (Developer Mode, right-click, Copy User ID)."
            )
    elif not _SNOWFLAKE.match(target):
        raise InvalidInput(
            f"{raw!r} is not a Discord channel: use its numeric id, "
            "e.g. discord:123456789012345678 (a direct message: discord:@<user id>)."
        )


def _check_webhook(raw: str, target: str) -> None:
    """A webhook URL as the channel's Integrations settings give it."""
    parts = url_parts(raw, target, "discord-webhook:https://discord.com/api/webhooks/ID/TOKEN")
    if parts.scheme not in ("http", "https") or "/webhooks/" not in parts.path:
        raise InvalidInput(
            f"{raw!r} is not a Discord webhook URL: copy it from the channel's "
            "Integrations settings (https://discord.com/api/webhooks/ID/TOKEN)."
        )


Sleep = Callable[[float], Awaitable[None]]


def discord_nonce(idempotency_key: str) -> str:
    """A nonce of 25 characters derived from the idempotency key (always the same for
    the same key): the first 25 characters of its url-safe base64 SHA-256."""
    digest = hashlib.sha256(idempotency_key.encode("utf-8")).digest()
    return base64.urlsafe_b64encode(digest).decode("ascii")[:25]


#: Whom a message may notify when its author's rights were never recorded (rows made
#: before core.tenancy): users only, never @everyone, @here or a role.
USERS_ONLY: dict[str, Any] = {"parse": ["users"]}


def allowed_mentions(delivery: Delivery) -> dict[str, Any]:
    """The ``allowed_mentions`` of every message Herald sends: what the author could
    notify when they scheduled it (core.tenancy), else users only
    (https://discord.com/developers/docs/resources/message#allowed-mentions-object)."""
    found = delivery.options.get("allowed_mentions")
    return found if isinstance(found, dict) else USERS_ONLY


_MARKDOWN = re.compile(r"([\\*_~`|>#\[\]()<:-])")


def credited(body: str, name: str | None) -> str:
    """``body`` with a last line saying who scheduled it (``-# scheduled by @Ada``, small
    grey text), or as it is without a name. The name is Markdown-escaped and its ``@``
    broken by a zero-width space, so it can neither format nor mention;
    ``allowed_mentions`` stays as it is
    (https://discord.com/developers/docs/reference#message-formatting). The name is
    clipped (with "…") to at most limits.CREDIT_NAME characters, or to what is left of
    the 2,000 (a message saved before limits kept room for the line); the line is never
    left out: a message with no room at all for it comes out over 2,000 and is refused
    (:meth:`DiscordChannel.send`)."""
    if not name:
        return body
    prefix = limits.DISCORD_CREDIT_PREFIX
    room = min(limits.CREDIT_NAME, MAX_CONTENT - len(body) - len(prefix))
    return body + prefix + _credit_name(name, max(room, 1))


def _credit_name(name: str, room: int) -> str:
    """``name`` on one line, escaped, within ``room`` characters (clipped with "…")."""
    words = " ".join(name.split())[: 4 * limits.CREDIT_NAME]
    shown = _escaped_name(words)
    if len(shown) <= room:
        return shown
    for end in range(min(len(words), room) - 1, 0, -1):
        cut = _escaped_name(words[:end].rstrip()) + "…"
        if len(cut) <= room:
            return cut
    return "…"


def _escaped_name(name: str) -> str:
    return _MARKDOWN.sub(r"\\\1", name).replace("@", "@\u200b")


@dataclass
class _Bucket:
    remaining: int
    reset_at: float


class RateLimits:
    """Discord's rate-limit state for one client: buckets and the global limit.

    ``route`` names an endpoint (``POST /channels/{id}/messages``), ``major`` its major
    parameter (the channel or webhook id). ``clock`` is monotonic seconds.
    """

    def __init__(self, clock: Callable[[], float], global_rate: float = 50.0) -> None:
        self._clock = clock
        self._rate = global_rate
        self._tokens = global_rate
        self._refilled = clock()
        self._global_until = 0.0
        self._bucket_of: dict[str, str] = {}
        self._buckets: dict[str, _Bucket] = {}

    def _key(self, route: str, major: str) -> str:
        return f"{self._bucket_of.get(route, route)}:{major}"

    def delay(self, route: str, major: str) -> float:
        """Seconds to wait before this request may go. When 0, a slot is taken."""
        now = self._clock()
        if self._global_until > now:
            return self._global_until - now
        bucket = self._buckets.get(self._key(route, major))
        if bucket is not None and bucket.remaining <= 0 and bucket.reset_at > now:
            return bucket.reset_at - now
        self._tokens = min(self._rate, self._tokens + (now - self._refilled) * self._rate)
        self._refilled = now
        if self._tokens < 1:
            return (1 - self._tokens) / self._rate
        self._tokens -= 1
        if bucket is not None:
            if bucket.reset_at <= now:
                self._buckets.pop(self._key(route, major))
            else:
                bucket.remaining -= 1
        return 0.0

    def update(self, route: str, major: str, headers: Mapping[str, str]) -> None:
        """Learn from a response's ``X-RateLimit-*`` headers."""
        name = headers.get("x-ratelimit-bucket")
        if name:
            self._bucket_of[route] = name
        remaining = headers.get("x-ratelimit-remaining")
        reset_after = headers.get("x-ratelimit-reset-after")
        if remaining is None or reset_after is None:
            return
        try:
            left, pause = int(remaining), float(reset_after)
        except ValueError:
            return
        self._buckets[self._key(route, major)] = _Bucket(left, self._clock() + pause)

    def limited(self, route: str, major: str, retry_after: float, is_global: bool) -> None:
        """Record a 429: the bucket (or, when ``is_global``, everything) waits."""
        until = self._clock() + retry_after
        if is_global:
            self._global_until = max(self._global_until, until)
        else:
            self._buckets[self._key(route, major)] = _Bucket(0, until)


#: Advice for Discord's JSON error codes that say more than the status
#: (https://discord.com/developers/docs/topics/opcodes-and-status-codes#json).
CODE_ADVICE: dict[int, str] = {
    50007: "{what} does not take direct messages from the bot (they share no server with "
    "it, or turned off direct messages from server members).",
    10013: "{what} does not exist; check the user id.",
    50033: "{what} cannot get a direct message (not a valid recipient); check the user id.",
    # the edit of a message sent until done, once it is done
    10008: "the message to mark done in {what} is gone (deleted); there is nothing to edit.",
    50005: "the message in {what} was posted by someone else; it cannot be marked done there.",
}


def reminder_row(schedule_id: int) -> dict[str, Any]:
    """The action row under a reminder: Snooze 15 min, 1 h, tomorrow, and Done
    (buttons of style secondary, Done success)."""
    return {
        "type": 1,
        "components": [
            {
                "type": 2,
                "style": 3 if choice == reminders.DONE else 2,
                "label": reminders.label(choice),
                "custom_id": reminders.discord_custom_id(choice, schedule_id),
            }
            for choice in reminders.CHOICES
        ],
    }


def done_row(job_id: int) -> dict[str, Any]:
    """The action row under a message sent until done: one Done button (style success,
    https://discord.com/developers/docs/components/reference#button)."""
    return {
        "type": 1,
        "components": [
            {"type": 2, "style": 3, "label": "Done", "custom_id": f"{DONE_CUSTOM_PREFIX}{job_id}"}
        ],
    }


def _not_an_id(options: Mapping[str, Any]) -> DeliveryResult | None:
    """The permanent result for a ``reply_to``, ``edit_of`` or ``done_button`` option
    that is no id (a snowflake; a job id), else None."""
    for key, what in ((REPLY_TO, "The message to reply to"), (EDIT_OF, "The message to edit")):
        value = options.get(key)
        if value is not None and not _SNOWFLAKE.match(str(value)):
            return DeliveryResult.permanent(
                f"{what} {str(value)[:40]!r} is not a Discord message id: the message "
                "cannot be found again."
            )
    job = options.get(DONE_BUTTON)
    if job is not None and (isinstance(job, bool) or not str(job).isdigit()):
        said = str(job)[:40]
        return DeliveryResult.permanent(f"The Done button's job id {said!r} is not a number.")
    return None


class _DiscordHTTP(Channel):
    """What both Discord channels share: the HTTP client, rate limits, classification.

    ``http`` is the process's shared client (by default one of its own); ``guarded``
    sends through its network guard (member-given webhook URLs)."""

    #: status -> advice; ``{what}`` is the destination in words.
    advice: ClassVar[Mapping[int, str]] = {}

    def __init__(
        self,
        *,
        timeout: float = 30.0,
        connect_timeout: float = 5.0,
        max_wait: float = 5.0,
        global_rate: float = 50.0,
        clock: Callable[[], float] = time.monotonic,
        sleep: Sleep = asyncio.sleep,
        headers: Mapping[str, str] | None = None,
        http: HTTPClient | None = None,
        guarded: bool = False,
    ) -> None:
        self.http = http or HTTPClient()
        self._guarded = guarded
        self._timeout = Timeout(timeout, connect_timeout)
        self._headers = {"User-Agent": USER_AGENT, **(headers or {})}
        self._limits = RateLimits(clock, global_rate)
        self._max_wait = max_wait
        self._sleep = sleep
        #: Whether the API answers as Discord's (``/readyz``); None: not watched.
        self.api_health: ApiHealth | None = None

    async def close(self) -> None:
        """Close the HTTP connection pools."""
        await self.http.close()

    async def _request(
        self, method: str, url: str, route: str, major: str, what: str, **kwargs: Any
    ) -> Answer | DeliveryResult:
        """Send one request under the rate limits. Returns the answer, or a retry
        result for a long rate-limit wait, a timeout or a network failure."""
        for _ in range(10):
            wait = self._limits.delay(route, major)
            if wait <= 0:
                break
            if wait > self._max_wait:
                return DeliveryResult.retry(
                    f"Discord's rate limit for {what} is used up.",
                    retry_after=wait,
                )
            await self._sleep(wait)
        else:
            return DeliveryResult.retry(f"Discord's rate limit for {what} is busy.", retry_after=1)
        try:
            response = await self.http.request(
                method,
                url,
                guarded=self._guarded,
                timeouts=self._timeout,
                headers=self._headers,
                **kwargs,
            )
        except Refused as exc:  # the network guard (member-given webhook URLs)
            return DeliveryResult.permanent(str(exc))
        except TimedOut:
            return DeliveryResult.retry(f"Discord did not answer in time for {what}.")
        except Unreachable as exc:
            return DeliveryResult.retry(f"Could not reach Discord ({exc}).")
        self._limits.update(route, major, response.headers)
        if response.status == 429:
            data = _json(response)
            pause = _retry_after(response, data)
            self._limits.limited(route, major, pause, _global(response, data))
        return response

    def _not_json(self, url: str, response: Answer) -> str:
        """The sentence for an answer from ``url`` that is not JSON."""
        return not_json("Discord", url, response.status, response.headers.get("content-type", ""))

    def _classify(self, response: Answer, what: str, url: str = "") -> DeliveryResult:
        """ok (message id), retry (429, 5xx, an answer that is not JSON) or permanent
        (other 4xx, a 4xx that is not JSON) with advice; ``url``: where it was asked."""
        status = response.status
        try:
            parsed = response.json()
        except ValueError:
            parsed = None
        if status < 500 and status not in (204, 429) and not isinstance(parsed, dict):
            kind = response.headers.get("content-type", "")
            sentence = self._not_json(url, response)
            return not_the_api(self.api_health, sentence, url=url, status=status, content_type=kind)
        if self.api_health is not None and status < 500:
            self.api_health.answered()
        data: dict[str, Any] = parsed if isinstance(parsed, dict) else {}
        if 200 <= status < 300:
            message_id = data.get("id")
            return DeliveryResult.ok(status, str(message_id) if message_id else None)
        if status == 429:
            scope = "the bot everywhere" if _global(response, data) else what
            return DeliveryResult.retry(
                f"Discord is rate limiting {scope}.",
                status,
                _retry_after(response, data),
            )
        if status >= 500:
            return DeliveryResult.retry(f"Discord answered {status}.", status)
        said = str(data.get("message") or response.reason)
        if "code" in data:
            said += f" (code {data['code']})"
        code = data.get("code")
        by_code = CODE_ADVICE.get(code) if isinstance(code, int) else None
        if by_code is not None:
            return DeliveryResult.permanent(
                f"Discord said {said}: " + by_code.format(what=what), status
            )
        if status in self.advice:
            return DeliveryResult.permanent(
                f"Discord said {said}: " + self.advice[status].format(what=what), status
            )
        errors = f" {truncate(str(data['errors']), 500)}" if data.get("errors") else ""
        return DeliveryResult.permanent(
            f"Discord refused the message for {what}: {said}.{errors} Edit the schedule.",
            status,
        )


class DiscordChannel(_DiscordHTTP):
    """Posts as a bot to Discord channels.

    ``token`` may be None (Discord not configured): ``send`` returns a permanent result
    saying so and ``validate`` checks nothing. ``max_wait`` is the longest rate-limit
    pause taken inside ``send``; ``clock`` (monotonic seconds) and ``sleep`` are for tests.
    """

    kind = "discord"
    uri = UriSyntax(
        "discord",
        "discord:123456789012345678",
        _check_target,
        direct_messages=True,
        settings=("discord_bot_token", "discord_api_url"),
    )
    #: Discord allows 5 messages per 5 seconds per channel.
    rate_limit = RateLimit(rate=1.0, burst=5.0)
    advice: ClassVar[Mapping[int, str]] = {
        401: "the Discord bot token is not valid; an admin must update DISCORD_BOT_TOKEN.",
        403: "the bot cannot post in {what}; give it the View Channel and Send Messages "
        "permissions there (or invite it to that server).",
        404: "{what} does not exist or the bot cannot see it; check the channel id.",
    }

    def __init__(
        self,
        token: str | SecretStr | None,
        *,
        base_url: str = DEFAULT_BASE_URL,
        timeout: float = 30.0,
        connect_timeout: float = 5.0,
        max_wait: float = 5.0,
        global_rate: float = 50.0,
        clock: Callable[[], float] = time.monotonic,
        sleep: Sleep = asyncio.sleep,
        http: HTTPClient | None = None,
    ) -> None:
        plain = reveal(token)
        super().__init__(
            timeout=timeout,
            connect_timeout=connect_timeout,
            max_wait=max_wait,
            global_rate=global_rate,
            clock=clock,
            sleep=sleep,
            headers={"Authorization": f"Bot {plain}"} if plain else {},
            http=http,  # the API the admin configured: not through the guard
        )
        self._configured = bool(plain)
        self._base = base_url.rstrip("/")
        self.api_health = ApiHealth("Discord") if plain else None
        #: user id -> the id of the bot's DM channel with them.
        self._dm_channels: dict[str, str] = {}

    def _not_json(self, url: str, response: Answer) -> str:
        kind = response.headers.get("content-type", "")
        return not_json("Discord", url or self._base, response.status, kind, "DISCORD_API_URL")

    def payload(self, delivery: Delivery) -> dict[str, Any]:
        """The JSON body of the create-message request for ``delivery``."""
        options = delivery.options
        body: dict[str, Any] = {
            "content": credited(delivery.body, delivery.scheduled_by),
            "nonce": discord_nonce(delivery.idempotency_key),
            "enforce_nonce": True,
            "allowed_mentions": allowed_mentions(delivery),
        }
        if options.get("embeds") is not None:
            body["embeds"] = options["embeds"]
        reply_to = options.get(REPLY_TO)
        # a nag in a direct message is no reminder: no Snooze, no "asked me to remind you"
        if delivery.destination.is_dm and not options.get(reminders.NOTICE) and not reply_to:
            prefix = reminders.asked_prefix(delivery.destination, options)
            body["content"] = prefix + delivery.body
            body["components"] = [reminder_row(delivery.schedule_id)]
        if options.get(DONE_BUTTON) is not None:
            body["components"] = [done_row(int(options[DONE_BUTTON]))]
        if reply_to:
            # not failing: a nag whose message was deleted still reaches the channel
            body["message_reference"] = {"message_id": str(reply_to), "fail_if_not_exists": False}
        return body

    def edit_payload(self, delivery: Delivery) -> dict[str, Any]:
        """The JSON body of the edit-message request of an ``edit_of`` delivery: its
        text (with its "scheduled by" line, as the message had it) and no components."""
        return {
            "content": credited(delivery.body, delivery.scheduled_by),
            "components": [],
            "allowed_mentions": allowed_mentions(delivery),
        }

    async def send(self, delivery: Delivery) -> DeliveryResult:
        """Create one message (or, with ``edit_of``, edit one). Returns ok with the
        message id; retry for 429 (with ``retry_after``), 5xx, timeouts and network
        failures; permanent for 401/403/404, other 4xx, an option that is no id and a
        message over 2,000 characters. Never raises for what Discord does."""
        if not self._configured:
            return DeliveryResult.permanent(
                "Discord is not configured: an admin must set DISCORD_BOT_TOKEN."
            )
        refused = _not_an_id(delivery.options)
        if refused is not None:
            return refused
        channel = delivery.destination.target
        what = f"Discord channel {channel}"
        edit_of = delivery.options.get(EDIT_OF)
        payload = self.edit_payload(delivery) if edit_of else self.payload(delivery)
        if len(payload["content"]) > MAX_CONTENT:
            return _too_long(payload["content"], credited=delivery.scheduled_by is not None)
        if delivery.destination.is_dm:
            user = channel[1:]
            what = f"Discord user {user}"
            opened = await self.open_dm(user)
            if isinstance(opened, DeliveryResult):
                return opened
            channel = opened
        url = f"{self._base}/channels/{channel}/messages"
        if edit_of:
            url = f"{url}/{edit_of}"
            route = "PATCH /channels/{id}/messages/{id}"
            answer = await self._request("PATCH", url, route, channel, what, json=payload)
        else:
            route = "POST /channels/{id}/messages"
            answer = await self._request("POST", url, route, channel, what, json=payload)
        if isinstance(answer, DeliveryResult):
            return answer
        result = self._classify(answer, what, url)
        if delivery.destination.is_dm and result.outcome is not Outcome.OK:
            self._dm_channels.pop(delivery.destination.target[1:], None)
        return result

    async def open_dm(self, user: str) -> str | DeliveryResult:
        """The id of the bot's DM channel with ``user`` (created once per process with
        ``POST /users/@me/channels``), or the retry/permanent result."""
        known = self._dm_channels.get(user)
        if known is not None:
            return known
        what = f"Discord user {user}"
        url = f"{self._base}/users/@me/channels"
        answer = await self._request(
            "POST", url, "POST /users/@me/channels", "@me", what, json={"recipient_id": user}
        )
        if isinstance(answer, DeliveryResult):
            return answer
        result = self._classify(answer, what, url)
        if result.outcome is not Outcome.OK:
            return result
        channel = _json(answer).get("id")
        if not isinstance(channel, str) or not channel.isdigit():
            return DeliveryResult.retry(f"Discord opened no DM channel with {what}.", answer.status)
        if len(self._dm_channels) > 10_000:  # a bound, not a policy: reopening is cheap
            self._dm_channels.clear()
        self._dm_channels[user] = channel
        return channel

    async def validate(self, destination: Destination) -> None:
        """When a token is configured, check that the bot can see the channel
        (``GET /channels/{id}``). Raises InvalidInput on 401/403/404 with what to do;
        does nothing when Discord cannot be asked (network trouble, rate limit)."""
        if not self._configured:
            return
        if destination.is_dm:
            opened = await self.open_dm(destination.target[1:])
            if isinstance(opened, DeliveryResult) and opened.outcome is Outcome.PERMANENT:
                raise InvalidInput(str(opened.error))
            return
        channel = destination.target
        what = f"Discord channel {channel}"
        url = f"{self._base}/channels/{channel}"
        answer = await self._request("GET", url, "GET /channels/{id}", channel, what)
        if isinstance(answer, Answer) and answer.status in self.advice:
            raise InvalidInput(str(self._classify(answer, what, url).error))

    async def channels_named(self, name: ChannelName) -> list[str]:
        """The ids of the text and announcement channels named ``name.name`` on the
        server ``name.server`` (``GET /guilds/{id}/channels``,
        https://discord.com/developers/docs/resources/guild#get-guild-channels). The
        :class:`~core.destinations.ChannelDirectory` of Discord.

        Raises InvalidInput when no token is configured, the server is not one the bot
        is on, or Discord cannot be asked."""
        if not self._configured:
            raise InvalidInput(names_need_connection("discord"))
        server = name.server or ""
        if not _SNOWFLAKE.match(server):
            raise InvalidInput(
                f"{server!r} is not a Discord server id: write discord:#{name.name}@<server "
                "id> (Developer Mode, right-click the server, Copy Server ID)."
            )
        what = f"Discord server {server}"
        answer = await self._request(
            "GET",
            f"{self._base}/guilds/{server}/channels",
            "GET /guilds/{id}/channels",
            server,
            what,
        )
        if isinstance(answer, DeliveryResult):
            raise InvalidInput(
                f"Herald could not look up `#{name.name}` with Discord just now "
                f"({answer.error}); try again in a minute, or use the channel id."
            )
        if answer.status in (403, 404) and _json(answer):  # Discord's own refusal, not a page
            raise InvalidInput(
                f"Herald is not on Discord server {server} (or cannot see its channels): "
                "invite the bot there, or use the channel id, e.g. discord:123456789012345678."
            )
        if not 200 <= answer.status < 300:
            url = f"{self._base}/guilds/{server}/channels"
            raise InvalidInput(str(self._classify(answer, what, url).error))
        try:
            channels = answer.json()
        except ValueError:
            channels = None
        if not isinstance(channels, list):
            raise InvalidInput(
                f"Herald could not look up `#{name.name}` with Discord just now (an answer "
                "that is not a list of channels); try again, or use the channel id."
            )
        return [
            str(channel["id"])
            for channel in channels
            if isinstance(channel, dict)
            and channel.get("type") in TEXT_CHANNEL_TYPES
            and str(channel.get("name", "")).lower() == name.name
            and channel.get("id")
        ]

    async def member_sees(self, destination: Destination, user: str, *, tenant: str) -> bool:
        """Whether the Discord user ``user`` can see the channel ``destination`` (its
        agenda is theirs to read): the :class:`~core.destinations.ChannelViewers` of
        Discord. The channel's server must be ``tenant``'s (``discord:<server id>``;
        another server's channel, a direct message: False); then the member's View
        Channel permission there, computed as Discord documents it
        (:func:`channel_permissions`) from ``GET /channels/{id}``, ``GET /guilds/{id}``
        (its owner and roles) and ``GET /guilds/{id}/members/{user}`` (not a member:
        False). A thread is seen through its parent channel; a private one also needs
        Manage Threads there or to be in it (``GET /channels/{id}/thread-members/{user}``).

        Raises InvalidInput, in one sentence, when no token is configured or Discord
        cannot be asked (an error, no answer, a refusal)."""
        if not self._configured:
            raise InvalidInput(
                "Herald cannot ask Discord who can see that channel: its Discord connection "
                "(DISCORD_BOT_TOKEN) is not set up; ask in the channel "
                "(`/schedule list channel:` there)."
            )
        server = tenant.removeprefix("discord:")
        if destination.is_dm or not _SNOWFLAKE.match(server) or not _SNOWFLAKE.match(user):
            return False
        channel_id = destination.target.split("/", 1)[0]
        channel = await self._lookup(f"/channels/{channel_id}", channel_id, channel_id)
        if channel is None or str(channel.get("guild_id") or "") != server:
            return False  # a direct message, or another server's channel
        thread = channel.get("type") in THREAD_TYPES
        parent = channel
        if thread:
            parent_id = str(channel.get("parent_id") or "")
            found = None
            if _SNOWFLAKE.match(parent_id):
                found = await self._lookup(f"/channels/{parent_id}", parent_id, channel_id)
            if found is None:
                return False  # a thread whose channel is gone
            parent = found
        guild = await self._lookup(f"/guilds/{server}", server, channel_id)
        member = await self._lookup(f"/guilds/{server}/members/{user}", server, channel_id)
        if guild is None or member is None:
            return False  # not a member of that server
        perms = channel_permissions(guild, member, user, parent)
        if not perms & VIEW_CHANNEL:
            return False
        if thread and channel.get("type") == PRIVATE_THREAD and not perms & MANAGE_THREADS:
            path = f"/channels/{channel_id}/thread-members/{user}"
            return await self._lookup(path, channel_id, channel_id) is not None
        return True

    async def _lookup(self, path: str, major: str, channel_id: str) -> dict[str, Any] | None:
        """``GET {base}{path}``: the object Discord answers, None for its 404 (an unknown
        member, channel or thread member); InvalidInput for anything else."""
        url = f"{self._base}{path}"
        route = "GET " + re.sub(r"/\d+", "/{id}", path)
        sorry = f"Herald could not ask Discord who can see <#{channel_id}>"
        answer = await self._request("GET", url, route, major, f"Discord channel {channel_id}")
        if isinstance(answer, DeliveryResult):
            raise InvalidInput(f"{sorry} just now ({answer.error}): try again in a minute.")
        data = _json(answer)
        if answer.status == 404 and data:  # Discord's own "Unknown …", not a page
            return None
        if 200 <= answer.status < 300 and data:
            return data
        if answer.status == 403 and data:
            raise InvalidInput(
                f"Herald cannot see <#{channel_id}> (Discord said {data.get('message')!s:.80}): "
                "invite the bot there, or ask in the channel (`/schedule list channel:` there)."
            )
        raise InvalidInput(f"{sorry}: {self._classify(answer, 'that channel', url).error}")


#: Permission bits (https://discord.com/developers/docs/topics/permissions#permissions-bitwise-permission-flags).
ADMINISTRATOR = 1 << 3
VIEW_CHANNEL = 1 << 10
MANAGE_THREADS = 1 << 34
ALL_PERMISSIONS = (1 << 64) - 1
#: ANNOUNCEMENT_THREAD, PUBLIC_THREAD, PRIVATE_THREAD (channel types).
THREAD_TYPES = (10, 11, 12)
PRIVATE_THREAD = 12


def _bits(value: Any) -> int:
    """A permission set as Discord serialises it (a string of digits), as an int."""
    try:
        return int(str(value or "0"))
    except ValueError:
        return 0


def base_permissions(guild: Mapping[str, Any], member: Mapping[str, Any], user: str) -> int:
    """A member's permissions in the server, before any channel's overwrites, as
    Discord's "Permissions" topic computes them: the owner has all; else @everyone's
    (the role whose id is the server's) and each of the member's roles', combined; with
    Administrator, all."""
    if str(guild.get("owner_id")) == user:
        return ALL_PERMISSIONS
    roles = {str(r.get("id")): _bits(r.get("permissions")) for r in guild.get("roles") or []}
    permissions = roles.get(str(guild.get("id")), 0)
    for role in member.get("roles") or []:
        permissions |= roles.get(str(role), 0)
    if permissions & ADMINISTRATOR:
        return ALL_PERMISSIONS
    return permissions


def channel_permissions(
    guild: Mapping[str, Any], member: Mapping[str, Any], user: str, channel: Mapping[str, Any]
) -> int:
    """A member's permissions in ``channel``, as Discord's "Permissions" topic computes
    them (https://discord.com/developers/docs/topics/permissions#permission-overwrites):
    the base permissions (:func:`base_permissions`; Administrator: all), then the
    channel's overwrites in order: @everyone's deny and allow, the member's roles'
    denies then allows (all of them together), the member's own deny and allow."""
    permissions = base_permissions(guild, member, user)
    if permissions & ADMINISTRATOR:
        return ALL_PERMISSIONS
    overwrites = {str(o.get("id")): o for o in channel.get("permission_overwrites") or []}
    everyone = overwrites.get(str(guild.get("id")))
    if everyone is not None:
        permissions &= ~_bits(everyone.get("deny"))
        permissions |= _bits(everyone.get("allow"))
    allow = deny = 0
    for role in member.get("roles") or []:
        found = overwrites.get(str(role))
        if found is not None and found.get("type", 0) == 0:
            allow |= _bits(found.get("allow"))
            deny |= _bits(found.get("deny"))
    permissions &= ~deny
    permissions |= allow
    own = overwrites.get(user)
    if own is not None and own.get("type", 1) == 1:
        permissions &= ~_bits(own.get("deny"))
        permissions |= _bits(own.get("allow"))
    return permissions


class DiscordWebhookChannel(_DiscordHTTP):
    """Executes Discord channel webhooks; the URL (with its token) is the destination.

    Error texts name the webhook by id only: the URL's token never appears. Takes the
    keyword arguments of :class:`DiscordChannel` but no token and no base URL.

    A message sent until done goes without its Done button: a webhook made in a
    channel's settings is no application's, and Discord drops the interactive
    components such a webhook sends (execute-webhook, ``components``:
    https://discord.com/developers/docs/resources/webhook#execute-webhook), so it is
    marked done elsewhere (the console, another destination's button). Its nags are
    plain messages (execute-webhook takes no ``message_reference``); its Done edit
    edits the webhook's own message. Every
    connection goes through the network guard: ``http``'s, else ``guard``, else the
    one with ``allow_private`` (which lets internal addresses through: tests, private
    deployments).
    """

    kind = "discord-webhook"
    #: The URL's path carries the webhook's token.
    uri = UriSyntax(
        "discord-webhook",
        "discord-webhook:https://discord.com/api/webhooks/ID/TOKEN",
        _check_webhook,
        redact=redact_url_path,
        owner_view=owner_url_view,
        settings=("webhook_allow_private",),
    )
    #: Discord allows 5 webhook requests per 2 seconds and 30 messages a minute.
    rate_limit = RateLimit(rate=0.5, burst=5.0)
    advice: ClassVar[Mapping[int, str]] = {
        401: "{what} has an invalid token; paste its URL again from the channel settings.",
        403: "{what} may not post there; check the channel's permissions.",
        404: "{what} was deleted; create a new one in the channel settings "
        "(Integrations → Webhooks) and update the destination.",
    }

    def __init__(
        self,
        *,
        allow_private: bool = False,
        guard: Guard | None = None,
        http: HTTPClient | None = None,
        **kwargs: Any,
    ) -> None:
        http = http or HTTPClient(guard=guard or Guard(allow_private=allow_private))
        self._guard = http.guard
        super().__init__(http=http, guarded=True, **kwargs)

    async def _refused(self, url: str) -> str | None:
        return await self._guard.refusal(url)

    def _not_json(self, url: str, response: Answer) -> str:
        """The sentence for a webhook URL that answers something that is not JSON (its
        path, which carries the webhook's token, hidden)."""
        return (
            f"The Discord webhook at {shown_url(url, hide_path=True)} answered HTTP "
            f"{response.status} with {content_kind(response.headers.get('content-type', ''))}"
            ", not JSON: check the webhook's URL (the channel's Integrations settings)."
        )

    def payload(self, delivery: Delivery) -> dict[str, Any]:
        """The JSON body of the execute-webhook request for ``delivery``."""
        body: dict[str, Any] = {
            "content": delivery.body,
            "allowed_mentions": allowed_mentions(delivery),
        }
        for name in ("username", "avatar_url", "embeds"):
            if delivery.options.get(name) is not None:
                body[name] = delivery.options[name]
        return body

    async def send(self, delivery: Delivery) -> DeliveryResult:
        """Execute the webhook (``?wait=true``), or with ``edit_of`` edit the message it
        sent (``PATCH …/messages/{id}``). Same classification as
        :meth:`DiscordChannel.send`. Never raises for what Discord does."""
        url = delivery.destination.target
        webhook_id = _webhook_id(url)
        if webhook_id is None:
            return DeliveryResult.permanent(
                "The destination is not a Discord webhook URL: copy it from the channel "
                "settings (https://discord.com/api/webhooks/ID/TOKEN)."
            )
        refused = _not_an_id(delivery.options)
        if refused is not None:
            return refused
        what = f"Discord webhook {webhook_id}"
        if len(delivery.body) > MAX_CONTENT:
            return _too_long(delivery.body)
        params: dict[str, str] = {"wait": "true"}
        if delivery.options.get("thread_id"):
            params["thread_id"] = str(delivery.options["thread_id"])
        edit_of = delivery.options.get(EDIT_OF)
        if edit_of:
            del params["wait"]
            url = f"{url.rstrip('/')}/messages/{edit_of}"
            body = {"content": delivery.body, "allowed_mentions": allowed_mentions(delivery)}
            route = "PATCH /webhooks/{id}/{token}/messages/{id}"
            answer = await self._request(
                "PATCH", url, route, webhook_id, what, params=params, json=body
            )
        else:
            route = "POST /webhooks/{id}/{token}"
            answer = await self._request(
                "POST", url, route, webhook_id, what, params=params, json=self.payload(delivery)
            )
        if isinstance(answer, DeliveryResult):
            return answer
        return self._classify(answer, what, url)

    async def validate(self, destination: Destination) -> None:
        """Check that the webhook exists (``GET`` on its URL). Raises InvalidInput for a
        malformed URL or a 401/403/404 answer; does nothing when Discord cannot be asked."""
        url = destination.target
        webhook_id = _webhook_id(url)
        if webhook_id is None:
            raise InvalidInput(
                "That is not a Discord webhook URL: copy it from the channel settings "
                "(https://discord.com/api/webhooks/ID/TOKEN)."
            )
        refused = await self._refused(url)
        if refused is not None:
            raise InvalidInput(refused)
        what = f"Discord webhook {webhook_id}"
        answer = await self._request("GET", url, "GET /webhooks/{id}/{token}", webhook_id, what)
        if isinstance(answer, Answer) and answer.status in self.advice:
            raise InvalidInput(str(self._classify(answer, what, url).error))


def _too_long(body: str, *, credited: bool = False) -> DeliveryResult:
    what = 'The message, with its "scheduled by" line,' if credited else "The message"
    return DeliveryResult.permanent(
        f"{what} has {len(body):,} characters and Discord allows {MAX_CONTENT:,}: "
        "shorten it or split it into several schedules."
    )


def _webhook_id(url: str) -> str | None:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    match = _WEBHOOK_PATH.search(parts.path)
    return match.group(1) if match else None


def _json(response: Answer) -> dict[str, Any]:
    try:
        data = response.json()
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def _retry_after(response: Answer, data: Mapping[str, Any]) -> float:
    """A 429's pause in seconds: the JSON ``retry_after``, else ``Retry-After``, else 1."""
    value = data.get("retry_after")
    if isinstance(value, int | float) and not isinstance(value, bool):
        return max(0.0, float(value))
    return parse_retry_after(response.headers.get("retry-after")) or 1.0


def _global(response: Answer, data: Mapping[str, Any]) -> bool:
    """Whether a 429 is Discord's global limit rather than one bucket's."""
    header = response.headers.get("x-ratelimit-global", "").lower() == "true"
    return bool(data.get("global")) or header
