"""``/schedule`` and the schedule modal: Slack payloads in, :class:`core.cases.Herald`
calls out."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from dataclasses import dataclass
from typing import Any

from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.respond.async_respond import AsyncRespond
from slack_sdk.errors import SlackApiError

from bot.slack import approvals, grammar, ladder_words, templated
from bot.slack.base import ACK_BUDGET, SORRY, Duplicates, Person, Send, seen_in
from bot.slack.blocks import (
    AGENDA_COUNTED,
    Page,
    Reply,
    agenda_reply,
    date_token,
    detail_reply,
    duplicate_reply,
    feed_added,
    feeds_reply,
    list_reply,
    long_notice,
    notice,
    plain,
    recipients_line,
    schedule_reply,
    section,
    shown,
    templates_reply,
    where,
)
from bot.slack.grammar import escape
from bot.slack.modal import (
    ModalMeta,
    Submission,
    fingerprint,
    read_submission,
)
from bot.slack.pending import duplicates_found
from bot.slack.reminders import urgency
from bot.slack.template_modal import TemplateModal
from core import calendars, limits, verbs
from core.approvals import is_approver
from core.cases import PreferenceChanges, check_text
from core.channels import parse_destination
from core.errors import Conflict, HeraldError, InvalidInput, NotFound
from core.models import Schedule

log = logging.getLogger(__name__)

#: What ``/schedule prefs notices on|off`` answers.
NOTICES_ON = (
    "Saved: Herald tells you here when a message you scheduled fails "
    "(`/schedule prefs notices off` to stop)."
)
NOTICES_OFF = (
    "Saved: Herald no longer tells you here when a message you scheduled fails; "
    "`/schedule list failed` still shows them (`/schedule prefs notices on` to be told again)."
)

#: How a reply starts once a verb is done ("Paused schedule #12."), from core/verbs.py.
DONE = {v.name: v.done for v in verbs.offered(verbs.SLACK, verbs.STATE_VERBS)}


def done_headline(verb: str, schedule_id: int) -> str:
    """The first line once ``verb`` is done: "Paused schedule #12.", "Sending now:
    schedule #12." (its read-back says which occurrence)."""
    if verb == "send-now":
        return f":outbox_tray: {DONE[verb]}: schedule #{schedule_id}."
    return f"{DONE[verb]} schedule #{schedule_id}."


def done_reply(updated: Schedule, verb: str) -> Reply:
    """The schedule once ``verb`` is done, with its buttons; after Send now, what was
    sent and what stays (its save note)."""
    headline = done_headline(verb, updated.id or 0)
    return schedule_reply(updated, headline, full=True, read_back=verb == "send-now")


def responder(respond: AsyncRespond, *, replace: bool = False) -> Send:
    """Replies through the payload's ``response_url``, visible only to the person."""

    async def send(reply: Reply) -> None:
        text, blocks = reply
        await respond(
            text=text,
            blocks=blocks,
            response_type="ephemeral",
            replace_original=replace,
        )

    return send


