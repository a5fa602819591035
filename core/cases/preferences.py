"""Members' preferences (core.preferences): the place reminders to them go, who may
remind them, whom they block, their quiet hours; and a tenant's defaults.

A member reads and changes their own; an admin of the tenant those of any member of
it and the tenant's defaults (the member id :data:`~core.preferences.TENANT_DEFAULT`).
Every change is audited (``preferences.set``, ``preferences.tenant``), every refusal
too (``<action>.denied``). Bad input is refused with one sentence and changes nothing:
the changes are all read and checked before the one write.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, cast

from core.actors import Actor, ActorRef, Principal
from core.cases.base import CaseBase, principal_of
from core.cases.recipients import member_of
from core.channels import parse_destination
from core.errors import HeraldError, InvalidInput
from core.preferences import (
    ACCEPT,
    MAX_BLOCKED,
    TENANT_DEFAULT,
    Accept,
    Preferences,
    QuietHours,
    effective,
)
from core.store import AuditEntry

#: The longest place (an email address is at most 254 characters, plus its kind).
MAX_PLACE = 300
#: The longest member reference on a block list.
MAX_MEMBER_REF = 200
#: The most entries one change may block or unblock at once.
MAX_CHANGE_ENTRIES = MAX_BLOCKED
#: Kinds of a place that are an address of the member's own (not a DM or device).
_ADDRESS_KINDS = frozenset({"email", "sms"})
_FIELDS = (
    "place",
    "accept_from",
    "block",
    "unblock",
    "quiet",
    "quiet_days",
    "hold_channels",
    "notices",
)


def _text(data: Mapping[str, Any], name: str, most: int) -> str | None:
    value = data.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidInput(f"{name} must be text.")
    if len(value) > most:
        raise InvalidInput(f"{name} is at most {most} characters.")
    return value


def _texts(data: Mapping[str, Any], name: str) -> tuple[str, ...] | None:
    value = data.get(name)
    if value is None:
        return None
    if isinstance(value, str):
        value = [v for v in value.replace(",", " ").split() if v]
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise InvalidInput(f"{name} must be a list of text.")
    if len(value) > MAX_CHANGE_ENTRIES:
        raise InvalidInput(f"{name} names at most {MAX_CHANGE_ENTRIES} entries.")
    if any(len(v) > MAX_MEMBER_REF for v in value):
        raise InvalidInput(f"An entry of {name} is at most {MAX_MEMBER_REF} characters.")
    return tuple(value)


@dataclass(frozen=True)
class PreferenceChanges:
    """What a request changes; every field None (or empty) leaves its value as it is."""

    #: Where reminders to the member go; ``""`` clears (they go where the author sent them).
    place: str | None = None
    #: anyone | admins | self; ``""`` clears (the tenant's default applies).
    accept_from: str | None = None
    #: Member ids (``slack:U1``), their DMs (``slack:@U1``) or ``@U1`` to block.
    block: tuple[str, ...] = ()
    unblock: tuple[str, ...] = ()
    #: The daily window, ``"22:00-08:00"``; ``""`` clears it.
    quiet: str | None = None
    #: Whole quiet days, ``("sat", "sun")`` or ``("weekends",)``; ``()`` clears them.
    quiet_days: tuple[str, ...] | None = None
    #: A tenant's defaults only: hold channel messages in the tenant's quiet hours too.
    hold_channels: bool | None = None
    #: Whether the member is told by direct message when a message they scheduled fails.
    notices: bool | None = None

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> PreferenceChanges:
        """The changes a JSON body or a chat form gives (the API, Slack, Discord):
        the fields above by name; ``quiet`` may also be ``{"window": …, "days": […]}``
        as :meth:`MemberPreferences.to_json` shows it. InvalidInput for an unknown
        field or a value of the wrong type."""
        if not isinstance(data, Mapping):
            raise InvalidInput("Preferences are a JSON object of the fields to change.")
        unknown = sorted(str(k)[:40] for k in data if k not in _FIELDS)
        if unknown:
            raise InvalidInput(f"Unknown preference {unknown[0]!r}: use {', '.join(_FIELDS)}.")
        quiet_days = _texts(data, "quiet_days")
        raw_quiet = data.get("quiet")
        quiet: str | None
        if isinstance(raw_quiet, Mapping):
            if set(raw_quiet) - {"window", "days"}:
                raise InvalidInput('quiet is "22:00-08:00" or {"window": …, "days": […]}.')
            quiet = _text(raw_quiet, "window", 40) or ""
            if quiet_days is None:
                quiet_days = _texts(raw_quiet, "days") or ()
        else:
            quiet = _text(data, "quiet", 40)
        hold = data.get("hold_channels")
        if hold is not None and not isinstance(hold, bool):
            raise InvalidInput("hold_channels must be true or false.")
        told = data.get("notices")
        if told is not None and not isinstance(told, bool):
            raise InvalidInput("notices must be true or false.")
        return cls(
            place=_text(data, "place", MAX_PLACE),
            accept_from=_text(data, "accept_from", 20),
            block=_texts(data, "block") or (),
            unblock=_texts(data, "unblock") or (),
            quiet=quiet,
            quiet_days=quiet_days,
            hold_channels=hold,
            notices=told,
        )

    @property
    def empty(self) -> bool:
        return (
            self.place is None
            and self.accept_from is None
            and not self.block
            and not self.unblock
            and self.quiet is None
            and self.quiet_days is None
            and self.hold_channels is None
            and self.notices is None
        )


def prefs_json(prefs: Preferences) -> dict[str, Any]:
    """One record's fields as the API shows them (None: not set, inherited)."""
    return {
        "place": prefs.place,
        "accept_from": prefs.accept_from,
        "blocked": list(prefs.blocked),
        "quiet": None if prefs.quiet is None else prefs.quiet.to_json(),
        "quiet_text": None if prefs.quiet is None else prefs.quiet.describe(),
        "hold_channels": prefs.hold_channels,
        "notices": prefs.notices,
    }


