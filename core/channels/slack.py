"""Slack channels (``slack:C0123``, thread reply ``slack:C0123/1700000000.000100``) and
direct messages from the bot (``slack:@U0123``).

Posts with the Web API method ``chat.postMessage``, spoken directly over the process's
shared HTTP client (:mod:`core.http_client`, aiohttp, as slack_sdk's async client): ``core``
may not import a chat SDK (see the import-linter contract in pyproject.toml), and the wire
protocol is small (a JSON POST with a bearer token; ``{"ok": false, "error": code}`` on
failure; HTTP 429 with ``Retry-After`` when rate limited).

Options (``Delivery.options``): ``blocks`` (Block Kit, a list or its JSON text; the plain
text stays as the notification fallback), ``username`` and ``icon_url`` / ``icon_emoji``
(a custom sender; needs the ``chat:write.customize`` scope), ``unfurl_links``,
``unfurl_media`` and ``reply_broadcast``. Every message carries the job's idempotency key
in its metadata (``event_type`` ``herald_delivery``) so a delivery can be found again.

A direct message first opens the conversation with ``conversations.open`` (``users``;
https://api.slack.com/methods/conversations.open, scope ``im:write``), remembered per
user for the life of the process, then posts into it. It carries Snooze and Done
buttons (:mod:`core.reminders`; an ``actions`` block,
https://api.slack.com/reference/block-kit/blocks#actions) under the text, in section
blocks of at most 3,000 characters each.

A message sent until done (:mod:`core.until_done`) uses three more options, which the
dispatcher sets: ``done_button`` (the occurrence's job id: a Done button,
:data:`DONE_ACTION_ID`, under the message; in a direct message it replaces Snooze and
Done, whose Done means "seen" to a reminder), ``reply_to`` (a message id ``CHANNEL/TS``:
a nag posted in that message's thread, into the channel the id names, so a direct
message needs no ``conversations.open``) and ``edit_of`` (a message id: instead of
posting, ``chat.update`` gives that message the delivery's text as sections and no
buttons; https://docs.slack.dev/reference/methods/chat.update).
"""

from __future__ import annotations

import json
import logging
import re
import time
from typing import Any, NamedTuple
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import SecretStr

from core import limits, reminders
from core.channels.answers import ApiHealth, not_json, not_the_api
from core.channels.base import Channel, Delivery, DeliveryResult, Outcome
from core.channels.webhook import USER_AGENT, parse_retry_after, reveal
from core.destinations import ChannelName, Destination, UriSyntax, names_need_connection
from core.errors import InvalidInput
from core.http_client import HTTPClient, TimedOut, Timeout, Unreachable
from core.ratelimit import RateLimit
from core.until_done import DONE_BUTTON, EDIT_OF, REPLY_TO

log = logging.getLogger(__name__)

