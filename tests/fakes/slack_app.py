"""The fake Slack Web API of :mod:`tests.fakes.slack`, grown to what an interactive app
calls: ``users.info`` (a guest is ``is_restricted``), ``conversations.members`` (paged;
``missing_scope`` without ``channels:read`` / ``groups:read``, as ``conversations.info``),
``conversations.list`` (paged, as https://api.slack.com/methods/conversations.list
documents it), ``views.open``, ``views.update``, ``views.publish``,
``chat.postEphemeral``, ``chat.update`` (of a message it posted), and ``response_url``
endpoints (``POST /response/<key>``).

Tests wait for what the app does after its acknowledgement with :meth:`FakeSlackApp.until`,
which wakes on every request the fake answers (no polling, no sleep).
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Callable
from typing import Any

from aiohttp import web

from tests.fakes.slack import FakeSlack, SlackChannelState, SlackUserState


class FakeSlackApp(FakeSlack):
    """A workspace with people, channel memberships and an app's surfaces."""

    def __init__(self, token: str = "xoxb-test-token", **kw: Any) -> None:
        super().__init__(token, **kw)
        #: ``users.info`` answers by user id.
        self.users: dict[str, dict[str, Any]] = {}
        #: Channel members by channel id (``conversations.members``).
        self.members: dict[str, list[str]] = {}
        #: Members per ``conversations.members`` page.
        self.page_size = 1000
        self.ephemerals: list[dict[str, Any]] = []
        #: ``chat.update`` calls: the arguments.
        self.edits: list[dict[str, Any]] = []
        self.opened: list[dict[str, Any]] = []
        self.updated: list[dict[str, Any]] = []
        self.published: list[dict[str, Any]] = []
        #: What the app posted to ``response_url``s: the JSON plus ``key``.
        self.responses: list[dict[str, Any]] = []
        self._changed = asyncio.Event()
        self._keys = itertools.count(1)
        self._views = itertools.count(1)

    # --- set-up -----------------------------------------------------------------------
    def add_user(
        self,
        user_id: str,
        *,
        tz: str | None = "UTC",
        name: str | None = None,
        admin: bool = False,
        owner: bool = False,
        team: str | None = None,
        bot: bool = False,
        deleted: bool = False,
        guest: bool = False,
    ) -> None:
        """A person ``users.info`` knows; ``guest``: a multi-channel guest
        (``is_restricted``), who sees only the channels they are in."""
        self.users[user_id] = {
            "id": user_id,
            "team_id": team or self.team_id,
            "is_bot": bot,
            "deleted": deleted,
            "is_restricted": guest,
            "is_ultra_restricted": False,
            "name": (name or user_id).lower(),
            "tz": tz,
            "is_admin": admin,
            "is_owner": owner,
            "profile": {"display_name": name or user_id, "real_name": name or user_id},
        }

    def person(self, user_id: str) -> SlackUserState | None:
        """Anyone ``users.info`` knows can get a direct message (unless a bot or gone)."""
        user = self.users.get(user_id)
        if user is None:
            return super().person(user_id)
        return SlackUserState(user_id, is_bot=user["is_bot"], deleted=user["deleted"])

    def add_members(self, channel_id: str, *user_ids: str) -> None:
        self.members.setdefault(channel_id, []).extend(user_ids)

    def response_url(self) -> str:
        """A fresh ``response_url`` for one interaction."""
        return f"{self.url}/response/{next(self._keys)}"

    # --- waiting ----------------------------------------------------------------------
    async def until(self, predicate: Callable[[], object], within: float = 5.0) -> None:
        """Wait until ``predicate()`` is true; it is checked after every request."""
        async with asyncio.timeout(within):
            while not predicate():
                changed = self._changed
                await changed.wait()

    def _notify(self) -> None:
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    def calls(self, method: str) -> list[dict[str, Any]]:
        """The arguments of every call of a Web API method, in order."""
        return [r.params() for r in self.requests_to(f"/api/{method}")]

    # --- routes -----------------------------------------------------------------------
    def add_routes(self, router: web.UrlDispatcher) -> None:
        router.add_post("/response/{key}", self._response)
        super().add_routes(router)

    async def _response(self, request: web.Request) -> web.Response:
        self.responses.append({**self.requests[-1].json(), "key": request.match_info["key"]})
        self._notify()
        return web.Response(text="ok")

    async def _dispatch(self, request: web.Request) -> web.Response:
        try:
            method = request.match_info["method"]
            handler = {
                "users.info": self._users_info,
                "conversations.members": self._conversations_members,
                "conversations.info": self._conversations_info_scoped,
                "conversations.list": self._conversations_list,
                "views.open": self._views_open,
                "views.update": self._views_update,
                "views.publish": self._views_publish,
                "chat.postEphemeral": self._post_ephemeral,
                "chat.update": self._update,
            }.get(method)
            if handler is None:
                return await super()._dispatch(request)
            recorded = self.requests[-1]
            auth = recorded.headers.get("authorization", "")
            if auth.removeprefix("Bearer ").strip() != self.token:
                return self._error("invalid_auth")
            return handler(recorded.params())
        finally:
            self._notify()

    def _users_info(self, args: dict[str, Any]) -> web.Response:
        user = self.users.get(str(args.get("user", "")))
        if user is None:
            return self._error("user_not_found")
        return self._answer({"ok": True, "user": user})

    def _scope_for(self, channel: SlackChannelState) -> str | None:
        """The scope a read of ``channel`` needs that the token lacks (None: it has it):
        ``channels:read`` for a public channel, ``groups:read`` for a private one."""
        needed = "groups:read" if channel.is_private else "channels:read"
        return None if needed in self.scopes else needed

    def _conversations_info_scoped(self, args: dict[str, Any]) -> web.Response:
        """``conversations.info``, refused with ``missing_scope`` as Slack does."""
        channel = self._visible(str(args.get("channel", "")))
        if channel is not None and (needed := self._scope_for(channel)) is not None:
            return self._error("missing_scope", needed=needed, provided=",".join(self.scopes))
        return self._conversations_info(args)

    def _conversations_members(self, args: dict[str, Any]) -> web.Response:
        """https://docs.slack.dev/reference/methods/conversations.members: ``limit``
        (default 100, under 1000; a page holds at most :attr:`page_size`), ``cursor``
        from ``response_metadata.next_cursor``."""
        channel = self._visible(str(args.get("channel", "")))
        if channel is None:
            return self._error("channel_not_found")
        if (needed := self._scope_for(channel)) is not None:
            return self._error("missing_scope", needed=needed, provided=",".join(self.scopes))
        members = self.members.get(channel.id, [])
        start = int(args.get("cursor") or 0)
        size = min(int(args.get("limit") or 100), self.page_size)
        page = members[start : start + size]
        after = start + size
        cursor = str(after) if after < len(members) else ""
        return self._answer(
            {"ok": True, "members": page, "response_metadata": {"next_cursor": cursor}}
        )

    def _view(self, args: dict[str, Any]) -> dict[str, Any] | None:
        view = args.get("view")
        if isinstance(view, str):
            view = json.loads(view)
        return view if isinstance(view, dict) else None

    def _views_open(self, args: dict[str, Any]) -> web.Response:
        view = self._view(args)
        if view is None or not args.get("trigger_id"):
            return self._error("invalid_arguments")
        self.opened.append({"trigger_id": args["trigger_id"], "view": view})
        n = next(self._views)
        return self._answer({"ok": True, "view": {**view, "id": f"V{n}", "hash": f"h{n}"}})

    def _views_update(self, args: dict[str, Any]) -> web.Response:
        view = self._view(args)
        if view is None or not args.get("view_id"):
            return self._error("invalid_arguments")
        self.updated.append({"view_id": args["view_id"], "hash": args.get("hash"), "view": view})
        return self._answer({"ok": True, "view": {**view, "id": args["view_id"]}})

    def _views_publish(self, args: dict[str, Any]) -> web.Response:
        view = self._view(args)
        if view is None or not args.get("user_id"):
            return self._error("invalid_arguments")
        self.published.append({"user_id": args["user_id"], "view": view})
        return self._answer({"ok": True, "view": {**view, "id": "VHOME"}})

    def _update(self, args: dict[str, Any]) -> web.Response:
        channel = str(args.get("channel", ""))
        ts = str(args.get("ts", ""))
        posted = [m for m in self.messages if (m["channel"], m["ts"]) == (channel, ts)]
        if not posted:
            return self._error("message_not_found")
        if not args.get("text") and not args.get("blocks"):
            return self._error("no_text")
        self.edits.append(args)
        return self._answer({"ok": True, "channel": channel, "ts": ts})

    def _post_ephemeral(self, args: dict[str, Any]) -> web.Response:
        channel = self._visible(str(args.get("channel", "")))
        if channel is None:
            return self._error("channel_not_found")
        if not channel.is_member:
            return self._error("not_in_channel")
        if str(args.get("user", "")) not in self.users:
            return self._error("user_not_found")
        self.ephemerals.append({**args, "channel": channel.id})
        return self._answer({"ok": True, "message_ts": "1700000000.000001"})