@dataclass(frozen=True)
class MemberPreferences:
    """A member's own preferences, their tenant's defaults, and what applies to them
    (:func:`core.preferences.effective`), with the zone their quiet hours are read in."""

    member_id: str
    zone: str
    own: Preferences
    tenant: Preferences
    effective: Preferences

    def to_json(self) -> dict[str, Any]:
        return {
            "member": self.member_id,
            "zone": self.zone,
            "own": prefs_json(self.own),
            "tenant": prefs_json(self.tenant),
            "effective": prefs_json(self.effective),
            "summary": self.effective.describe(),
        }


def member_ref(actor: Actor, text: str) -> str:
    """The member id a reference names, checked: a member id (``slack:U1``), a
    person's DM (``slack:@U1``), a mention (``<@U1>``, ``@U1``: on the actor's
    platform), or a person's address (``email:…``, as Herald stores it)."""
    raw = text.strip()
    if raw.startswith("<@") and raw.endswith(">"):
        raw = raw[1:-1].split("|", 1)[0]
    if raw.startswith("@") and len(raw) > 1:
        raw = f"{actor.id.partition(':')[0]}:{raw[1:]}"
    try:
        found = member_of(raw)
    except HeraldError:  # not a destination: a member id as written
        found = None
    member = found or raw
    try:
        principal_of(Principal(member, actor.tenant))
    except InvalidInput:
        raise InvalidInput(
            f"{text.strip()[:60]!r} is not a member: use their id (slack:U123) or their "
            "DM (slack:@U123)."
        ) from None
    return member


