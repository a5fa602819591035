"""Buttons (on replies, in the Home tab, on dead-letter alerts) and the Home tab itself."""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.respond.async_respond import AsyncRespond

from bot.slack import pending
from bot.slack.base import Person, Send
from bot.slack.blocks import Page, Reply, date_token, notice, schedule_reply
from bot.slack.commands import DONE, done_headline, done_reply, responder
from bot.slack.dead import DECISIONS, decided
from bot.slack.decisions import Decisions
from bot.slack.notices import EDIT, RESUME, RETRY
from core.errors import InvalidInput, PermissionDenied

log = logging.getLogger(__name__)

REFUSED = (
    ":no_entry: Only Herald admins can retry or discard dead letters. "
    "Ask one of them (HERALD_ADMINS, or your workspace admins when Herald trusts them)."
)


#: The icon of an alert's outcome, by decision.
ICONS = {"retry": ":repeat:", "discard": ":wastebasket:"}


def _in_home(body: dict[str, Any]) -> bool:
    return (body.get("view") or {}).get("type") == "home"


def _action(body: dict[str, Any]) -> dict[str, Any]:
    actions = body.get("actions") or [{}]
    return actions[0] if isinstance(actions[0], dict) else {}


def _herald_surface(body: dict[str, Any]) -> bool:
    """Whether a click came from something only Herald makes: its Home tab or modal,
    or an ephemeral reply. A delivered message is posted by the bot too, and may carry
    blocks its author wrote; core refuses Herald's own action ids in those, and this is
    the second lock."""
    container = body.get("container") or {}
    return container.get("type") == "view" or bool(container.get("is_ephemeral"))


async def _unanswered(reply: Reply) -> None:
    """Nowhere to answer (an App Home event): the refusal is only logged."""
    log.info("slack request refused: %s", reply[0])


def _ids(value: str) -> list[int]:
    try:
        ids = [int(part) for part in value.split(",") if part.strip()]
    except ValueError:
        raise InvalidInput("That button carries no dead-letter id.") from None
    if not ids:
        raise InvalidInput("That button carries no dead-letter id.")
    return ids


