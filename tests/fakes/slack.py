"""A fake Slack Web API: ``POST|GET /api/<method>`` with a bearer token.

Speaks enough of the real protocol for Herald's channel and for slack_sdk's
``AsyncWebClient``: HTTP 200 with ``{"ok": true, ...}`` or ``{"ok": false, "error": code}``,
``X-OAuth-Scopes`` on every answer, JSON, form or query arguments. Methods:
``chat.postMessage`` (a reply in a thread with ``thread_ts``), ``chat.update`` (of a
message it posted, https://docs.slack.dev/reference/methods/chat.update: recorded in
:attr:`FakeSlack.edits`), ``conversations.info`` (with the channel's workspace,
``context_team_id`` and ``shared_team_ids``), ``conversations.open`` (a direct message
with one user, https://api.slack.com/methods/conversations.open: ``users`` in, the IM
channel ``D…`` out, the same one each time), ``conversations.list`` (paged by
:attr:`FakeSlack.list_page_size`, as https://api.slack.com/methods/conversations.list
documents it) and ``auth.test``.

Use :attr:`FakeSlack.api_url` as the client's base URL; add channels with
:meth:`FakeSlack.add_channel`; read what was posted in :attr:`FakeSlack.messages`; script
failures with :meth:`FakeSlack.script` and :func:`slack_error`. Like Slack, it answers
``invalid_blocks`` to more than 50 blocks (a message, or an edit).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from tests.fakes.http import FakeHTTPServer, Scripted

#: The most blocks Slack takes in a message
#: (https://docs.slack.dev/reference/methods/chat.postMessage).
MAX_BLOCKS = 50
DEFAULT_SCOPES = (
    "chat:write",
    "chat:write.customize",
    "channels:read",
    "groups:read",
    "im:write",
)


def slack_error(code: str, status: int = 200, retry_after: int | None = None) -> Scripted:
    """A scripted Slack failure (``ratelimited`` answers usually come with 429)."""
    headers = {"Retry-After": str(retry_after)} if retry_after is not None else {}
    return Scripted(status=status, json={"ok": False, "error": code}, headers=headers)


@dataclass
class SlackChannelState:
    id: str
    name: str
    is_member: bool = True
    is_archived: bool = False
    is_private: bool = False
    #: The workspace whose channel it is ("": the bot token's own), as
    #: ``conversations.info`` says it (``context_team_id``, ``shared_team_ids``).
    team: str = ""


@dataclass
class SlackUserState:
    id: str
    is_bot: bool = False
    deleted: bool = False


class FakeSlack(FakeHTTPServer):
    """A workspace with one bot token and some channels."""

    def __init__(
        self,
        token: str = "xoxb-test-token",
        scopes: tuple[str, ...] = DEFAULT_SCOPES,
        team_id: str = "T0HERALD",
    ) -> None:
        super().__init__()
        self.token = token
        #: The workspace the bot token belongs to (auth.test answers it).
        self.team_id = team_id
        self.scopes = scopes
        self.channels: dict[str, SlackChannelState] = {}
        #: Every message posted: the arguments plus ``ts`` and ``channel``.
        self.messages: list[dict[str, Any]] = []
        #: ``chat.update`` calls: the arguments.
        self.edits: list[dict[str, Any]] = []
        #: Users a direct message can be opened with (add them with add_person).
        self.people: dict[str, SlackUserState] = {}
        #: user id -> the IM channel opened with them.
        self.ims: dict[str, str] = {}
        self._ts = itertools.count(1)
        #: Most channels per ``conversations.list`` page (to see paging followed).
        self.list_page_size = 1000

    @property
    def api_url(self) -> str:
        return f"{self.url}/api/"

    def add_channel(
        self, channel_id: str, name: str = "general", *, team: str = "", **flags: bool
    ) -> None:
        self.channels[channel_id] = SlackChannelState(channel_id, name, team=team, **flags)

    def add_person(self, user_id: str, **flags: bool) -> None:
        self.people[user_id] = SlackUserState(user_id, **flags)

    def person(self, user_id: str) -> SlackUserState | None:
        """The user ``conversations.open`` may open a DM with, if any."""
        return self.people.get(user_id)

    def add_routes(self, router: web.UrlDispatcher) -> None:
        router.add_route("*", "/api/{method}", self._dispatch)

    def _answer(self, data: dict[str, Any]) -> web.Response:
        return web.json_response(data, headers={"X-OAuth-Scopes": ",".join(self.scopes)})

    def _error(self, code: str, **extra: Any) -> web.Response:
        return self._answer({"ok": False, "error": code, **extra})

    async def _dispatch(self, request: web.Request) -> web.Response:
        recorded = self.requests[-1]
        args = recorded.params()
        auth = recorded.headers.get("authorization", "")
        token = auth.removeprefix("Bearer ").strip() if auth else str(args.get("token", ""))
        if not token:
            return self._error("not_authed")
        if token != self.token:
            return self._error("invalid_auth")
        method = request.match_info["method"]
        if method == "auth.test":
            return self._answer(
                {"ok": True, "user_id": "UHERALD", "bot_id": "BHERALD", "team_id": self.team_id}
            )
        if method == "conversations.info":
            return self._conversations_info(args)
        if method == "chat.postMessage":
            return self._post_message(args)
        if method == "chat.update":
            return self._update(args)
        if method == "conversations.open":
            return self._conversations_open(args)
        if method == "conversations.list":
            return self._conversations_list(args)
        return self._error("unknown_method")

    def _visible(self, channel_id: str) -> SlackChannelState | None:
        channel = self.channels.get(channel_id)
        if channel is None or (channel.is_private and not channel.is_member):
            return None
        return channel

    def _conversations_list(self, args: dict[str, Any]) -> web.Response:
        """Channels of ``types`` (default ``public_channel``; private ones only when the
        bot is in them), ``exclude_archived``, ``limit`` 1..999 (default 100), ``cursor``."""
        types = set(str(args.get("types") or "public_channel").split(","))
        if not types <= {"public_channel", "private_channel", "mpim", "im"}:
            return self._error("invalid_types")
        try:
            limit = int(args.get("limit") or 100)
        except ValueError:
            return self._error("invalid_limit")
        if not 1 <= limit < 1000:
            return self._error("invalid_limit")
        archived = str(args.get("exclude_archived", "false")).lower() in ("true", "1")
        found = [
            c
            for c in self.channels.values()
            if ("private_channel" if c.is_private else "public_channel") in types
            and (not c.is_private or c.is_member)
            and not (archived and c.is_archived)
        ]
        start = int(args.get("cursor") or 0)
        size = min(limit, self.list_page_size)
        after = start + size
        return self._answer(
            {
                "ok": True,
                "channels": [
                    {
                        "id": c.id,
                        "name": c.name,
                        "is_channel": not c.is_private,
                        "is_group": c.is_private,
                        "is_private": c.is_private,
                        "is_member": c.is_member,
                        "is_archived": c.is_archived,
                    }
                    for c in found[start:after]
                ],
                "response_metadata": {"next_cursor": str(after) if after < len(found) else ""},
            }
        )

    def _conversations_info(self, args: dict[str, Any]) -> web.Response:
        """A conversation object (https://docs.slack.dev/reference/objects/conversation-object):
        a public or private channel, or a direct message (``D…``, ``is_im``)."""
        channel = self._visible(str(args.get("channel", "")))
        if channel is None:
            return self._error("channel_not_found")
        team = channel.team or self.team_id
        im = channel.id.startswith("D")
        return self._answer(
            {
                "ok": True,
                "channel": {
                    "id": channel.id,
                    "name": channel.name,
                    "is_channel": not im,
                    "is_group": False,
                    "is_im": im,
                    "is_mpim": False,
                    "is_private": channel.is_private or im,
                    "is_member": channel.is_member,
                    "is_archived": channel.is_archived,
                    "context_team_id": team,
                    "shared_team_ids": [team],
                },
            }
        )

    def _conversations_open(self, args: dict[str, Any]) -> web.Response:
        if "im:write" not in self.scopes:
            return self._error("missing_scope", needed="im:write")
        users = [u for u in str(args.get("users", "")).split(",") if u]
        if not users and not args.get("channel"):
            return self._error("users_list_not_supplied")
        if len(users) != 1:
            return self._error("not_enough_users" if not users else "too_many_users")
        user = self.person(users[0])
        if user is None:
            return self._error("user_not_found")
        if user.is_bot:
            return self._error("cannot_dm_bot")
        if user.deleted:
            return self._error("user_disabled")
        already = user.id in self.ims
        channel_id = self._im_of(user.id)
        answer: dict[str, Any] = {"ok": True, "channel": {"id": channel_id}}
        if already:
            answer.update(no_op=True, already_open=True)
        return self._answer(answer)

    def _im_of(self, user_id: str) -> str | None:
        """The IM channel with ``user_id`` (opened now if need be), None for no person."""
        user = self.person(user_id)
        if user is None or user.is_bot or user.deleted:
            return None
        channel_id = self.ims.setdefault(user.id, f"D{len(self.ims) + 1:08d}")
        self.channels.setdefault(channel_id, SlackChannelState(channel_id, user.id))
        return channel_id

    def _post_message(self, args: dict[str, Any]) -> web.Response:
        """https://docs.slack.dev/reference/methods/chat.postMessage: ``channel`` a
        conversation id, or a user id (``U…``): the app's direct message with them."""
        wanted = str(args.get("channel", ""))
        if wanted[:1] in ("U", "W") and (im := self._im_of(wanted)) is not None:
            wanted = im
        channel = self._visible(wanted)
        if channel is None:
            return self._error("channel_not_found")
        if channel.is_archived:
            return self._error("is_archived")
        if not channel.is_member and "chat:write.public" not in self.scopes:
            return self._error("not_in_channel")
        blocks = args.get("blocks")
        if blocks is not None and not isinstance(blocks, list):
            return self._error("invalid_blocks_format")
        if blocks is not None and len(blocks) > MAX_BLOCKS:
            return self._error("invalid_blocks")
        text = str(args.get("text") or "")
        if not text and not blocks:
            return self._error("no_text")
        if len(text) > 40_000:
            return self._error("msg_too_long")
        if (args.get("username") or args.get("icon_url") or args.get("icon_emoji")) and (
            "chat:write.customize" not in self.scopes
        ):
            return self._error("missing_scope", needed="chat:write.customize")
        n = next(self._ts)
        ts = f"{1_700_000_000 + n}.{n:06d}"
        self.messages.append({**args, "channel": channel.id, "ts": ts})
        message = {"type": "message", "text": text, "ts": ts, "bot_id": "BHERALD"}
        return self._answer({"ok": True, "channel": channel.id, "ts": ts, "message": message})

    def _update(self, args: dict[str, Any]) -> web.Response:
        """Edit a message the fake posted (by ``channel`` and ``ts``): recorded in
        :attr:`edits`; ``message_not_found`` for any other."""
        channel = str(args.get("channel", ""))
        ts = str(args.get("ts", ""))
        posted = [m for m in self.messages if (m["channel"], m["ts"]) == (channel, ts)]
        if not posted:
            return self._error("message_not_found")
        blocks = args.get("blocks")
        if not args.get("text") and not blocks:
            return self._error("no_text")
        if isinstance(blocks, list) and len(blocks) > MAX_BLOCKS:
            return self._error("invalid_blocks")
        self.edits.append(args)
        return self._answer({"ok": True, "channel": channel, "ts": ts})