def check_place(place: str, member: str) -> str:
    """``place`` as Herald stores it, if it reaches ``member`` themselves: their own DM,
    their push devices, or an email or SMS address; InvalidInput otherwise."""
    try:
        parsed = parse_destination(place)
    except InvalidInput as exc:
        raise InvalidInput(f"That place cannot be read: {exc}") from None
    own = (
        parsed.recipient == member
        or (parsed.kind == "push" and parsed.target == member)
        or (parsed.recipient is None and parsed.kind in _ADDRESS_KINDS)
    )
    if not own:
        raise InvalidInput(
            f"Reminders to you can go only to a place of yours: your DM (e.g. "
            f"{member.partition(':')[0]}:@{member.partition(':')[2]}), an email or SMS "
            f"address, or push:{member}."
        )
    return str(parsed)


def _quiet(current: QuietHours | None, changes: PreferenceChanges) -> QuietHours | None:
    """The quiet hours after ``changes`` (None: none of one's own, the tenant's apply)."""
    if changes.quiet is None and changes.quiet_days is None:
        return current
    base = current or QuietHours()
    if changes.quiet is not None:
        window = QuietHours.parse(changes.quiet)
        base = replace(base, start=window.start, end=window.end)
    if changes.quiet_days is not None:
        base = replace(base, days=QuietHours.parse(None, changes.quiet_days).days)
    return None if base.empty else base


