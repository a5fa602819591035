"""Signed requests to the Slack adapter, as Slack sends them.

Each request carries ``X-Slack-Request-Timestamp`` and ``X-Slack-Signature``:
``v0=`` + hex HMAC-SHA256 of ``v0:{timestamp}:{body}`` under the signing secret.
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import aiohttp

from core.actors import Principal, slack_tenant

SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
TEAM = "T0HERALD"
#: The tenant of the fake workspace.
TENANT = slack_tenant(TEAM)


def who(user: str, team: str = TEAM) -> Principal:
    """A Slack member as the use cases know them: in their workspace's tenant."""
    return Principal(f"slack:{user}", slack_tenant(team))


def signature(secret: str, timestamp: str, body: str) -> str:
    base = f"v0:{timestamp}:{body}".encode()
    return "v0=" + hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()


@dataclass
class Answer:
    status: int
    text: str
    seconds: float

    def json(self) -> Any:
        return json.loads(self.text) if self.text else None


class SlackSender:
    """Posts signed requests to ``url`` (the adapter's ``/slack/events``)."""

    def __init__(self, url: str, response_url: Any, secret: str = SECRET) -> None:
        self.url = url
        self.secret = secret
        #: Makes a fresh response_url (the fake's) for each interaction.
        self.response_url = response_url
        self._session: aiohttp.ClientSession | None = None
        self._triggers = itertools.count(1)

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()

    async def post(
        self,
        body: str,
        *,
        content_type: str = "application/x-www-form-urlencoded",
        timestamp: int | None = None,
        secret: str | None = None,
        signed: bool = True,
    ) -> Answer:
        """POST ``body``, signed with ``secret`` (default the right one) at ``timestamp``
        (default now); ``signed=False`` sends no signature headers at all."""
        headers = {"Content-Type": content_type}
        if signed:
            stamp = str(int(time.time()) if timestamp is None else timestamp)
            headers["X-Slack-Request-Timestamp"] = stamp
            headers["X-Slack-Signature"] = signature(secret or self.secret, stamp, body)
        return await self.raw(body, headers)

    async def raw(self, body: str, headers: dict[str, str]) -> Answer:
        """POST ``body`` with exactly these headers (a form body unless they say else)."""
        if self._session is None:
            self._session = aiohttp.ClientSession()
        headers = {"Content-Type": "application/x-www-form-urlencoded", **headers}
        started = time.monotonic()
        async with self._session.post(self.url, data=body.encode(), headers=headers) as resp:
            text = await resp.text()
        return Answer(resp.status, text, time.monotonic() - started)

    def trigger(self) -> str:
        return f"{next(self._triggers)}.trigger"

    def command_body(
        self, text: str, *, user: str = "U1", channel: str = "C0123", team: str = TEAM
    ) -> str:
        return urlencode(
            {
                "token": "verification-token-unused",
                "team_id": team,
                "team_domain": "herald",
                "channel_id": channel,
                "channel_name": "general",
                "user_id": user,
                "user_name": user.lower(),
                "command": "/schedule",
                "text": text,
                "api_app_id": "A0HERALD",
                "is_enterprise_install": "false",
                "response_url": self.response_url(),
                "trigger_id": self.trigger(),
            }
        )

    async def command(
        self, text: str, *, user: str = "U1", channel: str = "C0123", team: str = TEAM
    ) -> Answer:
        return await self.post(self.command_body(text, user=user, channel=channel, team=team))

    async def interaction(self, payload: dict[str, Any]) -> Answer:
        return await self.post(urlencode({"payload": json.dumps(payload)}))

    async def click(
        self,
        action_id: str,
        value: str,
        *,
        user: str = "U1",
        block_id: str = "b",
        channel: str | None = "C0123",
        message: dict[str, Any] | None = None,
        home: bool = False,
        team: str = TEAM,
    ) -> Answer:
        """A button click on a message (ephemeral unless ``message``), or in the Home tab."""
        payload: dict[str, Any] = {
            "type": "block_actions",
            "team": {"id": team, "domain": "herald"},
            "user": {"id": user, "username": user.lower(), "team_id": team},
            "api_app_id": "A0HERALD",
            "trigger_id": self.trigger(),
            "actions": [
                {
                    "type": "button",
                    "action_id": action_id,
                    "block_id": block_id,
                    "value": value,
                    "action_ts": f"{time.time():.6f}",
                }
            ],
        }
        if home:
            payload["container"] = {"type": "view", "view_id": "VHOME"}
            payload["view"] = {"id": "VHOME", "type": "home", "blocks": []}
        else:
            payload["container"] = {
                "type": "message",
                "message_ts": "1700000000.000100",
                "channel_id": channel,
                "is_ephemeral": message is None,
            }
            payload["channel"] = {"id": channel, "name": "general"}
            payload["response_url"] = self.response_url()
            if message is not None:
                payload["message"] = message
        return await self.interaction(payload)

    async def submit(self, view: dict[str, Any], *, user: str = "U1", team: str = TEAM) -> Answer:
        """Submit a modal: ``view`` as opened, with ``state`` filled in."""
        payload = {
            "type": "view_submission",
            "team": {"id": team, "domain": "herald"},
            "user": {"id": user, "username": user.lower(), "team_id": team},
            "api_app_id": "A0HERALD",
            "trigger_id": self.trigger(),
            "view": {"hash": "h1", "team_id": team, **view},
        }
        return await self.interaction(payload)

    async def preview(self, view: dict[str, Any], *, user: str = "U1") -> Answer:
        """Enter pressed in the modal's "when" field."""
        when = view["state"]["values"]["when"]["when"]["value"]
        payload = {
            "type": "block_actions",
            "team": {"id": TEAM, "domain": "herald"},
            "user": {"id": user, "username": user.lower(), "team_id": TEAM},
            "api_app_id": "A0HERALD",
            "trigger_id": self.trigger(),
            "container": {"type": "view", "view_id": view["id"]},
            "view": {"hash": "h1", **view},
            "actions": [
                {
                    "type": "plain_text_input",
                    "action_id": "when",
                    "block_id": "when",
                    "value": when,
                    "action_ts": f"{time.time():.6f}",
                }
            ],
        }
        return await self.interaction(payload)

    async def home_opened(self, user: str = "U1") -> Answer:
        body = {
            "token": "verification-token-unused",
            "team_id": TEAM,
            "api_app_id": "A0HERALD",
            "type": "event_callback",
            "event_id": f"Ev{next(self._triggers)}",
            "event_time": int(time.time()),
            "event": {"type": "app_home_opened", "user": user, "channel": "D0HOME", "tab": "home"},
        }
        return await self.post(json.dumps(body), content_type="application/json")