DEFAULT_BASE_URL = "https://slack.com/api/"
METADATA_EVENT = "herald_delivery"
PASSED_OPTIONS = (
    "username",
    "icon_url",
    "icon_emoji",
    "unfurl_links",
    "unfurl_media",
    "reply_broadcast",
)
#: The ``action_id`` of the Done button under a message sent until done; its ``value``
#: is the occurrence's job id, its block's ``block_id`` ``herald_done:<job id>``.
#: Members' own blocks may not use ``herald…`` ids (core.cases.messages), so a click on
#: it is always Herald's button.
DONE_ACTION_ID = "herald_done"
DONE_BLOCK_PREFIX = "herald_done:"
#: Slack error codes worth another try (the rest are permanent).
TRANSIENT = frozenset(
    {"ratelimited", "internal_error", "fatal_error", "service_unavailable", "request_timeout"}
)
_AUTH = (
    "The Slack bot token was refused ({code}): ask an admin to reinstall the Slack app "
    "and update SLACK_BOT_TOKEN."
)
#: What to tell a person for each permanent error code. ``{channel}`` is the channel id.
ADVICE: dict[str, str] = {
    "channel_not_found": (
        "Slack channel {channel} was not found: check the id, and for a private channel "
        "invite the bot there with /invite @Herald."
    ),
    "not_in_channel": (
        "The bot is not in Slack channel {channel}: invite it with /invite @Herald in that channel."
    ),
    "is_archived": (
        "Slack channel {channel} is archived: unarchive it or point the schedule at "
        "another channel."
    ),
    "invalid_auth": _AUTH,
    "not_authed": _AUTH,
    "token_revoked": _AUTH,
    "token_expired": _AUTH,
    "account_inactive": (
        "The Slack app's bot user is deactivated or the app was uninstalled "
        "(account_inactive): ask an admin to reinstall the app and update SLACK_BOT_TOKEN."
    ),
    "msg_too_long": (
        "The message is too long for Slack: shorten it (at most 40,000 characters) or "
        "split it into several schedules."
    ),
    "no_text": "The message is empty: give it some text or blocks.",
    "invalid_blocks": "Slack refused the Block Kit blocks (invalid_blocks): fix them in "
    "Block Kit Builder and edit the schedule.",
    "invalid_blocks_format": "The Block Kit blocks are not a valid list "
    "(invalid_blocks_format): edit the schedule's blocks.",
    "too_many_attachments": "The message has too many attachments: remove some.",
    "restricted_action": "A Slack workspace setting stops the bot from posting in "
    "{channel}: ask a workspace admin to allow it.",
    "restricted_action_read_only_channel": "Slack channel {channel} is read-only for the "
    "bot: ask a channel manager to let it post.",
    "cannot_reply_to_message": "Slack does not allow replies to that thread's message: "
    "post to the channel instead.",
    # conversations.open (https://api.slack.com/methods/conversations.open#errors)
    "user_not_found": "Slack user {channel} was not found: check the member id "
    "(the person's profile, ⋮, Copy member ID).",
    "user_not_visible": "The bot cannot see Slack user {channel} (another workspace, or a "
    "guest it shares no channel with): remind someone of this workspace.",
    "user_disabled": "Slack user {channel} is deactivated: nobody reads their messages.",
    "cannot_dm_bot": "Slack user {channel} is a bot: Herald can only remind people.",
    "not_allowed_token_type": _AUTH,
    # chat.update (https://docs.slack.dev/reference/methods/chat.update#errors), the
    # edit of a message sent until done once it is done
    "message_not_found": "The Slack message to mark done in {channel} is gone (deleted): "
    "there is nothing to edit.",
    "cant_update_message": "Slack does not let the bot edit that message in {channel} "
    "(another author posted it): it cannot be marked done there.",
    "edit_window_closed": "The Slack message in {channel} can no longer be edited (the "
    "workspace's editing window has closed): it cannot be marked done there.",
}
#: Where each direct-message answer points: a user, not a channel.
_DM_USER_ERRORS = frozenset(
    {"user_not_found", "user_not_visible", "user_disabled", "cannot_dm_bot"}
)


#: The most blocks in a message (https://docs.slack.dev/reference/methods/chat.postMessage).
MAX_BLOCKS = limits.SLACK_MESSAGE_BLOCKS.size

#: The most ``conversations.list`` pages read for one name (999 channels each).
MAX_LIST_PAGES = 50
#: The most ``conversations.members`` pages read to find one member (999 each).
MAX_MEMBER_PAGES = 20
MEMBER_PAGE = 999

_CHANNEL_ID = re.compile(r"^[CGD][A-Z0-9]{2,}(/\d{10}\.\d{6})?$")
#: A message's id as :meth:`SlackChannel.send` returns it: ``CHANNEL/TS``.
_MESSAGE_ID = re.compile(r"^([CGD][A-Z0-9]{2,})/(\d{10}\.\d{6})$")
#: A Slack user id (``U…``, or ``W…`` for an Enterprise Grid org user).
_USER_ID = re.compile(r"^[UW][A-Z0-9]{1,30}$")
#: Seconds a member's profile zone (``users.info``) is kept.
ZONE_TTL = 300.0


def _check_target(raw: str, target: str) -> None:
    """A channel id, with a thread's timestamp after ``/`` for a reply, or ``@`` and
    a member id for a direct message. (A name, ``#deploys``, is looked up before a
    schedule is saved: :meth:`SlackChannel.channels_named`.)"""
    if target.startswith("@"):
        if not _USER_ID.match(target[1:]):
            raise InvalidInput(
                f"{raw!r} is not a Slack user: use the member id, e.g. slack:@U0123ABC "
                "(in Slack: the person's profile, ⋮, Copy member ID)."
            )
    elif not _CHANNEL_ID.match(target):
        raise InvalidInput(
            f"{raw!r} is not a Slack channel: use the channel id, e.g. slack:C0123ABC "
            "(thread reply: slack:C0123ABC/1700000000.000100; a direct message: "
            "slack:@U0123ABC)."
        )


