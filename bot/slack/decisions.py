"""Clicks that decide something of issue 40: **Done** under a message sent until done,
and **Approve** / **Reject** (with its reason modal) on an approval request.

Core decides who may: :meth:`core.cases.Herald.mark_done` checks the clicker's tenant
and that they saw the message where it was posted (``seen_in``), and
:meth:`core.cases.Herald.approve` / ``reject`` that they are an approver and not the
author; a refusal is answered with core's sentence, visible only to the clicker
(https://api.slack.com/interactivity/handling#message_responses). The Done edit of
the message is the dispatcher's (a job of the ladder), never the click's.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any
from zoneinfo import ZoneInfo

from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.respond.async_respond import AsyncRespond

from bot.slack import approvals
from bot.slack.base import ACK_BUDGET, SORRY, Person
from bot.slack.blocks import Blocks, notice, plain
from bot.slack.commands import Commands, responder
from bot.slack.words import escape
from core import limits, until_done
from core.channels.slack import DONE_ACTION_ID
from core.errors import HeraldError, InvalidInput

log = logging.getLogger(__name__)

#: What a click does once its clicker is let in.
Click = Callable[[dict[str, Any], Person, AsyncRespond], Awaitable[None]]

__all__ = ["DONE_ACTION_ID", "Decisions"]


def _action(body: dict[str, Any]) -> dict[str, Any]:
    actions = body.get("actions") or [{}]
    return actions[0] if isinstance(actions[0], dict) else {}


def _number(body: dict[str, Any], what: str) -> int:
    try:
        return int(str(_action(body).get("value", "")))
    except ValueError:
        raise InvalidInput(f"That button carries no {what} number.") from None


def _channel(body: dict[str, Any]) -> str:
    return str(
        (body.get("channel") or {}).get("id")
        or (body.get("container") or {}).get("channel_id")
        or ""
    )


def _ephemeral(body: dict[str, Any]) -> bool:
    container = body.get("container") or {}
    return container.get("type") == "view" or bool(container.get("is_ephemeral"))


class Decisions(Commands):
    """Done, Approve and Reject."""

    # --- Done -----------------------------------------------------------------------

    async def clicked(
        self, ack: AsyncAck, body: dict[str, Any], respond: AsyncRespond, work: Click
    ) -> None:
        """A button's click: acknowledged at once, the clicker let in by the workspace
        of the signed payload (never a button's value), then ``work``, its refusal said
        to the clicker alone."""
        with self.tracker.track():
            await ack()
            person = await self.entrant(str(body["user"]["id"]), body, responder(respond))
            if person is None:
                return
            await self.guard(work(body, person, respond), responder(respond))

    async def on_done(self, ack: AsyncAck, body: dict[str, Any], respond: AsyncRespond) -> None:
        await self.clicked(ack, body, respond, self._done)

    async def _done(self, body: dict[str, Any], person: Person, respond: AsyncRespond) -> None:
        """Done on an occurrence's message: where it was seen is the message's channel,
        or, in a direct message with Herald, the clicker's own direct messages."""
        job_id = _number(body, "message")
        channel = _channel(body)
        seen_in = f"slack:@{person.user_id}" if channel.startswith("D") else f"slack:{channel}"
        done = await self.herald.mark_done(person.principal, job_id, seen_in=seen_in)
        if done.already:
            who = until_done.mention(done.by)  # a Slack member's mention, else their id
            who = who if who.startswith("<@") else escape(who)
            at = done.at.astimezone(ZoneInfo(person.zone))
            await responder(respond)(notice(f"Already done by {who} at {at:%H:%M}."))

    # --- Approve and Reject -----------------------------------------------------------

    def _approval_surface(self, body: dict[str, Any]) -> bool:
        """Whether an approval click came from where Herald posts requests: a reply
        only the clicker sees, a direct message with Herald, or the alert channel."""
        if _ephemeral(body):
            return True
        channel = _channel(body)
        alerts = (self.settings.slack_alert_channel or "").removeprefix("slack:")
        return channel.startswith("D") or (bool(alerts) and channel == alerts)

    async def on_approval_button(
        self, ack: AsyncAck, body: dict[str, Any], respond: AsyncRespond
    ) -> None:
        await self.clicked(ack, body, respond, self._approval_button)

    async def _approval_button(
        self, body: dict[str, Any], person: Person, respond: AsyncRespond
    ) -> None:
        if not self._approval_surface(body):
            raise InvalidInput("Herald's buttons work only on Herald's own requests.")
        approval_id = _number(body, "request")
        if _action(body).get("action_id") == approvals.REJECT:
            view = approvals.reject_modal(approval_id, self._place(body))
            await self.client.views_open(trigger_id=str(body["trigger_id"]), view=view)
            return
        await self.herald.approve(person.principal, [approval_id])
        said = approvals.outcome(True, person.user_id, self.herald.clock.now(), person.zone, None)
        await self._show_decided(person, self._place(body), approval_id, said, respond)

    def _place(self, body: dict[str, Any]) -> dict[str, Any]:
        """Where the clicked request is shown, for its update once decided: the
        message's channel and ts (not for a reply only the clicker sees), its
        response_url, and its blocks."""
        message = body.get("message") or {}
        place: dict[str, Any] = {"url": body.get("response_url")}
        if not _ephemeral(body) and message.get("ts"):
            place |= {"channel": _channel(body), "ts": message["ts"]}
        if message.get("blocks"):
            place["blocks"] = message["blocks"]
        return place

    async def _show_decided(
        self,
        person: Person,
        place: dict[str, Any],
        approval_id: int,
        said: str,
        respond: AsyncRespond | None,
    ) -> None:
        """The clicked message with this request's buttons replaced by who decided:
        ``chat.update`` for a posted message (a response_url lasts 30 minutes), else
        its response_url. A reply only the clicker sees comes without its blocks
        (``/schedule approvals``): it is replaced by the list as it is now."""
        blocks: Blocks | None = place.get("blocks")
        answer = respond or (AsyncRespond(response_url=place["url"]) if place.get("url") else None)
        if not blocks:
            if answer is None:
                return
            if place.get("channel"):  # a posted message too long to carry: said beside it
                await responder(answer)(notice(said))
            else:
                await responder(answer, replace=True)(await self.approvals_now(person, said))
            return
        updated = approvals.decided(blocks, approval_id, said)
        text = limits.clip(said, limits.SLACK_TEXT)
        if place.get("channel") and place.get("ts"):
            await self.client.chat_update(
                channel=place["channel"], ts=place["ts"], text=text, blocks=updated
            )
        elif answer is not None:
            await answer(text=text, blocks=updated, replace_original=True)

    async def on_reject_submit(
        self, ack: AsyncAck, body: dict[str, Any], view: dict[str, Any]
    ) -> None:
        """The Reject modal sent: the request rejected with its reason, or core's refusal
        on the reason field (the modal stays open)."""
        with self.tracker.track():
            error: str | None = None
            decided = None
            try:
                approval_id, reason, place = approvals.read_reject(view)
                async with asyncio.timeout(ACK_BUDGET):
                    person = await self.person(str(body["user"]["id"]), body)
                    await self.herald.reject(person.principal, [approval_id], reason=reason)
                decided = (person, approval_id, reason, place)
            except TimeoutError:
                error = "Slack could not wait for Herald: try again."
            except HeraldError as exc:
                error = plain(exc)
            except Exception:  # the handler boundary
                log.exception("slack reject submission failed")
                error = SORRY.removeprefix(":warning: ")
            if error is not None:
                await ack(response_action="errors", errors={approvals.REASON: error})
                return
            await ack()
            assert decided is not None
            person, approval_id, reason, place = decided
            said = approvals.outcome(
                False, person.user_id, self.herald.clock.now(), person.zone, reason
            )
            try:
                await self._show_decided(person, place, approval_id, said, None)
            except Exception:  # the decision stands; only its display failed
                log.warning("could not update a decided approval request", exc_info=True)
