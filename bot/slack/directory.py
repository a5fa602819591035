"""What the Slack Web API says about people and channels, with SDK errors translated.

``users.info`` answers are cached for a few minutes (every command needs the person's
zone and admin standing); channel membership is asked each time, so someone who just
left a channel cannot schedule into it.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from dataclasses import dataclass

import aiohttp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.slack.grammar import Refusal
from core.destinations import no_channel_named, several_channels_named
from core.errors import InvalidInput, PermissionDenied
from core.zones import resolve_zone

log = logging.getLogger(__name__)

USER_TTL = 300.0
_CHANNEL_ID = re.compile(r"[CGD][A-Z0-9]{2,30}")
MAX_MEMBER_PAGES = 50
_INVITE = "type `/invite @Herald` in that channel, then try again"


@dataclass(frozen=True)
class SlackUser:
    """A Slack user as Herald needs it: a display name, the profile's zone (None when
    unknown or not an IANA zone) and whether they administer the workspace."""

    id: str
    name: str | None = None
    tz: str | None = None
    workspace_admin: bool = False
    #: Whether Slack answered (an unknown user is never demoted or promoted).
    known: bool = False


def error_code(exc: Exception) -> str:
    """The Web API error code of an SDK exception, or its type for network trouble."""
    if isinstance(exc, SlackApiError):
        return str(exc.response.get("error") or "unknown_error")
    return type(exc).__name__


def _zone(name: object) -> str | None:
    """The zone of a Slack profile (an IANA name), or None when Herald knows none."""
    if not isinstance(name, str) or not name:
        return None
    try:
        return resolve_zone(name).key
    except InvalidInput:
        return None


_FAILURES = (SlackApiError, aiohttp.ClientError, asyncio.TimeoutError)


class NotMember(PermissionDenied):
    """The person is not in the channel (the message is Slack mrkdwn)."""

    mrkdwn = True


class Directory:
    """Look-ups over one Web API client."""

    def __init__(self, client: AsyncWebClient, *, ttl: float = USER_TTL) -> None:
        self.client = client
        self.ttl = ttl
        self._users: dict[str, tuple[float, SlackUser]] = {}

    async def user(self, user_id: str) -> SlackUser:
        """``users.info`` for ``user_id`` (cached). When Slack cannot be asked, a user
        with no zone and no admin standing (logged)."""
        cached = self._users.get(user_id)
        now = time.monotonic()
        if cached is not None and now - cached[0] < self.ttl:
            return cached[1]
        try:
            answer = await self.client.users_info(user=user_id)
        except _FAILURES as exc:
            log.warning("slack users.info failed: %s", error_code(exc), extra={"user": user_id})
            return SlackUser(user_id)
        data = answer.get("user") or {}
        profile = data.get("profile") or {}
        name = profile.get("display_name") or profile.get("real_name") or data.get("name")
        user = SlackUser(
            user_id,
            name=str(name) if name else None,
            tz=_zone(data.get("tz")),
            workspace_admin=bool(
                data.get("is_admin") or data.get("is_owner") or data.get("is_primary_owner")
            ),
            known=True,
        )
        self._users[user_id] = (now, user)
        return user

    async def check_member(self, user_id: str, channel_id: str) -> None:
        """Refuse unless ``user_id`` is a member of ``channel_id`` (``conversations.members``).

        Raises Refusal for what is not a channel, a direct message, a channel Herald
        cannot see (a private channel it was not invited to) or when Slack cannot be
        asked; NotMember (a PermissionDenied) when the person is not a member."""
        if not _CHANNEL_ID.fullmatch(channel_id):
            raise Refusal("That is not a Slack channel: pick one from the list.")
        if channel_id.startswith("D"):
            raise Refusal(
                "Herald posts into channels, not direct messages: name a channel, e.g. "
                "`/schedule #general tomorrow at 9am: Hello`."
            )
        cursor: str | None = None
        for _ in range(MAX_MEMBER_PAGES):
            try:
                answer = await self.client.conversations_members(
                    channel=channel_id, limit=1000, cursor=cursor
                )
            except _FAILURES as exc:
                code = error_code(exc)
                if code == "channel_not_found":
                    raise Refusal(
                        f"Herald cannot see <#{channel_id}>: if it is a private channel, {_INVITE}."
                    ) from None
                log.warning(
                    "slack conversations.members failed: %s", code, extra={"channel": channel_id}
                )
                raise Refusal(
                    f"Herald could not check your membership of <#{channel_id}> with Slack "
                    f"just now ({code}); try again in a minute."
                ) from None
            if user_id in (answer.get("members") or []):
                return
            cursor = (answer.get("response_metadata") or {}).get("next_cursor") or None
            if not cursor:
                break
        raise NotMember(
            f"You can only schedule into channels you are a member of: join <#{channel_id}> "
            "first, or pick another channel."
        )


#: How long the channel names of a workspace are kept (a miss older than
#: NAMES_RETRY asks again, so a channel just made is found).
NAMES_TTL = 60.0
NAMES_RETRY = 5.0
MAX_CHANNEL_PAGES = 50
LIST_LIMIT = 999


class ChannelNames:
    """Public channels by name, from ``conversations.list`` (paged, archived ones left
    out), cached per workspace for :data:`NAMES_TTL` seconds: Slack's ``/schedule
    #name``. (A name given to the CLI, the API or an import is looked up by core's Slack
    channel, :meth:`core.channels.slack.SlackChannel.channels_named`, with the same
    sentences.)

    https://api.slack.com/methods/conversations.list: ``types`` defaults to
    ``public_channel``; ``limit`` "must be an integer under 1000" (999: the fewest calls
    of this Tier 2 method), and a page may hold fewer; pages follow
    ``response_metadata.next_cursor`` until it is empty."""

    def __init__(self, client: AsyncWebClient, *, ttl: float = NAMES_TTL) -> None:
        self.client = client
        self.ttl = ttl
        self._names: dict[str, tuple[float, dict[str, list[str]]]] = {}

    async def find(self, team: str, name: str) -> str:
        """The id of the public channel ``name`` (without ``#``) in ``team``.

        Raises Refusal when no channel has that name, when several do (Enterprise Grid
        shares channels between workspaces), or when Slack cannot be asked."""
        name = name.lower()
        cached = self._names.get(team)
        now = time.monotonic()
        fresh = cached is not None and now - cached[0] < self.ttl
        if not fresh or (
            cached is not None and name not in cached[1] and now - cached[0] > NAMES_RETRY
        ):
            cached = (now, await self._list(name))
            self._names[team] = cached
        assert cached is not None
        ids = cached[1].get(name, [])
        if not ids:
            hint = (
                "pick the channel from Slack's suggestions as you type (a private channel "
                "is found only that way)"
            )
            raise Refusal(no_channel_named(name, hint))
        if len(ids) > 1:  # the same sentences as a name given to the CLI or the API
            links = ", ".join(f"<#{i}>" for i in ids)
            hint = "pick the one you mean from Slack's suggestions as you type"
            raise Refusal(several_channels_named(name, links, hint))
        return ids[0]

    async def _list(self, wanted: str) -> dict[str, list[str]]:
        names: dict[str, list[str]] = {}
        cursor: str | None = None
        for _ in range(MAX_CHANNEL_PAGES):
            try:
                answer = await self.client.conversations_list(
                    types="public_channel", exclude_archived=True, limit=LIST_LIMIT, cursor=cursor
                )
            except _FAILURES as exc:
                code = error_code(exc)
                log.warning("slack conversations.list failed: %s", code)
                raise Refusal(
                    f"Herald could not look up `#{wanted}` with Slack just now ({code}); "
                    "try again in a minute, or pick the channel from Slack's suggestions."
                ) from None
            for channel in answer.get("channels") or []:
                if isinstance(channel, dict) and channel.get("id") and channel.get("name"):
                    names.setdefault(str(channel["name"]).lower(), []).append(str(channel["id"]))
            cursor = (answer.get("response_metadata") or {}).get("next_cursor") or None
            if not cursor:
                break
        return names