class Unsendable(ValueError):
    """A delivery Herald cannot turn into a message Slack would take; the text says why,
    in one sentence. ``send`` makes it a permanent result."""


class NoRoomForCredit(Unsendable):
    """A message with blocks has no room left for its "scheduled by" line (Slack's 50
    blocks): it is not sent without it. core.limits refuses such a message when it is
    saved; only one saved before that check can get here."""


def message_ref(value: object, what: str) -> tuple[str, str]:
    """The channel and ``ts`` of a message id ``CHANNEL/TS`` (what ``send`` returns).
    Raises Unsendable naming ``what`` when it is not one."""
    match = _MESSAGE_ID.match(str(value))
    if match is None:
        raise Unsendable(
            f"{what} {str(value)[:60]!r} is not a Slack message id (CHANNEL/TS): "
            "the message cannot be found again."
        )
    return match.group(1), match.group(2)


def done_actions(job_id: int) -> dict[str, Any]:
    """The actions block with the Done button under a message sent until done
    (https://docs.slack.dev/reference/block-kit/blocks/actions-block); the value is the
    occurrence's job id, which :meth:`core.cases.Herald.mark_done` is given."""
    return {
        "type": "actions",
        "block_id": f"{DONE_BLOCK_PREFIX}{job_id}",
        "elements": [
            {
                "type": "button",
                "action_id": DONE_ACTION_ID,
                "text": {"type": "plain_text", "text": "Done"},
                "style": "primary",
                "value": str(job_id),
            }
        ],
    }


def _done_job(value: object) -> int:
    """The job id a ``done_button`` option carries; Unsendable when it is none."""
    if isinstance(value, bool) or not isinstance(value, int | str) or not str(value).isdigit():
        raise Unsendable(f"The Done button's job id {str(value)[:40]!r} is not a number.")
    return int(value)


def _room_for_done(blocks: list[Any], credited: bool) -> None:
    """Refuse blocks that leave no room for the Done button (and the "scheduled by"
    line when ``credited``) within Slack's 50, in one sentence saying how many fit."""
    added = 2 if credited else 1
    if len(blocks) + added <= MAX_BLOCKS:
        return
    what = 'the Done button and the "scheduled by" line' if credited else "the Done button"
    raise Unsendable(
        f"The message has {len(blocks)} blocks, leaving no room for {what} Herald adds "
        f"(Slack allows {MAX_BLOCKS}): schedule it again with at most "
        f"{MAX_BLOCKS - added} blocks."
    )


def credit(args: dict[str, Any], name: str) -> None:
    """Say under the message who scheduled it: a context block after the message's own
    blocks (https://docs.slack.dev/reference/block-kit/blocks/context-block), else a
    last line of its text. The name is plain text, escaped: no ``<@U…>`` mention (which
    would notify the owner at every send), no link, and ``link_names`` is never set
    (chat.postMessage), so ``@name`` notifies nobody. Never left out: raises
    NoRoomForCredit when the blocks leave no room for it (50, SLACK_MESSAGE_BLOCKS)."""
    name = " ".join(name.split())[:150]
    blocks = args.get("blocks")
    if isinstance(blocks, list) and blocks:
        if len(blocks) >= MAX_BLOCKS:
            raise NoRoomForCredit(
                f"The message has {len(blocks)} blocks, leaving no room for the "
                f'"scheduled by" line Herald adds (Slack allows {MAX_BLOCKS}): schedule it '
                f"again with at most {MAX_BLOCKS - 1} blocks."
            )
        # plain_text: shown as written, never a link
        text = {"type": "plain_text", "text": f"scheduled by @{name}", "emoji": False}
        args["blocks"] = [*blocks, {"type": "context", "elements": [text]}]
        return
    shown = name.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    line = f"scheduled by @{shown}"
    args["text"] = f"{args['text']}\n{line if '_' in shown else f'_{line}_'}"


class _Answer(NamedTuple):
    """A Web API answer with HTTP 200: its status, JSON body and the token's scopes."""

    status: int
    data: dict[str, Any]
    scopes: frozenset[str]