def state(
    *,
    channel: str | list[str] | None = "C0123",
    text: str | None = None,
    when: str | None = None,
    date: str | None = None,
    time_: str | None = None,
    repeat: str | None = None,
    skip: str | None = None,
) -> dict[str, Any]:
    """A modal's ``state.values`` as Slack sends it on submission (``skip``: the "Skip
    dates from calendars" field)."""
    values: dict[str, Any] = {
        "text": {"text": {"type": "plain_text_input", "value": text}},
        "when": {"when": {"type": "plain_text_input", "value": when}},
        "date": {"date": {"type": "datepicker", "selected_date": date}},
        "time": {"time": {"type": "timepicker", "selected_time": time_}},
        "repeat": {
            "repeat": {
                "type": "static_select",
                "selected_option": {"value": repeat} if repeat else None,
            }
        },
    }
    if skip is not None:
        values["skip"] = {"skip": {"type": "plain_text_input", "value": skip}}
    if channel != "fixed":  # the picker takes several (multi_conversations_select)
        picked = [] if channel is None else [channel] if isinstance(channel, str) else channel
        values["channel"] = {
            "channel": {"type": "multi_conversations_select", "selected_conversations": picked}
        }
    return {"values": values}


def filled(opened: dict[str, Any], **fields: Any) -> dict[str, Any]:
    """The view as Slack opened it (``views.open``), with the person's input."""
    view = dict(opened["view"])
    view.setdefault("id", "V1")
    view["state"] = state(**fields)
    return view


def text_of(message: dict[str, Any]) -> str:
    """Everything a person reads in a message or view: its text and its blocks' texts."""
    parts = [str(message.get("text") or "")]
    for block in message.get("blocks") or []:
        text = block.get("text")
        if isinstance(text, dict):
            parts.append(str(text.get("text", "")))
        for element in block.get("elements") or []:
            if isinstance(element, dict) and isinstance(element.get("text"), (str, dict)):
                inner = element["text"]
                parts.append(inner if isinstance(inner, str) else str(inner.get("text", "")))
    return "\n".join(parts)


def action_ids(message: dict[str, Any]) -> list[str]:
    """The action ids of a message's buttons, in order."""
    return [
        element.get("action_id", "")
        for block in message.get("blocks") or []
        if block.get("type") == "actions"
        for element in block.get("elements") or []
    ]
