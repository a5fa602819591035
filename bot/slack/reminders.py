"""Reminders in Slack: ``/schedule me …`` and ``/schedule @someone …`` (a direct message
from the bot, :mod:`core.reminders`), and the Snooze and Done buttons under a delivered
reminder.

Another person is reminded only when Slack says they are a person of the same workspace
(``users.info``: ``team_id``, not a bot, not deactivated); Herald then records them as a
member of that tenant, which is what core checks.
"""

from __future__ import annotations

import logging
from typing import Any

import aiohttp
from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.respond.async_respond import AsyncRespond
from slack_sdk.errors import SlackApiError

from bot.slack import grammar, ladder_words, templated
from bot.slack.base import Base, Duplicates, Person, request_team
from bot.slack.blocks import Reply, context, date_token, schedule_reply
from bot.slack.directory import error_code
from bot.slack.ladder_words import Ladder
from bot.slack.targets import ME
from core import reminders
from core.actors import Principal
from core.errors import InvalidInput, PermissionDenied
from core.preferences import URGENT

log = logging.getLogger(__name__)

#: The action ids of a reminder's buttons, for the Bolt app's router.
ACTION_PATTERN = rf"^{reminders.SLACK_ACTION_PREFIX}({'|'.join(reminders.CHOICES)})$"


def urgency(person: Person, command: grammar.Create) -> str | None:
    """``urgent`` for ``/schedule urgent …`` by an admin or an operator (None: normal);
    anyone else is refused with one sentence, before anything is looked up."""
    if not command.urgent:
        return None
    if not person.actor.sees_everything:
        raise PermissionDenied(
            "Only admins and operators can send urgent messages: schedule it without "
            "`urgent` and it goes out as a normal one."
        )
    return URGENT


class NotColleague(PermissionDenied):
    """Slack says the person named is no person of this workspace. The message is
    mrkdwn: its mention (a checked user id) shows as the person's name."""

    mrkdwn = True