class SlackChannel(Channel):
    """Posts to Slack channels with a bot token (``xoxb-...``).

    ``token`` may be None (Slack not configured): ``send`` then returns a permanent
    result saying so and ``validate`` checks nothing. ``base_url`` ends with ``/``.
    ``http`` is the process's shared client (by default one of its own); Slack's API is
    the admin's choice, so it is not sent through the network guard.
    """

    kind = "slack"
    uri = UriSyntax(
        "slack",
        "slack:C0123ABC",
        _check_target,
        direct_messages=True,
        settings=("slack_bot_token", "slack_api_url"),
    )
    #: Slack allows about one message per second per channel, with short bursts.
    rate_limit = RateLimit(rate=1.0, burst=3.0)

    def __init__(
        self,
        token: str | SecretStr | None,
        *,
        base_url: str = DEFAULT_BASE_URL,
        timeout: float = 30.0,
        connect_timeout: float = 5.0,
        http: HTTPClient | None = None,
    ) -> None:
        self._token = reveal(token)
        self._base = base_url if base_url.endswith("/") else base_url + "/"
        self.http = http or HTTPClient()
        self._timeout = Timeout(timeout, connect_timeout)
        self._headers = {"Authorization": f"Bearer {self._token}", "User-Agent": USER_AGENT}
        #: user id -> the id of the bot's direct-message conversation with them.
        self._dm_channels: dict[str, str] = {}
        #: user id -> (when asked, monotonic; their profile's zone or None).
        self._zones: dict[str, tuple[float, str | None]] = {}
        #: Whether SLACK_API_URL answers as Slack's API (``/readyz``); None: no token.
        self.api_health = ApiHealth("Slack") if self._token else None

    async def close(self) -> None:
        """Close the HTTP connection pools."""
        await self.http.close()

    def payload(self, delivery: Delivery) -> dict[str, Any]:
        """The ``chat.postMessage`` arguments for ``delivery``.

        Raises ValueError when ``options["blocks"]`` is text that is not JSON, and
        Unsendable (a ValueError, NoRoomForCredit among them) when its blocks leave no
        room for what Herald adds or a ``reply_to`` / ``done_button`` option is not what
        it should be."""
        channel, _, thread_ts = delivery.destination.target.partition("/")
        options = delivery.options
        args: dict[str, Any] = {
            "channel": channel,
            "text": delivery.body,
            "metadata": {
                "event_type": METADATA_EVENT,
                "event_payload": {
                    "idempotency_key": delivery.idempotency_key,
                    "schedule_id": delivery.schedule_id,
                    "job_id": delivery.job_id,
                },
            },
        }
        reply_to = options.get(REPLY_TO)
        if reply_to:
            # a thread's own ts, never a reply's: a destination that is a thread already
            # had its message posted as a reply there
            args["channel"], parent = message_ref(reply_to, "The message to reply to")
            thread_ts = thread_ts or parent
        if thread_ts:
            args["thread_ts"] = thread_ts
        blocks = options.get("blocks")
        if blocks:
            args["blocks"] = json.loads(blocks) if isinstance(blocks, str) else blocks
        # a nag in a direct message is no reminder: no Snooze, no "asked me to remind you"
        reminder = delivery.destination.is_dm and not options.get(reminders.NOTICE)
        reminder = reminder and not reply_to
        if reminder:
            args["text"] = reminders.asked_prefix(delivery.destination, options) + delivery.body
        added: dict[str, Any] | None = None
        if options.get(DONE_BUTTON) is not None:
            added = done_actions(_done_job(options[DONE_BUTTON]))
        elif reminder:
            added = reminder_actions(delivery.schedule_id)
        if added is not None:
            own = args.get("blocks") or _sections(args["text"])
            if options.get(DONE_BUTTON) is not None:
                _room_for_done(own, bool(delivery.scheduled_by))
            args["blocks"] = [*own, added]
        if delivery.scheduled_by:
            credit(args, delivery.scheduled_by)
        for name in PASSED_OPTIONS:
            if options.get(name) is not None:
                args[name] = options[name]
        return args

    def edit_payload(self, delivery: Delivery) -> dict[str, Any]:
        """The ``chat.update`` arguments of an ``edit_of`` delivery: the message it names
        gets the delivery's text, as section blocks (replacing its blocks, the Done
        button with them), and its "scheduled by" line again when it had one. Raises
        Unsendable when ``edit_of`` is not a message id."""
        channel, ts = message_ref(delivery.options[EDIT_OF], "The message to edit")
        args: dict[str, Any] = {
            "channel": channel,
            "ts": ts,
            "text": delivery.body,
            "blocks": _sections(delivery.body),
        }
        if delivery.scheduled_by:
            credit(args, delivery.scheduled_by)
        return args

    async def send(self, delivery: Delivery) -> DeliveryResult:
        """Post one message (or, with ``edit_of``, edit one). Returns ok with message id
        ``CHANNEL/TS``; retry for rate limits (with ``Retry-After``), 5xx, Slack's
        transient errors and network failures; permanent, with advice, for everything
        else. Never raises for what Slack does."""
        if not self._token:
            return DeliveryResult.permanent(
                "Slack is not configured: an admin must set SLACK_BOT_TOKEN."
            )
        if delivery.options.get(EDIT_OF):
            return await self._edit(delivery)
        try:
            args = self.payload(delivery)
        except Unsendable as exc:
            return DeliveryResult.permanent(str(exc))
        except ValueError:
            return DeliveryResult.permanent(
                "The schedule's Block Kit blocks are not valid JSON: edit them."
            )
        opens_dm = delivery.destination.is_dm and not delivery.options.get(REPLY_TO)
        if opens_dm:
            opened = await self.open_dm(delivery.destination.target[1:])
            if isinstance(opened, DeliveryResult):
                return opened
            args["channel"] = opened
        answer = await self._call("chat.postMessage", args)
        if isinstance(answer, DeliveryResult):
            return answer
        status, data, _ = answer
        if data.get("ok") is True:
            channel = str(data.get("channel") or args["channel"])
            return DeliveryResult.ok(status, f"{channel}/{data.get('ts', '')}")
        if opens_dm:  # the conversation may be gone: open it again
            self._dm_channels.pop(delivery.destination.target[1:], None)
        return self._failure(status, data, args["channel"])

    async def _edit(self, delivery: Delivery) -> DeliveryResult:
        """``chat.update`` the message ``edit_of`` names; classified as a post is."""
        try:
            args = self.edit_payload(delivery)
        except Unsendable as exc:
            return DeliveryResult.permanent(str(exc))
        answer = await self._call("chat.update", args)
        if isinstance(answer, DeliveryResult):
            return answer
        status, data, _ = answer
        if data.get("ok") is True:
            channel = str(data.get("channel") or args["channel"])
            return DeliveryResult.ok(status, f"{channel}/{data.get('ts') or args['ts']}")
        return self._failure(status, data, args["channel"])

    async def validate(self, destination: Destination) -> None:
        """When a token is configured, check with ``conversations.info`` that the channel
        exists, is not archived and that the bot can post there.

        Raises InvalidInput with what to do. Does nothing when Slack cannot be asked
        (no token, network trouble, rate limit, missing ``channels:read`` scope)."""
        if not self._token:
            return
        if destination.is_dm:
            opened = await self.open_dm(destination.target[1:])
            if isinstance(opened, DeliveryResult):
                if opened.outcome is Outcome.PERMANENT:
                    raise InvalidInput(str(opened.error))
                log.warning("could not check slack user %s: %s", destination, opened.error)
            return
        channel = destination.target.partition("/")[0]
        answer = await self._call("conversations.info", {"channel": channel}, form=True)
        if isinstance(answer, DeliveryResult):
            log.warning("could not check slack channel %s: %s", channel, answer.error)
            return
        _, data, scopes = answer
        if data.get("ok") is not True:
            code = str(data.get("error", ""))
            if code in ADVICE and code not in ("msg_too_long", "no_text"):
                raise InvalidInput(ADVICE[code].format(channel=channel, code=code))
            log.warning("could not check slack channel %s: %s", channel, code)
            return
        info = data.get("channel") or {}
        if info.get("is_archived"):
            raise InvalidInput(ADVICE["is_archived"].format(channel=channel))
        if info.get("is_member") is False and "chat:write.public" not in scopes:
            raise InvalidInput(ADVICE["not_in_channel"].format(channel=channel))

    async def channels_named(self, name: ChannelName) -> list[str]:
        """The ids of the public channels named ``name.name`` (``conversations.list``,
        https://api.slack.com/methods/conversations.list: archived ones left out, paged by
        ``response_metadata.next_cursor``; ``limit`` under 1000, so 999). The
        :class:`~core.destinations.ChannelDirectory` of Slack.

        Raises InvalidInput when no token is configured, or Slack cannot be asked."""
        if not self._token:
            raise InvalidInput(names_need_connection("slack"))
        ids: list[str] = []
        cursor = ""
        for _ in range(MAX_LIST_PAGES):
            args = {"types": "public_channel", "exclude_archived": "true", "limit": "999"}
            if cursor:
                args["cursor"] = cursor
            answer = await self._call("conversations.list", args, form=True)
            if isinstance(answer, DeliveryResult):
                raise InvalidInput(_not_looked_up(name, answer.error or "no answer"))
            _, data, _ = answer
            if data.get("ok") is not True:
                code = str(data.get("error") or "unknown_error")
                if code == "missing_scope":
                    raise InvalidInput(
                        f"The Slack app lacks the channels:read scope to look up `#{name.name}`: "
                        "ask an admin to add it, or use the channel id, e.g. slack:C0123ABC."
                    )
                raise InvalidInput(_not_looked_up(name, code))
            for channel in data.get("channels") or []:
                if (
                    isinstance(channel, dict)
                    and str(channel.get("name", "")).lower() == name.name
                    and channel.get("id")
                ):
                    ids.append(str(channel["id"]))
            cursor = str((data.get("response_metadata") or {}).get("next_cursor") or "")
            if not cursor:
                break
        return ids

    async def member_sees(self, destination: Destination, user: str, *, tenant: str) -> bool:
        """Whether Slack member ``user`` (``U0123``) of the workspace ``tenant``
        (``slack:T…``, ``slack:E…/T…``) can see the channel ``destination``: the
        :class:`~core.destinations.ChannelViewers` port, for a channel's agenda.

        ``conversations.info`` (https://api.slack.com/methods/conversations.info, scopes
        ``channels:read``, ``groups:read``) says whose channel it is (``context_team_id``,
        ``shared_team_ids``; without them, the bot token's workspace, ``auth.test``)
        and whether it is public. A public channel is seen by every member of its
        workspace (``users.info``, scope ``users:read``: that workspace's, not
        deactivated) but a guest, who sees only the channels they are in; a private
        channel, and a public one to a guest, by its members (``conversations.members``,
        at most :data:`MAX_MEMBER_PAGES` pages). False for a direct message, another
        workspace's channel or member. Raises InvalidInput, in one sentence, when Slack
        cannot be asked (no token, an error, a channel too large to read)."""
        if destination.kind != "slack" or destination.is_dm or not _USER_ID.match(user):
            return False
        kind, _, place = tenant.partition(":")
        if kind != "slack" or not place:
            return False
        org, _, team = place.rpartition("/")
        channel = destination.target.partition("/")[0]
        if not self._token:
            raise InvalidInput(
                "Herald cannot ask Slack who is in that channel: Slack is not configured "
                "(SLACK_BOT_TOKEN)."
            )
        info = await self._ask("conversations.info", {"channel": channel}, channel)
        found = info.get("channel") or {}
        if not isinstance(found, dict) or found.get("is_im") or found.get("is_mpim"):
            return False
        if not await self._of_workspace(found, team, org):
            return False
        private = bool(found.get("is_private")) or not found.get("is_channel", True)
        if not private:
            person = await self._person(user, channel)
            if person is None or not _in_workspace(person, team, org):
                return False
            if not (person.get("is_restricted") or person.get("is_ultra_restricted")):
                return True  # a full member sees every public channel of the workspace
        return await self._in_channel(user, channel)

    async def _of_workspace(self, channel: dict[str, Any], team: str, org: str) -> bool:
        """Whether a ``conversations.info`` channel belongs to (or is shared with) the
        workspace ``team`` (of Enterprise Grid org ``org``)."""
        teams = {str(channel.get("context_team_id") or "")}
        for field in ("shared_team_ids", "internal_team_ids"):
            teams |= {str(t) for t in channel.get(field) or () if t}
        teams.discard("")
        if not teams:  # an answer without them: the bot token's own workspace
            answer = await self._ask("auth.test", {}, "")
            teams = {str(answer.get(f) or "") for f in ("team_id", "enterprise_id")} - {""}
        return team in teams or (bool(org) and org in teams)

    async def _person(self, user: str, channel: str) -> dict[str, Any] | None:
        """``users.info`` of ``user``: None for a user Slack does not know."""
        try:
            answer = await self._ask("users.info", {"user": user}, channel)
        except _UnknownUser:
            return None
        person = answer.get("user")
        return person if isinstance(person, dict) else None

    async def _in_channel(self, user: str, channel: str) -> bool:
        """Whether ``user`` is in ``channel``'s members (``conversations.members``,
        https://api.slack.com/methods/conversations.members, paged by
        ``response_metadata.next_cursor``)."""
        cursor = ""
        for _ in range(MAX_MEMBER_PAGES):
            args = {"channel": channel, "limit": str(MEMBER_PAGE)}
            if cursor:
                args["cursor"] = cursor
            answer = await self._ask("conversations.members", args, channel)
            if user in (answer.get("members") or ()):
                return True
            cursor = str((answer.get("response_metadata") or {}).get("next_cursor") or "")
            if not cursor:
                return False
        raise InvalidInput(
            f"Slack channel {channel} has more than {MAX_MEMBER_PAGES * MEMBER_PAGE:,} "
            "members for Herald to look through: ask in the channel (`/schedule list here`)."
        )

    async def _ask(self, method: str, args: dict[str, Any], channel: str) -> dict[str, Any]:
        """A read method's answer (form-encoded), ``ok`` true; InvalidInput saying why
        Slack could not be asked (_UnknownUser for ``users.info``'s user_not_found)."""
        answer = await self._call(method, args, form=True)
        if isinstance(answer, DeliveryResult):
            why = (answer.error or "no answer").rstrip(".")
            raise InvalidInput(
                f"Herald could not ask Slack who is in channel {channel} just now ({why}); "
                "try again in a minute."
            )
        data = answer.data
        if data.get("ok") is True:
            return data
        code = str(data.get("error") or "unknown_error")
        if code in ("user_not_found", "users_not_found"):
            raise _UnknownUser(code)
        if code == "missing_scope":
            needed = str(data.get("needed") or "channels:read, groups:read and users:read")
            raise InvalidInput(
                f"The Slack app lacks the {needed} scope to see who is in channel "
                f"{channel}: ask an admin to add it and reinstall the app."
            )
        if code == "channel_not_found" or code == "account_inactive" or ADVICE.get(code) == _AUTH:
            raise InvalidInput(ADVICE[code].format(channel=channel))
        raise InvalidInput(
            f"Herald could not ask Slack who is in channel {channel} just now ({code}); "
            "try again in a minute."
        )

    async def open_dm(self, user: str) -> str | DeliveryResult:
        """The id of the bot's direct-message conversation with ``user`` (opened with
        ``conversations.open`` once per process), or the retry/permanent result."""
        known = self._dm_channels.get(user)
        if known is not None:
            return known
        answer = await self._call("conversations.open", {"users": user}, form=True)
        if isinstance(answer, DeliveryResult):
            return answer
        status, data, _ = answer
        channel = (data.get("channel") or {}).get("id") if data.get("ok") is True else None
        if not isinstance(channel, str) or not channel:
            if data.get("ok") is True:
                return DeliveryResult.retry("Slack opened no conversation.", status)
            return self._failure(status, data, user)
        if len(self._dm_channels) > 10_000:  # a bound, not a policy: reopening is cheap
            self._dm_channels.clear()
        self._dm_channels[user] = channel
        return channel

    async def member_zone(self, destination: Destination | str) -> str | None:
        """The zone of the member a direct message (``slack:@U0123``) goes to, as their
        Slack profile says (``users.info``, the user's ``tz``;
        https://api.slack.com/methods/users.info, scope ``users:read``), kept
        :data:`ZONE_TTL` seconds. None for anything else, no token, a zone that is no
        IANA name, or whatever goes wrong asking (logged): the caller falls back to the
        zone set in Herald. Never raises; bounded by the channel's timeouts."""
        target = destination.target if isinstance(destination, Destination) else ""
        if isinstance(destination, str):
            kind, _, target = destination.partition(":")
            target = target if kind == "slack" else ""
        user = target[1:] if target.startswith("@") else ""
        if not self._token or not _USER_ID.match(user):
            return None
        cached = self._zones.get(user)
        now = time.monotonic()
        if cached is not None and now - cached[0] < ZONE_TTL:
            return cached[1]
        answer = await self._call("users.info", {"user": user}, form=True)
        if isinstance(answer, DeliveryResult) or answer.data.get("ok") is not True:
            why = answer.error if isinstance(answer, DeliveryResult) else answer.data.get("error")
            log.warning("slack users.info failed: %s", why, extra={"user": user})
            return None
        zone = _iana((answer.data.get("user") or {}).get("tz"))
        if len(self._zones) > 10_000:  # a bound, not a policy: asking again is cheap
            self._zones.clear()
        self._zones[user] = (now, zone)
        return zone

    async def _call(
        self, method: str, args: dict[str, Any], *, form: bool = False
    ) -> _Answer | DeliveryResult:
        """POST a Web API method as JSON, or form-encoded when ``form`` (read methods such
        as ``conversations.info`` take no JSON). Returns the answer when Slack sent JSON,
        or the retry/permanent result for any other answer or a network failure."""
        url = self._base + method
        try:
            response = await self.http.request(
                "POST",
                url,
                guarded=False,
                timeouts=self._timeout,
                headers=self._headers,
                form=args if form else None,
                json=None if form else args,
            )
        except TimedOut:
            return DeliveryResult.retry("Slack did not answer in time.")
        except Unreachable as exc:
            return DeliveryResult.retry(f"Could not reach Slack ({exc}).")
        status = response.status
        if status == 429:
            retry_after = parse_retry_after(response.headers.get("retry-after"))
            return DeliveryResult.retry("Slack is rate limiting the bot.", status, retry_after)
        if status >= 500:
            return DeliveryResult.retry(f"Slack answered {status}.", status)
        try:
            data = response.json()
        except ValueError:
            data = None
        if not isinstance(data, dict):  # not Slack's API: a wrong SLACK_API_URL, a proxy
            kind = response.headers.get("content-type", "")
            sentence = not_json("Slack", url, status, kind, "SLACK_API_URL")
            return not_the_api(self.api_health, sentence, url=url, status=status, content_type=kind)
        if self.api_health is not None:
            self.api_health.answered()
        scopes = response.headers.get("x-oauth-scopes", "")
        return _Answer(status, data, frozenset(s.strip() for s in scopes.split(",") if s.strip()))

    def _failure(self, status: int, data: dict[str, Any], channel: str) -> DeliveryResult:
        code = str(data.get("error") or "unknown_error")
        if code in TRANSIENT:
            return DeliveryResult.retry(
                f"Slack could not take the message just now ({code}).",
                status,
            )
        if code == "missing_scope":
            needed = data.get("needed") or ("im:write" if channel[:1] in "UW" else "chat:write")
            return DeliveryResult.permanent(
                f"The Slack app lacks the {needed} scope: ask an admin to add it and "
                "reinstall the app.",
                status,
            )
        advice = ADVICE.get(code)
        if advice is None:
            return DeliveryResult.permanent(
                f"Slack refused the message ({code}): check the destination and the "
                "schedule's options.",
                status,
            )
        return DeliveryResult.permanent(advice.format(channel=channel, code=code), status)