class Commands(TemplateModal):
    """The slash command, the modal's submission and its preview."""

    # --- /schedule ----------------------------------------------------------------

    async def on_command(self, ack: AsyncAck, body: dict[str, Any], respond: AsyncRespond) -> None:
        with self.tracker.track():
            await ack()
            await self.guard(self._command(body, respond), responder(respond))

    async def _command(self, body: dict[str, Any], respond: AsyncRespond) -> None:
        send = responder(respond)
        command = grammar.parse(body.get("text") or "")
        user_id = str(body["user_id"])
        channel = str(body.get("channel_id") or "")
        person = await self.person(user_id, body)
        actor = person.principal
        match command:
            case grammar.Help():
                await send(long_notice(grammar.HELP))
            case grammar.OpenModal():
                await self.open_modal(str(body["trigger_id"]), person, channel=channel)
            case grammar.Prefs(notices=bool(on)):
                await self.herald.set_preferences(actor, PreferenceChanges(notices=on))
                await send(notice(NOTICES_ON if on else NOTICES_OFF))
            case grammar.Prefs(tenant=tenant):
                await self.open_prefs(str(body["trigger_id"]), person, tenant=tenant)
            case grammar.Listing(everyone=everyone, state=state):
                page = Page(actor.tenant, user_id, everyone, state)
                await send(await self.list_page(person, page))
            case grammar.Agenda(channel=wanted, channel_name=name):
                await send(await self.agenda_of(person, wanted, name, channel))
            case grammar.Privacy(schedule_id=sid, private=hidden):
                updated = await self.herald.edit_schedule(actor, sid, private=hidden)
                said = (
                    f":lock: Schedule #{sid} is private: its channel's list (`/schedule list "
                    "here`) leaves it out for everyone but you."
                    if hidden
                    else f"Schedule #{sid} is in its channel's list again (`/schedule list here`)."
                )
                await send(schedule_reply(updated, said))
            case grammar.Timezone(zone=None):
                await send(notice(self._zone_text(person)))
            case grammar.Timezone(zone=str(zone)):
                name = await self.herald.set_timezone(actor, zone)
                await send(notice(f":white_check_mark: Herald now reads your times in *{name}*."))
            case grammar.Act(verb="show", schedule_id=sid):
                await send(detail_reply(await self.herald.show_schedule(actor, sid)))
            case grammar.Act(verb="edit", schedule_id=sid):
                detail = await self.herald.show_schedule(actor, sid)
                await self.open_modal(str(body["trigger_id"]), person, schedule=detail.schedule)
            case grammar.Act(verb=verb, schedule_id=sid):
                await send(done_reply(await self.change(person, verb, sid), verb))
            case grammar.Create():
                await send(await self.create_or_ask(person, command, channel, body))
            case grammar.FeedAdd():
                await send(await self._feed_add(person, command, channel))
            case grammar.FeedList():
                await send(feeds_reply(await self.herald.list_feeds(actor)))
            case grammar.TemplateList():
                await send(templates_reply(await self.herald.list_templates(actor)))
            case grammar.Approvals():
                await send(await self.approvals_now(person))
            case grammar.FeedRemove(feed_id=fid):
                count = await self.herald.remove_feed(actor, fid)
                cancelled = f"{count} waiting reminder{'s' if count != 1 else ''} cancelled"
                await send(notice(f":wastebasket: Feed #{fid} removed; {cancelled}."))

    async def approvals_now(self, person: Person, headline: str | None = None) -> Reply:
        """``/schedule approvals``: the pending requests the person may see, with Approve
        and Reject when they are an approver; ``headline`` first (a decision just made)."""
        rows = await self.herald.approvals(person.principal)
        approver = is_approver(person.actor, self.settings)
        text, blocks = approvals.list_reply(rows, approver=approver, me=person.actor.id)
        if headline is None:
            return text, blocks
        return headline, [section(headline), *blocks][: limits.SLACK_MESSAGE_BLOCKS.size]

    def _zone_text(self, person: Person) -> str:
        return (
            f"Herald reads your times in *{person.zone}* ({person.zone_source}). "
            "Change it with `/schedule timezone Europe/Berlin`."
        )

    async def list_page(self, person: Person, page: Page) -> Reply:
        """One page of the person's list (or everyone's: core refuses those who may
        not see it), exactly as ``/schedule list`` reads it."""
        actor = person.principal
        if page.state is None:
            schedules = await self.live_schedules(actor, everyone=page.everyone)
        else:
            schedules = await self.herald.list_schedules(
                actor, everyone=page.everyone, state=page.state
            )
        return list_reply(schedules, page, person.actor)

    async def agenda_of(
        self, person: Person, channel: str | None, name: str | None, here: str
    ) -> Reply:
        """``/schedule list here`` (``channel`` and ``name`` None) or ``list #channel``:
        what is scheduled into that channel, as core lets the person see it (the channel
        the command was typed in proves they are in it; another one Slack is asked)."""
        if name is not None:
            channel = await self.channel_names.find(person.principal.tenant, name)
        target = channel or here
        if not target:
            raise grammar.Refusal(f"Say which channel, e.g. `{grammar.AGENDA_EXAMPLE}`.")
        destination = f"slack:{target}"
        entries = await self.herald.agenda(
            person.principal,
            destination,
            seen_in=seen_in(here) if here else None,
            limit=AGENDA_COUNTED + 1,  # one more: whether there are more than counted
        )
        return agenda_reply(entries, destination, person.actor.id)

    async def create_or_ask(
        self, person: Person, command: grammar.Create, here: str, body: dict[str, Any]
    ) -> Reply:
        """Create, unless the same message is already scheduled there at about the same
        time: then nothing is saved and the person is asked, with [Create anyway]
        (the same request again, duplicates let through) and [Cancel]."""
        try:
            return await self._create(person, command, here, body, duplicates="refuse")
        except Conflict as exc:
            found = duplicates_found(exc)
            if found is None:
                raise

            async def again(who: Person) -> Reply:
                return await self._create(who, command, here, body, duplicates="ignore")

            token = self.pending.hold(person.principal.tenant, person.user_id, again)
            return duplicate_reply(found, token)

    async def change(self, person: Person, verb: str, schedule_id: int) -> Schedule:
        """Cancel, pause, resume, skip or send now (core/verbs.py): one use case each."""
        if verb not in DONE:
            raise ValueError(f"unknown verb {verb!r}")
        updated: Schedule = await verbs.perform(self.herald, verb, person.principal, schedule_id)
        return updated

    async def _create(
        self,
        person: Person,
        command: grammar.Create,
        here: str,
        body: dict[str, Any],
        *,
        duplicates: Duplicates = "warn",
    ) -> Reply:
        priority = urgency(person, command)
        if command.template is not None:
            await self.check_template(person, command.template)
        seen = seen_in(here)
        if command.person is not None or command.targets:
            when, text = self._reading(person, command)
            read = dataclasses.replace(command, when=when, text=text, alternatives=())
            if command.targets:  # /schedule #ops #dev @alice …, @alice or alice@…
                return await self.several(person, read, body, duplicates, seen)
            return await self.remind(person, read, body, duplicates, seen)  # me …, @someone …
        channel = command.channel or here
        if command.channel_name is not None:
            channel = await self.channel_names.find(person.principal.tenant, command.channel_name)
        when, text = self._reading(person, command)
        await self.directory.check_member(person.user_id, channel)
        await self.check_ladder(person, command.until_done, body)
        schedule, created = await self.herald.create_schedule(
            person.principal,
            to=f"slack:{channel}",
            when=when,
            text=text,
            tz=person.zone,
            key=f"slack-trigger:{body['trigger_id']}" if body.get("trigger_id") else None,
            their_time=command.their_time,
            priority=priority,
            **templated.create_args(command.template, command.data),
            **ladder_words.create_args(command.until_done, person.user_id),
            private=command.private,
            duplicates=duplicates,
            seen_in=seen,
        )
        headline = ":white_check_mark: Scheduled" if created else "Already scheduled"
        headline += templated.named(schedule)
        reply = schedule_reply(
            schedule, f"{headline} for {where(schedule.destination)}.", read_back=created
        )
        return await self.held(person, schedule, reply)

    def _reading(self, person: Person, command: grammar.Create) -> tuple[str, str]:
        """``(when, text)`` of a create: in /remind's order the first reading whose WHEN
        reads as a time (in the person's zone); else the only one. When none reads,
        the first reading's error (with its suggestion) is raised."""
        readings = [(command.when, command.text), *command.alternatives]
        if len(readings) == 1:
            return readings[0]
        first: HeraldError | None = None
        for when, text in readings:
            try:
                phrase, _ = calendars.split_skip_phrase(when)
                self.herald.read_when(phrase, person.zone, actor=person.principal)
            except HeraldError as exc:
                first = first or exc
                continue
            return when, text
        assert first is not None
        raise first

    async def _feed_add(self, person: Person, command: grammar.FeedAdd, here: str) -> Reply:
        """An admin subscribes a channel (default: this one) to a calendar; core refuses
        (and audits) anyone else."""
        to = f"slack:{command.channel or here}"
        if person.actor.is_admin:  # others get core's refusal, not a channel check
            await self.herald.check_reachable(to)
        feed = await self.herald.add_feed(
            person.principal,
            calendar=command.url,
            to=to,
            before=command.before,
            template=command.template,
            tz=person.zone,
        )
        return feed_added(feed, command.url)

    # --- the modal ----------------------------------------------------------------

    async def on_submit(self, ack: AsyncAck, body: dict[str, Any], view: dict[str, Any]) -> None:
        with self.tracker.track():
            meta = ModalMeta.loads(view.get("private_metadata"))
            submission = read_submission(view)
            saved = None
            try:
                async with asyncio.timeout(ACK_BUDGET):
                    person = await self._who(body)
                    errors, saved = await self._save(person, meta, submission, view)
            except TimeoutError:
                errors = {_first(view): "Slack could not wait for Herald: try again."}
            except limits.TooLarge as exc:  # the message does not fit where it goes
                errors = {"text" if _has(view, "text") else _first(view): plain(exc)}
            except HeraldError as exc:
                errors = {_first(view): plain(exc)}
            except Exception:  # the handler boundary
                log.exception("slack modal submission failed")
                errors = {_first(view): SORRY.removeprefix(":warning: ")}
            if errors:
                await ack(response_action="errors", errors=errors)
                return
            await ack()
            if isinstance(saved, Asked):
                await self.guard(self._ask_beside(person, saved), self._dm(person))
            elif saved is not None:
                await self.guard(self._confirm(person, *saved), self._dm(person))

    async def _save(
        self, person: Person, meta: ModalMeta, sub: Submission, view: dict[str, Any]
    ) -> tuple[dict[str, str], tuple[Schedule, str] | Asked | None]:
        """Check each field (errors by block id), then create or edit. A create of a
        message already scheduled there at about the same time saves nothing: the
        person is asked (Create anyway, Cancel) beside the closed modal."""
        errors = dict(sub.errors)
        if "text" not in errors and not meta.long_text and sub.template is None:
            try:
                check_text(sub.text)
                if sub.channels:  # every Slack channel takes the same
                    limits.check_message(parse_destination(f"slack:{sub.channels[0]}"), sub.text)
            except HeraldError as exc:
                errors["text"] = plain(exc)
        changed_when = meta.when_changed(sub.when)
        if sub.when is not None and (changed_when or meta.schedule_id is None):
            try:
                when, urls = calendars.split_skip_phrase(sub.when)
                if urls and meta.schedule_id is not None:
                    raise InvalidInput(
                        "Calendars to skip can be named only when you create a schedule."
                    )
                self.herald.read_when(when, person.zone, actor=person.principal)
            except HeraldError as exc:
                errors["when" if _typed(view) else "date"] = plain(exc)
        if meta.schedule_id is None and not sub.channels:
            errors["channel"] = "Pick the channels to post in (one or more)."
        changed_channel = bool(sub.channels) and sub.channels != meta.channels
        if sub.channels and (changed_channel or meta.schedule_id is None):
            new = [c for c in sub.channels if meta.schedule_id is None or c not in meta.channels]
            if (problem := await self._check_channels(person, new)) is not None:
                errors["channel"] = problem
        if errors:
            return errors, None
        actor = person.principal
        to = [f"slack:{c}" for c in sub.channels]
        if meta.schedule_id is None:
            assert sub.channels and sub.when is not None  # no errors: both set
            try:  # read first: a calendar that cannot be read refuses, on its field
                loaded = await self.herald.load_calendars(actor, sub.skip) if sub.skip else []
            except HeraldError as exc:
                return {"skip": plain(exc)}, None
            key = f"slack-view:{view.get('id')}" if view.get("id") else None
            wanted = _ModalCreate(to, sub, key, loaded, meta.channels[:1])
            try:
                schedule = await self._modal_create(person, wanted, "refuse")
            except HeraldError as exc:
                if (found := duplicates_found(exc)) is not None:
                    return {}, self._held_back(person, wanted, found)
                if sub.template is None:
                    raise
                return {_template_field(exc): plain(exc)}, None
            return {}, (schedule, ":white_check_mark: Scheduled" + templated.named(schedule))
        text = None if meta.long_text or fingerprint(sub.text) == meta.text_fp else sub.text
        template, data = _template_change(meta, sub)
        if template is not None or sub.template is not None:
            text = sub.text if template == "none" else None
        changed_template = template is not None or data is not None
        if not (changed_when or changed_channel or text is not None or changed_template):
            return {}, None
        try:
            schedule = await self.herald.edit_schedule(
                actor,
                meta.schedule_id,
                when=sub.when if changed_when else None,
                text=text,
                to=to if changed_channel else None,
                tz=person.zone if changed_when else None,
                expected_version=meta.version,
                template=template,
                data=data,
            )
        except HeraldError as exc:
            if not changed_template or isinstance(exc, Conflict):
                raise
            return {_template_field(exc): plain(exc)}, None
        return {}, (schedule, ":white_check_mark: Saved" + templated.named(schedule))

    async def _modal_create(
        self, person: Person, wanted: _ModalCreate, duplicates: Duplicates
    ) -> Schedule:
        """The modal's new schedule, saved (``duplicates``: core's rule for the same
        message already there). The channel the modal was opened in proves its
        members see it."""
        sub, to = wanted.sub, wanted.to
        assert sub.when is not None
        schedule, _ = await self.herald.create_schedule(
            person.principal,
            to=to[0] if len(to) == 1 else to,
            when=sub.when,
            text=sub.text,
            tz=person.zone,
            key=wanted.key,
            skip_loaded=wanted.loaded,
            private=sub.private,
            duplicates=duplicates,
            seen_in=seen_in(wanted.opened_in[0]) if wanted.opened_in else None,
            **templated.create_args(sub.template, tuple(sub.data.items())),
        )
        return schedule

    def _held_back(self, person: Person, wanted: _ModalCreate, found: list[Any]) -> Asked:
        """The modal's create held back by a duplicate: the question to ask, in the
        first channel picked, and its request kept for Create anyway."""

        async def again(who: Person) -> Reply:
            schedule = await self._modal_create(who, wanted, "ignore")
            said = (
                f":white_check_mark: Scheduled{templated.named(schedule)} for "
                f"{recipients_line(schedule)}."
            )
            return await self.held(who, schedule, schedule_reply(schedule, said, read_back=True))

        token = self.pending.hold(person.principal.tenant, person.user_id, again)
        channel = wanted.to[0].removeprefix("slack:")
        return Asked(duplicate_reply(found, token), channel)

    async def _ask_beside(self, person: Person, asked: Asked) -> None:
        """After the modal closed: the question, visible only to the person, in the
        channel picked (else in their direct messages with Herald)."""
        text, blocks = asked.reply
        try:
            await self.client.chat_postEphemeral(
                channel=asked.channel, user=person.user_id, text=text, blocks=blocks
            )
        except SlackApiError:
            await self._dm(person)(asked.reply)

    async def _check_channels(self, person: Person, channels: list[str]) -> str | None:
        """Why the person may not post in one of ``channels`` (the first problem, as
        plain text for the picker), or None."""
        try:
            for channel in channels:
                await self.directory.check_member(person.user_id, channel)
                await self.herald.check_reachable(f"slack:{channel}")
        except HeraldError as exc:
            return plain(exc)
        return None

    async def _confirm(self, person: Person, schedule: Schedule, headline: str) -> None:
        """After the modal closed: an ephemeral note in the (first) channel, and the
        Home tab."""
        said = f"{headline} for {recipients_line(schedule)}."
        reply = schedule_reply(schedule, said, read_back=True)
        text, blocks = await self.held(person, schedule, reply)
        destination = schedule.destination
        if destination.startswith("slack:"):
            channel = destination.removeprefix("slack:").partition("/")[0]
            await self.client.chat_postEphemeral(
                channel=channel, user=person.user_id, text=text, blocks=blocks
            )
        else:
            await self.client.chat_postMessage(channel=person.user_id, text=text, blocks=blocks)
        await self.publish_home(person)

    def _dm(self, person: Person) -> Send:
        async def send(reply: Reply) -> None:
            await self.client.chat_postMessage(
                channel=person.user_id, text=reply[0], blocks=reply[1]
            )

        return send

    async def on_preview(self, ack: AsyncAck, body: dict[str, Any]) -> None:
        """Enter in the "when" field: show how Herald reads it, with the next times."""
        with self.tracker.track():
            await ack()
            await self.guard(self._preview(body, body.get("view") or {}), _nowhere)

    async def _who(self, body: dict[str, Any]) -> Person:
        return await self.person(str(body["user"]["id"]), body)

    async def _preview(self, body: dict[str, Any], view: dict[str, Any]) -> None:
        person = await self._who(body)
        typed = ((view.get("state") or {}).get("values") or {}).get("when", {}).get("when", {})
        expression = (typed.get("value") or "").strip()
        try:  # the use case every preview is, in the zone the save would use
            read = await self.herald.preview_when(
                person.principal, expression, tz=person.zone, count=3, read_calendars=False
            )
        except HeraldError as exc:
            preview = f":warning: {shown(exc)}"
        else:
            times = ", ".join(date_token(t, read.zone) for t in read.occurrences)
            preview = f"*{escape(read.reading.read_back)}*\nNext: {times}"
            preview += f"\nRead in {read.zone} ({person.zone_source})."
            if read.calendars:
                named = ", ".join(escape(url) for url in read.calendars)
                preview += f"\nSkips the event dates of {named} (read when you save)."
        await self.rebuild_modal(person, view, when_preview=preview)