class Reminders(Base):
    """The reminder commands and buttons."""

    async def remind(
        self,
        person: Person,
        command: grammar.Create,
        body: dict[str, Any],
        duplicates: Duplicates = "warn",
        seen_in: str | None = None,
    ) -> Reply:
        """Schedule a reminder for the person typing or for the member they named
        (``duplicates`` and ``seen_in``: as :meth:`core.cases.Herald.create_schedule`
        takes them)."""
        assert command.person is not None
        user = person.user_id if command.person == grammar.ME else command.person
        if user != person.user_id:
            await self._record_colleague(user, body)
        await self.check_ladder(person, command.until_done, body)
        schedule, created = await self.herald.create_schedule(
            person.principal,
            to=f"slack:@{user}",
            when=command.when,
            text=command.text,
            tz=person.zone,
            key=f"slack-trigger:{body['trigger_id']}" if body.get("trigger_id") else None,
            their_time=command.their_time,
            priority=urgency(person, command),
            **templated.create_args(command.template, command.data),
            **ladder_words.create_args(command.until_done, person.user_id),
            private=command.private,
            duplicates=duplicates,
            seen_in=seen_in,
        )
        whom = "you" if user == person.user_id else f"<@{user}>"
        headline = (
            f":white_check_mark: Reminder for {whom} scheduled (a direct message from Herald"
            + ("" if whom == "you" else "; they will see that you asked")
            + ")."
            if created
            else f"Reminder for {whom} already scheduled."
        )
        if created and user != person.user_id:
            headline += await self._tell(user, person.user_id)
        return schedule_reply(schedule, headline, read_back=created)

    async def _tell(self, user: str, asker: str) -> str:
        """Tell ``user`` at once, by direct message, that ``asker`` scheduled a reminder
        for them (the reminder says so again when it comes): conversations.open, then
        chat.postMessage. A sentence for the asker's reply when Slack refused."""
        try:
            opened = await self.client.conversations_open(users=user)
            channel = str((opened.get("channel") or {}).get("id", ""))
            await self.client.chat_postMessage(
                channel=channel,
                text=f"<@{asker}> scheduled a reminder for you: Herald will send it here, "
                "in this direct message.",
            )
        except (TimeoutError, SlackApiError, aiohttp.ClientError) as exc:
            code = error_code(exc)
            log.info("could not tell a reminded member: %s", code, extra={"user": user})
            return (
                f" Herald could not tell them now (Slack answered `{code}`), so the reminder "
                "may not reach them either."
            )
        return ""

    async def check_ladder(
        self, person: Person, ladder: Ladder | None, body: dict[str, Any]
    ) -> None:
        """The people and channels an ``until done`` ladder escalates to, checked as a
        reminder's person and a message's channel are: each person a member of this
        workspace (recorded, so core knows them), each channel one the person is in."""
        for to, _ in ladder.levels if ladder is not None else ():
            for destination in to:
                target = destination.removeprefix("slack:")
                if target.startswith("@") and target[1:] != person.user_id:
                    await self._record_colleague(target[1:], body)
                elif not target.startswith("@") and target != ME:
                    await self.directory.check_member(person.user_id, target)

    async def _record_colleague(self, user: str, body: dict[str, Any]) -> None:
        """Record ``user`` as a member of this workspace's tenant when Slack says they
        are a person of this workspace; PermissionDenied otherwise."""
        team_id, enterprise_id = request_team(body)
        try:
            answer = await self.client.users_info(user=user)
        except (TimeoutError, SlackApiError, aiohttp.ClientError) as exc:
            if error_code(exc) == "user_not_found":
                raise NotColleague(
                    f"Slack knows no user <@{user}> here: pick the person from Slack's "
                    "suggestions as you type."
                ) from None
            log.warning("slack users.info failed: %s", error_code(exc), extra={"user": user})
            raise InvalidInput(
                "Herald could not ask Slack who that is just now; try again in a minute."
            ) from None
        data = answer.get("user") or {}
        org = (data.get("enterprise_user") or {}).get("enterprise_id")
        same = data.get("team_id") == team_id or (
            enterprise_id is not None and org == enterprise_id
        )
        if not same:
            raise NotColleague(
                f"<@{user}> is not in this workspace: Herald reminds members of the "
                "workspace you type in."
            )
        if data.get("is_bot") or data.get("deleted"):
            raise NotColleague(f"<@{user}> is a bot or deactivated: Herald reminds people.")
        profile = data.get("profile") or {}
        name = profile.get("display_name") or profile.get("real_name") or data.get("name")
        await self.herald.sync_member(
            Principal(f"slack:{user}", self.tenant(body)),
            display_name=str(name) if name else None,
        )

    # --- the buttons under a delivered reminder ----------------------------------------

    async def on_reminder_button(
        self, ack: AsyncAck, body: dict[str, Any], respond: AsyncRespond
    ) -> None:
        with self.tracker.track():
            await ack()

            async def tell(reply: Reply) -> None:  # refusals: to the clicker alone
                await respond(
                    text=reply[0],
                    blocks=reply[1],
                    response_type="ephemeral",
                    replace_original=False,
                )

            person = await self.entrant(str(body["user"]["id"]), body, tell)
            if person is None:
                return
            await self.guard(self._reminder_button(body, person), tell)

    async def _reminder_button(self, body: dict[str, Any], person: Person) -> None:
        actions = body.get("actions") or [{}]
        action = actions[0] if isinstance(actions[0], dict) else {}
        choice = str(action.get("action_id", "")).removeprefix(reminders.SLACK_ACTION_PREFIX)
        container = body.get("container") or {}
        channel = str(container.get("channel_id") or (body.get("channel") or {}).get("id") or "")
        ts = str(container.get("message_ts") or "")
        if not channel.startswith("D") or not ts or container.get("is_ephemeral"):
            raise InvalidInput("Reminder buttons work only on a reminder in your direct messages.")
        try:
            schedule_id = int(action.get("value", ""))
        except ValueError:
            raise InvalidInput("That button carries no reminder number.") from None
        if choice == reminders.DONE:
            await self.herald.finish_reminder(person.principal, schedule_id)
            note = ":white_check_mark: Done."
        else:
            snoozed = await self.herald.snooze_reminder(
                person.principal, schedule_id, choice, message=f"{channel}/{ts}"
            )
            new = snoozed.schedule
            at = new.next_run_at
            when = date_token(at, new.timezone) if at is not None else "later"
            note = f":zzz: Snoozed: Herald reminds you again {when} (#{new.id})."
        message = body.get("message") or {}
        kept = [
            b
            for b in message.get("blocks") or []
            if not str(b.get("block_id", "")).startswith("herald_reminder:")
        ]
        text = str(message.get("text") or "Reminder")
        await self.client.chat_update(
            channel=channel, ts=ts, text=text, blocks=[*kept, context(note)]
        )
