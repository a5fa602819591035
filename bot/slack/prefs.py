"""``/schedule prefs``: a member's preferences in a modal (``/schedule prefs tenant``:
an admin's tenant defaults), saved through :meth:`core.cases.Herald.set_preferences`.

The modal (https://docs.slack.dev/surfaces/modals) holds input blocks
(https://docs.slack.dev/reference/block-kit/blocks#input) with stable block ids, each
element's ``action_id`` the same as its block's, so a refusal is shown on its field
(``response_action: errors``, https://docs.slack.dev/surfaces/modals#displaying_errors):

- ``place``: a static select (https://docs.slack.dev/reference/block-kit/block-elements/
  select-menu-element#static_select): where reminders to the member go (where they were
  sent, a Slack DM, and email, SMS and push where this deployment is configured for
  them); ``address``: the email address or phone number those need;
- ``accept``: radio buttons (.../block-elements/radio-button-group-element): anyone,
  only admins, only the member;
- ``blocked``: a multi-users select (.../select-menu-element#users_multi_select);
- ``quiet_start``/``quiet_end``: time pickers (.../block-elements/time-picker-element),
  read in the member's zone; ``quiet_days``: checkboxes (.../checkboxes-element);
- ``hold`` (tenant defaults only): whether channel messages are held in quiet hours.

Only what differs from what the modal showed is sent, so a field left as the tenant's
default keeps following it. After a save the modal turns into a summary
(``response_action: update``).
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from dataclasses import dataclass
from typing import Any

from slack_bolt.context.ack.async_ack import AsyncAck

from bot import prefs_words
from bot.slack.base import ACK_BUDGET, SORRY, Person
from bot.slack.blocks import plain
from bot.slack.grammar import escape
from bot.slack.recipients import Recipients
from core import limits
from core.cases import MemberPreferences, PreferenceChanges
from core.channels import parse_destination
from core.errors import HeraldError, InvalidInput
from core.preferences import DAY_NAMES, MAX_BLOCKED, Preferences, QuietHours

log = logging.getLogger(__name__)

CALLBACK = "herald_prefs"
_PLACES = {
    "where": "Where it was sent",
    "dm": "Slack DM",
    "email": "Email",
    "sms": "SMS",
    "push": "Push (your devices)",
}
_ACCEPT = {"anyone": "Anyone here", "admins": "Only admins", "self": "Only me"}
_TENANT_ACCEPT = {"anyone": "Anyone", "admins": "Only admins", "self": "Only themselves"}
_HOLD = "hold"
#: The longest email address or phone number the address field takes (RFC 5321's 254).
ADDRESS_MAX = 254
#: The fields a refusal names, by a word of its sentence (core says one sentence).
_FIELD_WORDS = (
    ("quiet", "quiet_start"),
    ("day", "quiet_days"),
    ("block", "blocked"),
    ("accept", "accept"),
    ("remind", "accept"),
    ("email", "address"),
    ("sms", "address"),
    ("number", "address"),
    ("address", "address"),
    ("push", "place"),
    ("place", "place"),
)


def _text(value: str) -> dict[str, str]:
    return {"type": "plain_text", "text": value}


def _option(value: str, label: str) -> dict[str, Any]:
    """An option object (https://docs.slack.dev/reference/block-kit/composition-objects/
    option-object): text at most 75 characters, value at most 150."""
    return {"text": _text(label), "value": value}


def _input(
    block_id: str, label: str, element: dict[str, Any], *, optional: bool = False, hint: str = ""
) -> dict[str, Any]:
    block: dict[str, Any] = {
        "type": "input",
        "block_id": block_id,
        "label": _text(label),
        "element": {**element, "action_id": block_id},
        "optional": optional,
    }
    if hint:
        block["hint"] = _text(limits.clip(hint, limits.SLACK_LABEL))
    return block


def _section(text: str) -> dict[str, Any]:
    return {
        "type": "section",
        "text": {"type": "mrkdwn", "text": limits.clip(text, limits.SLACK_SECTION_TEXT)},
    }


def _slack_user(member: str) -> str | None:
    """``slack:U1`` → ``U1``; None for a member of another kind (the users select
    shows Slack's people only)."""
    kind, _, rest = member.partition(":")
    return rest if kind == "slack" and re.fullmatch(r"[UW][A-Z0-9]{1,20}", rest) else None


def _mention(member: str) -> str:
    user = _slack_user(member)
    return f"<@{user}>" if user else escape(member)


def _window(quiet: QuietHours | None) -> tuple[str | None, str | None]:
    if quiet is None or quiet.start is None or quiet.end is None:
        return None, None
    return f"{quiet.start:%H:%M}", f"{quiet.end:%H:%M}"


def _days(quiet: QuietHours | None) -> tuple[str, ...]:
    return tuple(DAY_NAMES[d] for d in sorted(quiet.days)) if quiet is not None else ()


def _place_choice(place: str | None, user: str) -> tuple[str, str]:
    """The select's value and the address field's text for a stored place."""
    if not place:
        return "where", ""
    if place == f"slack:@{user}":
        return "dm", ""
    kind, _, target = place.partition(":")
    if kind in ("email", "sms"):
        return kind, target
    if kind == "push":
        return "push", ""
    return "where", ""


@dataclass(frozen=True)
class Shown:
    """What the modal showed (``private_metadata``): a submission sends only what
    differs from it."""

    tenant: bool = False
    place: str = "where"
    address: str = ""
    accept: str = "anyone"
    start: str | None = None
    end: str | None = None
    days: tuple[str, ...] = ()
    hold: bool = False

    def dumps(self) -> str:
        data = {
            "t": self.tenant,
            "p": self.place,
            "a": self.address,
            "c": self.accept,
            "s": self.start,
            "e": self.end,
            "d": list(self.days),
            "h": self.hold,
        }
        return json.dumps(data, separators=(",", ":"))

    @classmethod
    def loads(cls, raw: str | None) -> Shown:
        try:
            data = json.loads(raw or "{}")
        except ValueError:
            data = {}
        if not isinstance(data, dict):
            data = {}
        return cls(
            tenant=data.get("t") is True,
            place=str(data.get("p") or "where"),
            address=str(data.get("a") or ""),
            accept=str(data.get("c") or "anyone"),
            start=data.get("s") if isinstance(data.get("s"), str) else None,
            end=data.get("e") if isinstance(data.get("e"), str) else None,
            days=tuple(str(d) for d in data.get("d") or () if isinstance(d, str)),
            hold=data.get("h") is True,
        )


def _quiet_blocks(
    start: str | None, end: str | None, days: tuple[str, ...], zone: str
) -> list[Any]:
    begin: dict[str, Any] = {"type": "timepicker"}
    finish: dict[str, Any] = {"type": "timepicker"}
    if (
        start and end
    ):  # https://docs.slack.dev/reference/block-kit/block-elements/time-picker-element
        begin["initial_time"], finish["initial_time"] = start, end
    checks: dict[str, Any] = {
        "type": "checkboxes",  # at most 10 options: seven days
        "options": [_option(value, label) for value, label in prefs_words.DAYS],
    }
    if days:
        checks["initial_options"] = [
            _option(value, label) for value, label in prefs_words.DAYS if value in days
        ]
    return [
        _input(
            "quiet_start",
            "Quiet hours start",
            begin,
            optional=True,
            hint=f"Read in {zone}. Leave both times empty for no daily quiet hours.",
        ),
        _input("quiet_end", "Quiet hours end", finish, optional=True),
        _input(
            "quiet_days",
            "Quiet all day on",
            checks,
            optional=True,
            hint="Reminders due in quiet hours wait until they end; urgent ones from "
            "admins and operators still come.",
        ),
    ]


def prefs_modal(
    member: MemberPreferences, user: str, kinds: tuple[str, ...], profile_zone: str | None = None
) -> dict[str, Any]:
    """The member's modal, showing their effective preferences (``kinds``: the person
    kinds this deployment sends to, :func:`bot.prefs_words.offered_kinds`;
    ``profile_zone``: their Slack profile's zone when they set none in Herald, which
    the quiet hours are not read in)."""
    effective, own = member.effective, member.own
    place, address = _place_choice(effective.place, user)
    start, end = _window(effective.quiet)
    shown = Shown(
        place=place,
        address=address,
        accept=effective.accept_from or "anyone",
        start=start,
        end=end,
        days=_days(effective.quiet),
    )
    offered = ["where", "dm", *[k for k in kinds if k in _PLACES]]
    if place not in offered:  # a place set before its channel was unconfigured
        offered.append(place)
    options = [_option(v, _PLACES[v]) for v in offered]
    select = {
        "type": "static_select",
        "options": options,
        "initial_option": _option(place, _PLACES[place]),
    }
    field: dict[str, Any] = {
        "type": "plain_text_input",
        "max_length": ADDRESS_MAX,
        "placeholder": _text("ada@example.com or +4915123456789"),
    }
    if address:
        field["initial_value"] = address[:ADDRESS_MAX]
    radios = {
        "type": "radio_buttons",
        "options": [_option(v, label) for v, label in _ACCEPT.items()],
        "initial_option": _option(shown.accept, _ACCEPT[shown.accept]),
    }
    users: dict[str, Any] = {"type": "multi_users_select", "placeholder": _text("Nobody")}
    mine = [u for m in own.blocked if (u := _slack_user(m)) is not None]
    if mine:
        users["initial_users"] = mine[:MAX_BLOCKED]
    blocked_hint = "They cannot schedule reminders to you."
    if member.tenant.blocked:
        blocked_hint += f" The workspace blocks {len(member.tenant.blocked)} more for everyone."
    blocks = [
        _section(
            "How Herald reaches you when someone schedules a reminder *to you* "
            "(messages to channels are not affected)."
        ),
        _input("place", "Send my reminders to", select),
        _input(
            "address",
            "Email address or phone number",
            field,
            optional=True,
            hint="For email or SMS only (a phone number in international form, +49…).",
        ),
        _input("accept", "Who may remind me", radios),
        _input("blocked", "Blocked members", users, optional=True, hint=blocked_hint),
        *_quiet_blocks(start, end, shown.days, _zone_words(member.zone, profile_zone)),
    ]
    return _modal("Your preferences", blocks, shown)


def _zone_words(zone: str, profile_zone: str | None) -> str:
    if profile_zone is None or profile_zone == zone:
        return zone
    return f"{zone}, not your Slack profile's {profile_zone}: /schedule timezone sets yours"


def tenant_modal(tenant: Preferences) -> dict[str, Any]:
    """An admin's modal of the tenant's defaults (every member's, unless they chose)."""
    start, end = _window(tenant.quiet)
    shown = Shown(
        tenant=True,
        accept=tenant.accept_from or "anyone",
        start=start,
        end=end,
        days=_days(tenant.quiet),
        hold=bool(tenant.hold_channels),
    )
    radios = {
        "type": "radio_buttons",
        "options": [_option(v, label) for v, label in _TENANT_ACCEPT.items()],
        "initial_option": _option(shown.accept, _TENANT_ACCEPT[shown.accept]),
    }
    users: dict[str, Any] = {"type": "multi_users_select", "placeholder": _text("Nobody")}
    mine = [u for m in tenant.blocked if (u := _slack_user(m)) is not None]
    if mine:
        users["initial_users"] = mine[:MAX_BLOCKED]
    hold_option = _option(_HOLD, "Hold messages to channels in quiet hours too")
    hold: dict[str, Any] = {"type": "checkboxes", "options": [hold_option]}
    if shown.hold:
        hold["initial_options"] = [hold_option]
    blocks = [
        _section(
            "The workspace's defaults: each member's own choice wins over them "
            "(a block list adds to theirs). Quiet hours are read in each member's zone."
        ),
        _input("accept", "Who may remind members", radios),
        _input("blocked", "Blocked for everyone", users, optional=True),
        *_quiet_blocks(start, end, shown.days, "each member's own zone"),
        _input("hold", "Channels", hold, optional=True),
    ]
    return _modal("Workspace defaults", blocks, shown)


def _modal(title: str, blocks: list[dict[str, Any]], shown: Shown) -> dict[str, Any]:
    """A modal view (https://docs.slack.dev/reference/views/modal-views): title and
    buttons at most 24 characters, at most 100 blocks."""
    return {
        "type": "modal",
        "callback_id": CALLBACK,
        "title": _text(title),
        "submit": _text("Save"),
        "close": _text("Cancel"),
        "private_metadata": shown.dumps(),
        "blocks": blocks,
    }


def saved_view(title: str, lines: list[str]) -> dict[str, Any]:
    """What the modal turns into once saved: the preferences in words."""
    return {
        "type": "modal",
        "callback_id": CALLBACK,
        "title": _text(title),
        "close": _text("Done"),
        "blocks": [
            _section(":white_check_mark: Saved."),
            _section("\n".join(f"• {line}" for line in lines)),
        ],
    }


# --- reading a submission --------------------------------------------------------------


def _value(values: dict[str, Any], block_id: str) -> dict[str, Any]:
    found = (values.get(block_id) or {}).get(block_id) or {}
    return found if isinstance(found, dict) else {}


def _selected(values: dict[str, Any], block_id: str) -> str | None:
    option = _value(values, block_id).get("selected_option") or {}
    return str(option.get("value")) if isinstance(option, dict) and option.get("value") else None


def _checked(values: dict[str, Any], block_id: str) -> tuple[str, ...]:
    options = _value(values, block_id).get("selected_options") or []
    return tuple(str(o.get("value")) for o in options if isinstance(o, dict))


def read_changes(
    view: dict[str, Any], user: str, blocked_before: tuple[str, ...]
) -> tuple[dict[str, str], PreferenceChanges, dict[str, str]]:
    """``(errors by block id, changes, the block each changed field is on)`` of a
    submitted modal: only what differs from what it showed (:class:`Shown`);
    ``blocked_before``: the block list as stored now (members of other kinds stay)."""
    shown = Shown.loads(view.get("private_metadata"))
    values = (view.get("state") or {}).get("values") or {}
    errors: dict[str, str] = {}
    fields: dict[str, str] = {}
    changes: dict[str, Any] = {}
    if not shown.tenant:
        place = _selected(values, "place") or shown.place
        address = str(_value(values, "address").get("value") or "").strip()
        if place != shown.place or (place in ("email", "sms") and address != shown.address):
            try:
                changes["place"] = _place(place, address, user)
                fields["place"] = "address" if place in ("email", "sms") else "place"
            except HeraldError as exc:
                errors["address" if place in ("email", "sms") else "place"] = plain(exc)
    accept = _selected(values, "accept") or shown.accept
    if accept != shown.accept:
        changes["accept_from"], fields["accept_from"] = accept, "accept"
    picked = [str(u) for u in _value(values, "blocked").get("selected_users") or []]
    now = {f"slack:{u}" for u in picked if _slack_user(f"slack:{u}")}
    before = {m for m in blocked_before if _slack_user(m) is not None}
    if now - before:
        changes["block"], fields["block"] = tuple(sorted(now - before)), "blocked"
    if before - now:
        changes["unblock"], fields["unblock"] = tuple(sorted(before - now)), "blocked"
    start = _value(values, "quiet_start").get("selected_time") or None
    end = _value(values, "quiet_end").get("selected_time") or None
    days = tuple(d for d in _checked(values, "quiet_days") if d in DAY_NAMES)
    if (start is None) != (end is None):
        errors["quiet_end" if end is None else "quiet_start"] = (
            "Give both the start and the end of your quiet hours, or neither."
        )
    elif (start, end) != (shown.start, shown.end) or days != shown.days:
        window = f"{start}-{end}" if start and end else ""
        try:
            QuietHours.parse(window, days)  # the same check core makes, on its field
        except HeraldError as exc:
            errors["quiet_end"] = plain(exc)
        else:  # both, as shown: one's own quiet hours replace the tenant's whole
            changes["quiet"], fields["quiet"] = window, "quiet_start"
            changes["quiet_days"], fields["quiet_days"] = days, "quiet_days"
    if shown.tenant:
        hold = _HOLD in _checked(values, "hold")
        if hold != shown.hold:
            changes["hold_channels"], fields["hold_channels"] = hold, "hold"
    return errors, PreferenceChanges(**changes), fields


def _place(choice: str, address: str, user: str) -> str:
    """The destination a choice of the select names ("" clears: where sent)."""
    if choice == "where":
        return ""
    if choice == "dm":
        return f"slack:@{user}"
    if choice == "push":
        return f"push:slack:{user}"
    if choice not in ("email", "sms"):
        raise InvalidInput("Pick one of the places the list offers.")
    if not address:
        what = "email address" if choice == "email" else "phone number (+49…)"
        raise InvalidInput(f"Type the {what} reminders should go to.")
    if choice == "sms":
        address = re.sub(r"[\s().-]", "", address)
    else:
        address = address.removeprefix("mailto:")
    return str(parse_destination(f"{choice}:{address}"))


def field_of(error: HeraldError, fields: dict[str, str]) -> str:
    """The block a refusal of core is shown on: the only field changed, else the one
    its sentence names, else the first changed."""
    blocks = list(dict.fromkeys(fields.values()))
    if len(blocks) == 1:
        return blocks[0]
    words = str(error).lower()
    for word, block in _FIELD_WORDS:
        if word in words and (block in blocks or not blocks):
            return block
    return blocks[0] if blocks else "accept"


# --- the handlers ----------------------------------------------------------------------


class Prefs(Recipients):
    """``/schedule prefs`` and ``/schedule prefs tenant``: open, submit."""

    async def open_prefs(self, trigger_id: str, person: Person, *, tenant: bool = False) -> None:
        """Open the member's modal, or (``tenant``) the tenant's defaults for an admin:
        core refuses anyone else with its sentence."""
        actor = person.principal
        if tenant:
            view = tenant_modal(await self.herald.tenant_preferences(actor))
        else:
            member = await self.herald.preferences(actor)
            profile = None if person.zone_source == "you set it" else person.zone
            kinds = prefs_words.offered_kinds(self.herald)
            view = prefs_modal(member, person.user_id, kinds, profile)
        await self.client.views_open(trigger_id=trigger_id, view=view)

    async def on_prefs_submit(
        self, ack: AsyncAck, body: dict[str, Any], view: dict[str, Any]
    ) -> None:
        with self.tracker.track():
            first = _first_input(view)
            try:
                async with asyncio.timeout(ACK_BUDGET):
                    person = await self.person(str(body["user"]["id"]), body)
                    errors, after = await self._save_prefs(person, view)
            except TimeoutError:
                errors, after = {first: "Slack could not wait for Herald: try again."}, None
            except HeraldError as exc:
                errors, after = {first: plain(exc)}, None
            except Exception:  # the handler boundary
                log.exception("slack preferences submission failed")
                errors, after = {first: SORRY.removeprefix(":warning: ")}, None
            if errors:
                await ack(response_action="errors", errors=errors)
            elif after is not None:
                await ack(response_action="update", view=after)
            else:
                await ack()

    async def _save_prefs(
        self, person: Person, view: dict[str, Any]
    ) -> tuple[dict[str, str], dict[str, Any] | None]:
        """Errors by block id, or the view the modal becomes once saved."""
        shown = Shown.loads(view.get("private_metadata"))
        actor = person.principal
        if shown.tenant:
            before = (await self.herald.tenant_preferences(actor)).blocked
        else:
            before = (await self.herald.preferences(actor)).own.blocked
        errors, changes, fields = read_changes(view, person.user_id, before)
        if errors:
            return errors, None
        try:
            if shown.tenant:
                saved = await self.herald.set_tenant_preferences(actor, changes)
                lines = prefs_words.tenant_lines(saved, mention=_mention)
                return {}, saved_view("Workspace defaults", lines)
            member = await self.herald.set_preferences(actor, changes)
        except HeraldError as exc:
            return {field_of(exc, fields): plain(exc)}, None
        lines = prefs_words.lines(
            member.own,
            member.tenant,
            member.effective,
            zone=member.zone,
            dm=f"slack:@{person.user_id}",
            mention=_mention,
        )
        return {}, saved_view("Your preferences", lines)


def _first_input(view: dict[str, Any]) -> str:
    blocks = [b.get("block_id") for b in view.get("blocks") or [] if b.get("type") == "input"]
    return str(blocks[0]) if blocks else "accept"