class PreferenceCases(CaseBase):
    """A member's preferences and a tenant's defaults: read and changed."""

    async def _whose(self, actor: Actor, member: str | None, action: str) -> str:
        """The member ``actor`` names (themselves by default); another member only
        for an admin of the tenant (refused and audited otherwise)."""
        if member is None or not member.strip():
            return actor.id
        if len(member) > MAX_MEMBER_REF:
            raise InvalidInput(f"A member is named in at most {MAX_MEMBER_REF} characters.")
        whose = member_ref(actor, member)
        if whose != actor.id and not actor.is_admin:
            raise await self.denied(
                actor,
                action,
                "member",
                whose,
                "Only an admin can see or change another member's preferences; yours: "
                "herald prefs.",
            )
        return whose

    async def _member_preferences(self, actor: Actor, whose: str) -> MemberPreferences:
        found = await self.store.preferences_of(actor.tenant, [whose])
        own = found.get(whose, Preferences())
        tenant = found.get(TENANT_DEFAULT, Preferences())
        zone = own.zone
        if zone is None:
            row = await self.store.get_member(actor.tenant, whose)
            zone = row.timezone if row is not None else None
        zone = zone or self.settings.default_tz
        return MemberPreferences(whose, zone, own, tenant, effective(own, tenant))

    async def preferences(
        self, actor_id: ActorRef, *, member: str | None = None
    ) -> MemberPreferences:
        """The preferences of ``member`` (default: the actor) in the actor's tenant."""
        actor = await self.actor(actor_id)
        whose = await self._whose(actor, member, "preferences.show")
        return await self._member_preferences(actor, whose)

    async def set_preferences(
        self,
        actor_id: ActorRef,
        changes: PreferenceChanges,
        *,
        member: str | None = None,
    ) -> MemberPreferences:
        """Change the preferences of ``member`` (default: the actor); audited
        (``preferences.set``). Returns what applies now. InvalidInput (nothing
        changed) for a bad field; PermissionDenied (audited) for another member's
        without being an admin of the tenant."""
        actor = await self.actor(actor_id)
        whose = await self._whose(actor, member, "preferences.set")
        if changes.hold_channels is not None:
            raise InvalidInput(
                "Holding channel messages in quiet hours is a tenant default: an admin "
                "sets it in the tenant's preferences."
            )
        current = (await self.store.preferences_of(actor.tenant, [whose])).get(whose)
        updated = self._changed(actor, current or Preferences(), changes, whose)
        await self.store.put_preferences(
            actor.tenant,
            whose,
            updated,
            now=self.clock.now(),
            by=actor.id,
            audit=AuditEntry.by(
                actor, "preferences.set", "member", whose, _details(updated, changes)
            ),
        )
        return await self._member_preferences(actor, whose)

    async def tenant_preferences(self, actor_id: ActorRef) -> Preferences:
        """The actor's tenant's defaults (admins of the tenant)."""
        actor = await self.actor(actor_id)
        await self._tenant_admin(actor, "preferences.tenant_show")
        found = await self.store.preferences_of(actor.tenant, [])
        return found.get(TENANT_DEFAULT, Preferences())

    async def set_tenant_preferences(
        self, actor_id: ActorRef, changes: PreferenceChanges
    ) -> Preferences:
        """Change the actor's tenant's defaults (admins of the tenant only); audited
        (``preferences.tenant``). A tenant names no place: each member names their own."""
        actor = await self.actor(actor_id)
        await self._tenant_admin(actor, "preferences.tenant")
        if changes.place:
            raise InvalidInput(
                "A tenant's defaults name no place for reminders: each member names their own."
            )
        current = (await self.store.preferences_of(actor.tenant, [])).get(TENANT_DEFAULT)
        updated = self._changed(actor, current or Preferences(), changes, TENANT_DEFAULT)
        if changes.hold_channels is not None:
            updated = replace(updated, hold_channels=changes.hold_channels)
        await self.store.put_preferences(
            actor.tenant,
            TENANT_DEFAULT,
            updated,
            now=self.clock.now(),
            by=actor.id,
            audit=AuditEntry.by(
                actor, "preferences.tenant", "tenant", actor.tenant, _details(updated, changes)
            ),
        )
        return updated

    async def _tenant_admin(self, actor: Actor, action: str) -> None:
        if not actor.is_admin:
            raise await self.denied(
                actor,
                action,
                "tenant",
                actor.tenant,
                "Only an admin can see or change the tenant's default preferences.",
            )

    def _changed(
        self, actor: Actor, current: Preferences, changes: PreferenceChanges, whose: str
    ) -> Preferences:
        """``current`` with ``changes``, every one checked (InvalidInput, nothing kept)."""
        place = current.place
        if changes.place is not None:
            text = changes.place.strip()
            if len(text) > MAX_PLACE:
                raise InvalidInput(f"A place is at most {MAX_PLACE} characters.")
            place = check_place(text, whose) if text else None
        accept: Accept | None = current.accept_from
        if changes.accept_from is not None:
            word = changes.accept_from.strip().lower()
            if word and word not in ACCEPT:
                raise InvalidInput(
                    f"Unknown choice {changes.accept_from[:20]!r} for who may remind: "
                    "use anyone, admins or self."
                )
            accept = cast(Accept, word) if word else None
        blocked = list(current.blocked)
        for ref in changes.block:
            found = member_ref(actor, ref)
            if found == whose:
                raise InvalidInput("Nobody can block themselves: choose accept_from self instead.")
            if found not in blocked:
                blocked.append(found)
        gone = {member_ref(actor, ref) for ref in changes.unblock}
        blocked = [b for b in blocked if b not in gone]
        if len(blocked) > MAX_BLOCKED:
            raise InvalidInput(
                f"A block list holds at most {MAX_BLOCKED} members; unblock some first."
            )
        return replace(
            current,
            place=place,
            accept_from=accept,
            blocked=tuple(blocked),
            quiet=_quiet(current.quiet, changes),
            notices=current.notices if changes.notices is None else changes.notices,
        )


def _details(prefs: Preferences, changes: PreferenceChanges) -> dict[str, Any]:
    """What an audit row says of a change: the fields changed, the result's summary
    (a place is an address: shown redacted)."""
    fields = [
        name
        for name in _FIELDS
        if getattr(changes, name) not in (None, ())
        or (name == "quiet_days" and changes.quiet_days == ())
    ]
    details: dict[str, Any] = {"changed": fields, "summary": prefs.describe()}
    if prefs.place is not None:
        details["place"] = parse_destination(prefs.place).redacted()
    return details