@dataclass(frozen=True)
class _ModalCreate:
    """A create from the modal, as it is tried again by Create anyway."""

    to: list[str]
    sub: Submission
    key: str | None
    loaded: list[Any]
    #: The channel the modal was opened in (from the signed command), if any.
    opened_in: tuple[str, ...]


@dataclass(frozen=True)
class Asked:
    """A question to ask beside a closed modal: the reply and the channel it goes to."""

    reply: Reply
    channel: str


def _template_change(meta: ModalMeta, sub: Submission) -> tuple[str | None, dict[str, str] | None]:
    """What an edit changes of a schedule's template: ``(template, data)`` for
    :meth:`core.cases.Herald.edit_schedule` (``"none"``: back to a message of its own;
    None: unchanged)."""
    if sub.template is None:
        return ("none" if meta.template is not None else None), None
    if sub.template != meta.template:
        return sub.template, sub.data
    if fingerprint(sub.data_text) != meta.data_fp:
        return None, sub.data
    return None, None


def _template_field(error: HeraldError) -> str:
    """The modal field a refusal of a templated schedule is shown on: the picker for
    a template this workspace lacks, else the data."""
    return "template" if isinstance(error, NotFound) else "data"


async def _nowhere(reply: Reply) -> None:
    """A preview has no place for an error reply: it is only logged."""
    log.warning("slack modal preview failed: %s", reply[0])


def _typed(view: dict[str, Any]) -> bool:
    values = (view.get("state") or {}).get("values") or {}
    return bool(((values.get("when") or {}).get("when") or {}).get("value"))


def _has(view: dict[str, Any], block_id: str) -> bool:
    return any(b.get("block_id") == block_id for b in view.get("blocks") or [])


def _first(view: dict[str, Any]) -> str:
    """The block an error about the whole submission is shown on."""
    blocks = [b.get("block_id") for b in view.get("blocks") or [] if b.get("type") == "input"]
    return "when" if "when" in blocks else (blocks[0] if blocks else "when")