class _UnknownUser(InvalidInput):
    """``users.info`` knows no such user (in the token's reach)."""


def _in_workspace(person: dict[str, Any], team: str, org: str) -> bool:
    """Whether a ``users.info`` user is a live person of workspace ``team`` (or of its
    Enterprise Grid org ``org``)."""
    if person.get("deleted") or person.get("is_bot"):
        return False
    if person.get("team_id") == team:
        return True
    grid = person.get("enterprise_user") or {}
    if not org or grid.get("enterprise_id") != org:
        return False
    teams = grid.get("teams")  # the org's workspaces they belong to
    return team in teams if isinstance(teams, list) else True


def _not_looked_up(name: ChannelName, why: str) -> str:
    return (
        f"Herald could not look up `#{name.name}` with Slack just now ({why}); try again "
        "in a minute, or use the channel id, e.g. slack:C0123ABC."
    )


def _iana(name: object) -> str | None:
    """``name`` when it is an IANA zone Herald knows, else None."""
    if not isinstance(name, str) or not name or name.startswith(("/", ".")):
        return None
    try:
        return ZoneInfo(name).key
    except (ZoneInfoNotFoundError, ValueError):
        return None


def _sections(text: str) -> list[dict[str, Any]]:
    """``text`` as section blocks (mrkdwn, at most 3,000 characters each)."""
    size = limits.SLACK_SECTION_TEXT.size
    return [
        {"type": "section", "text": {"type": "mrkdwn", "text": text[i : i + size]}}
        for i in range(0, max(len(text), 1), size)
    ]


def reminder_actions(schedule_id: int) -> dict[str, Any]:
    """The actions block under a reminder: Snooze 15 min, 1 h, tomorrow, and Done. Each
    button's value is the schedule id; ``action_id`` says the choice."""
    return {
        "type": "actions",
        "block_id": f"herald_reminder:{schedule_id}",
        "elements": [
            {
                "type": "button",
                "action_id": reminders.slack_action_id(choice),
                "text": {"type": "plain_text", "text": reminders.label(choice)},
                "value": str(schedule_id),
                **({"style": "primary"} if choice == reminders.DONE else {}),
            }
            for choice in reminders.CHOICES
        ],
    }