class Actions(Decisions):
    """Block actions and App Home events."""

    def _alert_surface(self, body: dict[str, Any]) -> bool:
        """Whether a dead-letter click came from Herald's alert channel or Home tab."""
        if _herald_surface(body):
            return True
        channel = ((body.get("container") or {}).get("channel_id")) or (
            (body.get("channel") or {}).get("id")
        )
        alerts = (self.settings.slack_alert_channel or "").removeprefix("slack:")
        return bool(alerts) and channel == alerts

    def sender(self, body: dict[str, Any], person: Person, respond: AsyncRespond) -> Send:
        """Where a click's reply goes: the Home tab, or an ephemeral message."""
        if _in_home(body):
            return self.home_sender(person)
        return responder(respond)

    # --- schedule buttons ---------------------------------------------------------

    async def on_schedule_button(
        self, ack: AsyncAck, body: dict[str, Any], respond: AsyncRespond
    ) -> None:
        with self.tracker.track():
            await ack()
            person = await self.entrant(str(body["user"]["id"]), body, responder(respond))
            if person is None:
                return
            await self.guard(
                self._schedule_button(body, person, respond), self.sender(body, person, respond)
            )

    async def _schedule_button(
        self, body: dict[str, Any], person: Person, respond: AsyncRespond
    ) -> None:
        action = _action(body)
        verb = str(action.get("action_id", "")).removeprefix("herald_")
        if not _herald_surface(body):
            raise InvalidInput("Herald's buttons work only on Herald's own replies and Home tab.")
        try:
            schedule_id = int(action.get("value", ""))
        except ValueError:
            raise InvalidInput("That button carries no schedule number.") from None
        if verb == "edit":
            detail = await self.herald.show_schedule(person.principal, schedule_id)
            await self.open_modal(str(body["trigger_id"]), person, schedule=detail.schedule)
            return
        updated = await self.change(person, verb, schedule_id)
        if _in_home(body):
            await self.publish_home(person, done_headline(verb, schedule_id))
            return
        one = str(action.get("block_id", "")).endswith(":one")
        await responder(respond, replace=one)(done_reply(updated, verb))

    # --- a create held back by a duplicate ----------------------------------------------

    async def on_duplicate_button(
        self, ack: AsyncAck, body: dict[str, Any], respond: AsyncRespond
    ) -> None:
        await self.clicked(ack, body, respond, self._duplicate_button)

    async def _duplicate_button(
        self, body: dict[str, Any], person: Person, respond: AsyncRespond
    ) -> None:
        """Create anyway (the request held back, again, duplicates let through) or
        Cancel, by the person who asked only; the question is replaced by the answer."""
        channel = str((body.get("channel") or {}).get("id", ""))
        if not (_herald_surface(body) or channel.startswith("D")):  # a reply, or a DM
            raise InvalidInput("Herald's buttons work only on Herald's own replies.")
        action = _action(body)
        token = str(action.get("value", ""))
        tenant = person.principal.tenant
        if action.get("action_id") == pending.CANCEL:
            try:
                self.pending.take(token, tenant, person.user_id)
            except InvalidInput:  # expired: nothing was scheduled either
                pass
            await responder(respond, replace=True)(notice(pending.CANCELLED))
            return
        held = self.pending.take(token, tenant, person.user_id)
        try:
            created = await held.value(person)
        except Exception:
            self.pending.put_back(token, held)  # refused (said to them alone): press again
            raise
        await responder(respond, replace=True)(created)

    # --- list pages ---------------------------------------------------------------

    async def on_list_page(
        self, ack: AsyncAck, body: dict[str, Any], respond: AsyncRespond
    ) -> None:
        await self.clicked(ack, body, respond, self._list_page)

    async def _list_page(self, body: dict[str, Any], person: Person, respond: AsyncRespond) -> None:
        """Previous or Next under a list: the list replaced by that page, for the person
        who asked for it only (in their workspace), read as the list itself is."""
        if not _herald_surface(body):
            raise InvalidInput("Herald's buttons work only on Herald's own replies and Home tab.")
        page = Page.loads(str(_action(body).get("value", "")))
        if (page.tenant, page.user) != (person.principal.tenant, person.user_id):
            raise PermissionDenied(
                "These page buttons belong to someone else's list: `/schedule list` shows yours."
            )
        await responder(respond, replace=True)(await self.list_page(person, page))

    # --- the Home tab ---------------------------------------------------------------

    async def on_open_modal(self, ack: AsyncAck, body: dict[str, Any]) -> None:
        with self.tracker.track():
            await ack()
            person = await self.entrant(str(body["user"]["id"]), body, _unanswered)
            if person is None:
                return
            await self.guard(
                self.open_modal(str(body["trigger_id"]), person), self.home_sender(person)
            )

    async def on_home_opened(self, event: dict[str, Any], body: dict[str, Any]) -> None:
        if event.get("tab") != "home":
            return
        with self.tracker.track():
            person = await self.entrant(str(event["user"]), body, _unanswered)
            if person is None:
                return
            await self.guard(self.publish_home(person), self.home_sender(person))

    # --- dead letters ---------------------------------------------------------------

    async def on_dead_letter_button(
        self, ack: AsyncAck, body: dict[str, Any], respond: AsyncRespond
    ) -> None:
        with self.tracker.track():
            await ack()
            person = await self.entrant(str(body["user"]["id"]), body, responder(respond))
            if person is None:
                return
            send = self._refusal_sender(body, person, respond)
            await self.guard(self._decide(body, person, respond, send), send)

    def _refusal_sender(self, body: dict[str, Any], person: Person, respond: AsyncRespond) -> Send:
        """Ephemeral in the alert's channel (``chat.postEphemeral``), or the Home tab."""
        if _in_home(body):
            return self.home_sender(person)
        channel = (body.get("channel") or {}).get("id")
        if not channel:
            return responder(respond)

        async def send(reply: Reply) -> None:
            text, blocks = reply
            await self.client.chat_postEphemeral(
                channel=channel, user=person.user_id, text=text, blocks=blocks
            )

        return send

    async def _decide(
        self, body: dict[str, Any], person: Person, respond: AsyncRespond, send: Send
    ) -> None:
        action = _action(body)
        if not self._alert_surface(body):
            raise InvalidInput("Herald's buttons work only on Herald's own alerts and Home tab.")
        job_ids = _ids(str(action.get("value", "")))
        chosen = DECISIONS.get(str(action.get("action_id", "")))
        if chosen is None:
            raise InvalidInput("That button is not one of Herald's.")
        try:  # core checks the role and the tenant, and audits a refusal
            count = await self.herald.decide_dead_letters(person.principal, job_ids, chosen.name)
        except PermissionDenied:
            await send(notice(REFUSED))
            return
        when = date_token(self.herald.clock.now())
        outcome = f"{chosen.done} {count} by <@{person.user_id}> {when}."
        icon = ICONS.get(chosen.name, ":white_check_mark:")
        if _in_home(body):
            await self.publish_home(person, f"{icon} {outcome}")
            return
        message = body.get("message") or {}
        blocks = decided(message.get("blocks") or [], f"{icon} {outcome}")
        channel = (body.get("channel") or {}).get("id")
        if channel and message.get("ts"):  # an alert: chat.update works after response_url expires
            await self.client.chat_update(
                channel=channel, ts=message["ts"], text=outcome, blocks=blocks
            )
        else:
            await respond(text=outcome, blocks=blocks, replace_original=True)

    # --- an author's failure notices -------------------------------------------------

    async def on_notice_button(
        self, ack: AsyncAck, body: dict[str, Any], respond: AsyncRespond
    ) -> None:
        await self.clicked(ack, body, respond, self._notice_button)

    async def _notice_button(
        self, body: dict[str, Any], person: Person, respond: AsyncRespond
    ) -> None:
        """Request retry, Resume or Edit under a failure notice in the author's direct
        messages with Herald; core checks that the job or schedule is theirs."""
        channel = str((body.get("channel") or {}).get("id", ""))
        if not channel.startswith("D"):
            raise InvalidInput(
                "These buttons work only on Herald's notices in your direct messages."
            )
        action = _action(body)
        try:
            target = int(action.get("value", ""))
        except ValueError:
            raise InvalidInput("That button carries no number.") from None
        name = str(action.get("action_id", ""))
        if name == EDIT:
            detail = await self.herald.show_schedule(person.principal, target)
            await self.open_modal(str(body["trigger_id"]), person, schedule=detail.schedule)
            return
        if name == RESUME:
            updated = await self.change(person, "resume", target)
            await responder(respond)(
                schedule_reply(updated, f"{DONE['resume']} schedule #{target}.")
            )
            return
        if name != RETRY:
            raise InvalidInput("That button is not one of Herald's.")
        done, count = await self.herald.retry_dead_letters(person.principal, [target])
        if not count:
            text = f"Dead letter {target} was already retried or decided."
        elif done == "requested":
            text = (
                f":hourglass: Asked an admin to retry dead letter {target}; "
                "you will hear here what they decide."
            )
        else:
            text = f":repeat: Dead letter {target} is being sent again."
        await responder(respond)(notice(text))


__all__ = ["Actions", "DECISIONS"]
