"""Named templates (issue 39): a message written once, scheduled many times with data.

Members of a tenant use its templates; operators and admins add, edit and remove them;
no other tenant sees them. Every change is audited (``template.create``,
``template.edit``, ``template.remove``; refusals ``….denied``).

A schedule names a template and gives data (:meth:`TemplateCases.template_values`):
the template's current version is copied into it, and checked for every recipient and
destination with their data, the largest schedule id and the longest date and time
(:func:`fit`): a message a platform would refuse is refused when saved. An edit that
would break a schedule using the template (a limit passed, a value missing) is refused
naming them; with ``force_version`` those stay on the version they had and the others
move to the new one.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from core import limits, render, routing, tenancy
from core.actors import Actor, ActorRef
from core.cases.base import CaseBase
from core.cases.messages import check_options, check_text
from core.channels import parse_destination
from core.errors import Conflict, InvalidInput, NotFound, PermissionDenied
from core.events import recipient_label, recipient_shown
from core.models import Schedule, Template, TemplateVersion
from core.settings import Settings
from core.store import AuditEntry, Moved

DESCRIPTION_MAX = 500
#: The most characters of a template's subject (its column's size; an email's own limit,
#: 78 in a line, is checked per schedule on the filled-in subject).
SUBJECT_MAX = 1000
#: The most bytes of data (as JSON: shared, each recipient's, their names) a schedule
#: keeps: every job of it reads them with its options when claimed.
MAX_DATA_BYTES = 32_768
#: The options a template's parts fill in (the rest are the schedule's own).
PART_OPTIONS = ("subject", "blocks", "embeds")
#: The option holding a schedule's data (core.render.Use) and its template's name.
LIQUID = "liquid"


class WouldBreak(InvalidInput):
    """A template edit refused because it would break schedules using it: ``kept``
    (each schedule's id and why), ``version`` (the one they would stay on if the edit
    were forced). Its sentence says what, not how to force it: each surface adds its
    own way (``--force-version``, ``"force_version": true``, a key)."""

    def __init__(self, template: Template, before: int, kept: list[tuple[int, str]]) -> None:
        ids = ", ".join(f"#{i}" for i, _ in kept[:10])
        more = f" and {len(kept) - 10} more" if len(kept) > 10 else ""
        plural = "s" if len(kept) > 1 else ""
        self.what = (
            f"Version {template.version} of template {template.name!r} would break "
            f"{len(kept)} schedule{plural} using it ({ids}{more}): {kept[0][1]}"
        )
        self.kept = kept
        self.version = before
        super().__init__(self.said())

    def said(self, how: str | None = None) -> str:
        """The refusal, with the surface's way to force it (``how``: ``--force-version``)."""
        force = "force the new version" if how is None else f"force the new version ({how})"
        return f"{self.what} Change it, or {force} to keep those on version {self.version}."


@dataclass(frozen=True)
class TemplateDetail:
    """A template, its versions (newest first) and the live schedules using it."""

    template: Template
    versions: list[TemplateVersion]
    used_by: list[Schedule]


@dataclass(frozen=True)
class Edited:
    """A saved edit: the template, the schedules moved to its new version, and those
    kept on the version they had (``force_version``), each with why."""

    template: Template
    moved: list[int] = field(default_factory=list)
    kept: list[tuple[int, str]] = field(default_factory=list)


def parts_of(template: Template | TemplateVersion) -> render.Parts:
    return render.Parts(template.body, template.subject, template.blocks, template.embeds)


def _checked_parts(
    body: str, subject: str | None, blocks: Any, embeds: Any, variables: Mapping[str, str]
) -> tuple[render.Parts, dict[str, str]]:
    """Parts and declarations as saved, refused in one sentence when Liquid cannot
    read them, they use an undeclared variable, or a part is of the wrong shape."""
    declared = render.check_variables(variables)
    check_text(body)
    shaped = check_options(
        {k: v for k, v in (("subject", subject), ("blocks", blocks), ("embeds", embeds)) if v}
    )
    if "subject" in shaped and len(shaped["subject"]) > SUBJECT_MAX:
        raise InvalidInput(f"A template's subject is over {SUBJECT_MAX:,} characters.")
    parts = render.Parts(body, shaped.get("subject"), shaped.get("blocks"), shaped.get("embeds"))
    render.check_parts(parts, declared)
    return parts, declared


def template_options(
    options: Mapping[str, Any], template: Template | TemplateVersion, name: str, use: render.Use
) -> dict[str, Any]:
    """A schedule's options with ``template``'s parts and ``use`` in them (a version's
    parts replace the ones of the version it had)."""
    out = {k: v for k, v in options.items() if k not in (*PART_OPTIONS, LIQUID, "template")}
    for part in PART_OPTIONS:
        value = getattr(template, part)
        if value:
            out[part] = value
    out[LIQUID] = {"template": name, "version": template.version, **use.as_json()}
    return out


def recipient_name(destination: str, members: Mapping[str, str]) -> str:
    """How ``{{ recipient.name }}`` reads for a destination: the member's name Herald
    knows (``members``: member id → display name), else its address as shown."""
    kind, _, target = destination.partition(":")
    if kind in ("slack", "discord") and target.startswith("@"):
        known = members.get(f"{kind}:{target[1:]}")
        if known:
            return known
    return recipient_label(destination)


def fit(
    actor: Actor | None,
    settings: Settings,
    *,
    name: str,
    version: int,
    parts: render.Parts,
    variables: Mapping[str, str],
    use: render.Use,
    recipients: Sequence[routing.Recipient],
    options: dict[str, Any],
) -> dict[str, Any]:
    """Refuse (InvalidInput, in one sentence) a template whose rendering would not
    reach every recipient whole: a value missing for one, or a destination's limit
    passed at the longest its fields render (:func:`core.render.longest`), or a
    mention its author may not make. Returns ``options`` with the mentions allowed
    (``actor`` None: a template edit, checked for limits and values only)."""
    deadline = time.monotonic() + render.CHECK_SECONDS
    #: The longest date and time, found once per distinct data (a recipient's own data
    #: may take another branch of the template, whose longest date is another).
    worst: dict[str, render.Worst] = {}
    for recipient in recipients:
        values = use.values(recipient.id)
        missing = [v for v in variables if v not in values]
        first = recipient.first
        if missing:
            raise InvalidInput(
                f"Template {name!r} needs a value for {missing[0]!r} for "
                f"{recipient_shown(first).rstrip(':')}: give it in data, or in that "
                "recipient's data."
            )
        who = use.names.get(str(recipient.id)) or recipient_name(first, {})
        try:
            key = json.dumps(values, sort_keys=True, default=str)
            at = worst.get(key)
            if at is None:
                at = worst[key] = render.worst(parts, values, deadline)
            rendered = render.longest(parts, use, recipient.id, who, at, deadline)
        except render.RenderError as exc:
            raise InvalidInput(f"Template {name!r} v{version}: {exc}") from None
        for step in recipient.to:
            destination = parse_destination(step)
            shown = {k: v for k, v in options.items() if k != LIQUID}
            for part in PART_OPTIONS:
                value = getattr(rendered, part)
                if value:
                    shown[part] = value
            if actor is not None:
                checked = tenancy.check_mentions(
                    actor, destination, rendered.body, dict(shown), settings
                )
                if "allowed_mentions" in checked:  # the one option the check decides
                    options = {**options, "allowed_mentions": checked["allowed_mentions"]}
            try:
                if shown.get("blocks"):  # data may not fill in Herald's own action ids
                    check_options({"blocks": shown["blocks"]})
                limits.check_message(destination, rendered.body, shown)
            except InvalidInput as exc:
                raise InvalidInput(
                    f"Template {name!r} v{version} filled in for "
                    f"{recipient_shown(step).rstrip(':')} at its longest: {exc}"
                ) from None
    return options


class TemplateCases(CaseBase):
    """Add, edit, show, list, preview and remove named templates; a schedule's data."""

    async def _managing(self, actor: Actor, action: str, name: str) -> None:
        if not actor.sees_everything:
            raise await self.denied(
                actor,
                action,
                "template",
                name,
                "Only operators and admins add, edit and remove templates; members use them.",
                PermissionDenied,
            )

    async def _template(self, actor: Actor, name: str) -> Template:
        """The template ``name`` of the actor's tenant (NotFound: never says whether
        another tenant has one)."""
        name = str(name)
        template = None if len(name) > 64 else await self.store.get_template(actor.tenant, name)
        if template is None:
            raise NotFound(
                f"There is no template named {str(name)[:64]!r} here (the list of templates "
                "shows those there are)."
            )
        return template

    async def add_template(
        self,
        actor_id: ActorRef,
        name: str,
        body: str,
        *,
        subject: str | None = None,
        blocks: list[dict[str, Any]] | None = None,
        embeds: list[dict[str, Any]] | None = None,
        variables: Mapping[str, str] | None = None,
        description: str = "",
    ) -> Template:
        """A new template of the actor's tenant, as its version 1. PermissionDenied for
        a member; InvalidInput for a bad name, part or declaration; Conflict for a name
        taken."""
        actor = await self.actor(actor_id)
        await self._managing(actor, "template.create", str(name)[:64])
        render.check_name(name)
        parts, declared = _checked_parts(body, subject, blocks, embeds, variables or {})
        now = self.clock.now()
        template = Template(
            tenant=actor.tenant,
            name=name,
            description=_description(description),
            version=1,
            body=parts.body,
            subject=parts.subject,
            blocks=parts.blocks,
            embeds=parts.embeds,
            variables=declared,
            created_by=actor.id,
            updated_by=actor.id,
            created_at=now,
            updated_at=now,
        )
        details = {"name": name, "variables": declared, "body_chars": len(body)}
        return await self.store.add_template(
            template, audit=AuditEntry.by(actor, "template.create", "template", "", details)
        )

    async def edit_template(
        self,
        actor_id: ActorRef,
        name: str,
        *,
        body: str | None = None,
        subject: str | None = None,
        blocks: list[dict[str, Any]] | None = None,
        embeds: list[dict[str, Any]] | None = None,
        variables: Mapping[str, str] | None = None,
        description: str | None = None,
        expected_version: int | None = None,
        force_version: bool = False,
    ) -> Edited:
        """Save a new version (or only a new description) and move the schedules using
        the template to it. Refused (InvalidInput, naming them) when it would break
        some; with ``force_version`` those stay on their version. ``subject``,
        ``blocks`` or ``embeds`` given as empty take that part out. Conflict for a
        stale ``expected_version``."""
        actor = await self.actor(actor_id)
        await self._managing(actor, "template.edit", str(name)[:64])
        template = await self._template(actor, name)
        if expected_version is not None and expected_version != template.version:
            raise Conflict(
                f"Template {template.name!r} is at version {template.version}, not "
                f"{expected_version}: read it again and redo your edit."
            )
        if (body, subject, blocks, embeds, variables, description) == (None,) * 6:
            raise InvalidInput(
                "Nothing to change: give a new text, subject, variables or description."
            )
        before = template.version
        changed: dict[str, Any] = {}
        parts_changed = any(x is not None for x in (body, subject, blocks, embeds, variables))
        if parts_changed:
            parts, declared = _checked_parts(
                template.body if body is None else body,
                template.subject if subject is None else (subject or None),
                template.blocks if blocks is None else (blocks or None),
                template.embeds if embeds is None else (embeds or None),
                template.variables if variables is None else variables,
            )
            same = parts == parts_of(template) and declared == template.variables
            if not same:
                template.body, template.subject = parts.body, parts.subject
                template.blocks, template.embeds = parts.blocks, parts.embeds
                template.variables = declared
                template.version = before + 1
                changed = {"version": template.version, "body_chars": len(parts.body)}
        if description is not None:
            template.description = _description(description)
            changed["description"] = template.description
        template.updated_by = actor.id
        moved: list[Moved] = []
        kept: list[tuple[int, str]] = []
        if template.version != before:
            for schedule in await self.store.template_users(actor.tenant, _id(template)):
                if schedule.template_version != before:
                    continue  # kept on an older version earlier: stays there
                use = render.Use.of((schedule.options or {}).get(LIQUID))
                options = template_options(schedule.options or {}, template, template.name, use)
                try:
                    await asyncio.to_thread(
                        fit,
                        None,
                        self.settings,
                        name=template.name,
                        version=template.version,
                        parts=parts_of(template),
                        variables=template.variables,
                        use=use,
                        recipients=routing.from_json(schedule.recipients, schedule.destination),
                        options=options,
                    )
                except InvalidInput as exc:
                    kept.append((_id(schedule), str(exc)))
                    continue
                moved.append(Moved(_id(schedule), before, schedule.version, template.body, options))
            if kept and not force_version:
                raise WouldBreak(template, before, kept)
            changed |= {"moved": [m.schedule_id for m in moved], "kept": [i for i, _ in kept]}
        saved = await self.store.save_template_version(
            template,
            expected_version=before,
            new_version=template.version != before,
            moved=moved,
            audit=AuditEntry.by(actor, "template.edit", "template", "", {"name": name, **changed}),
            now=self.clock.now(),
        )
        if moved:
            self._due(self.clock.now())
        return Edited(saved, [m.schedule_id for m in moved], kept)

    async def show_template(self, actor_id: ActorRef, name: str) -> TemplateDetail:
        """A template of the actor's tenant, its versions and the schedules using it
        (a member sees only their own among those)."""
        actor = await self.actor(actor_id)
        template = await self._template(actor, name)
        versions = await self.store.template_versions(actor.tenant, _id(template))
        users = await self.store.template_users(actor.tenant, _id(template))
        if not actor.sees_everything:
            users = [s for s in users if s.owner == actor.id]
        return TemplateDetail(template, versions, users)

    async def list_templates(self, actor_id: ActorRef) -> list[tuple[Template, int]]:
        """The templates of the actor's tenant by name, each with how many live
        schedules use it."""
        actor = await self.actor(actor_id)
        return await self.store.list_templates(actor.tenant)

    async def template_names(self, actor_id: ActorRef, prefix: str = "") -> list[str]:
        """Names of the actor's tenant's templates starting with ``prefix`` (autocomplete)."""
        actor = await self.actor(actor_id)
        return await self.store.template_names(actor.tenant, prefix.strip().lower()[:64])

    async def preview_template(
        self,
        actor_id: ActorRef,
        name: str,
        data: Mapping[str, Any] | None = None,
        *,
        version: int | None = None,
    ) -> render.Parts:
        """A template (its ``version``, default the current) filled in with ``data``
        and sample built-ins; a variable without a value shows as ``{{ name }}``."""
        actor = await self.actor(actor_id)
        current = await self._template(actor, name)
        template: Template | TemplateVersion = current
        if version is not None and version != current.version:
            found = await self.store.template_version(actor.tenant, _id(current), version)
            if found is None:
                raise NotFound(f"Template {name!r} has no version {version}.")
            template = found
        given = render.check_data(template.variables, data or {}, template=name, needs=())
        zone = self._zone_for(actor, None)
        parts, now = parts_of(template), self.clock.now()
        # off the event loop: a preview's data are whatever was typed
        return await asyncio.to_thread(render.sample, parts, given, template.variables, now, zone)

    async def remove_template(self, actor_id: ActorRef, name: str) -> Template:
        """Remove a template and its versions; refused (InvalidInput, naming them)
        while a live schedule uses it."""
        actor = await self.actor(actor_id)
        await self._managing(actor, "template.remove", str(name)[:64])
        template = await self._template(actor, name)
        users = await self.store.remove_template(
            actor.tenant,
            _id(template),
            audit=AuditEntry.by(actor, "template.remove", "template", "", {"name": name}),
            now=self.clock.now(),
        )
        if users:
            ids = ", ".join(f"#{i}" for i in users[:10])
            more = f" and {len(users) - 10} more" if len(users) > 10 else ""
            plural = "s" if len(users) > 1 else ""
            raise InvalidInput(
                f"Template {name!r} is used by {len(users)} schedule{plural} ({ids}{more}): "
                "cancel them, or give them their own text, first."
            )
        return template

    # --- a schedule's template ----------------------------------------------------------

    async def template_values(
        self,
        actor: Actor,
        name: str,
        *,
        data: Mapping[str, Any] | None,
        data_by_recipient: Mapping[str, Mapping[str, Any]] | None,
        recipients: Sequence[routing.Recipient],
        options: Mapping[str, Any],
    ) -> dict[str, Any]:
        """The values a schedule to ``recipients`` takes from template ``name`` with
        ``data`` (shared) and ``data_by_recipient`` (keyed by a recipient's first
        destination, as given or as saved): its body, options and template columns,
        checked by :func:`fit`. NotFound for a template this tenant lacks."""
        template = await self._template(actor, name)
        clash = [p for p in PART_OPTIONS if p in options]
        if clash:
            raise InvalidInput(
                f"A schedule using template {name!r} takes its {clash[0]} from the template: "
                "leave it out of the options, or put it in the template."
            )
        shared = render.check_data(template.variables, data or {}, template=name, needs=())
        by_recipient: dict[str, dict[str, Any]] = {}
        for key, own in (data_by_recipient or {}).items():
            recipient = await self._recipient_of(actor, recipients, str(key))
            if not isinstance(own, Mapping):
                raise InvalidInput(f"The data for {key} must be an object of variables.")
            where = f" for {recipient_shown(recipient.first).rstrip(':')}"
            by_recipient[str(recipient.id)] = render.check_data(
                template.variables, own, template=name, where=where, needs=()
            )
        names = await self._recipient_names(actor, recipients)
        use = render.Use(shared, by_recipient, names)
        size = len(json.dumps(use.as_json(), separators=(",", ":")).encode())
        if size > MAX_DATA_BYTES:
            raise InvalidInput(
                f"This schedule's data come to {size:,} bytes; the most a schedule keeps is "
                f"{MAX_DATA_BYTES:,} (every send reads them): give fewer or shorter values, "
                "or split the recipients over several schedules."
            )
        merged = template_options(options, template, name, use)
        merged = await asyncio.to_thread(
            fit,
            actor,
            self.settings,
            name=name,
            version=template.version,
            parts=parts_of(template),
            variables=template.variables,
            use=use,
            recipients=recipients,
            options=merged,
        )
        return {
            "body": template.body,
            "options": merged,
            "template_id": template.id,
            "template_version": template.version,
        }

    async def _recipient_of(
        self, actor: Actor, recipients: Sequence[routing.Recipient], key: str
    ) -> routing.Recipient:
        for recipient in recipients:
            if key in (recipient.first, str(recipient.id)):
                return recipient
        try:
            resolved = await self.named_channel(actor, key)
        except InvalidInput:
            resolved = key
        for recipient in recipients:
            if recipient.first == resolved:
                return recipient
        shown = ", ".join(recipient_shown(r.first) for r in recipients[:5])
        raise InvalidInput(
            f"Data is given for {key[:80]}, which is not one of this schedule's recipients "
            f"({shown}): name a recipient by its first destination."
        )

    async def _recipient_names(
        self, actor: Actor, recipients: Sequence[routing.Recipient]
    ) -> dict[str, str]:
        """Each recipient's name for ``{{ recipient.name }}``: a member's name Herald
        knows, else the address as shown."""
        known: dict[str, str] = {}
        for recipient in recipients:
            kind, _, target = recipient.first.partition(":")
            if kind in ("slack", "discord") and target.startswith("@"):
                member = await self.store.get_member(actor.tenant, f"{kind}:{target[1:]}")
                if member is not None and member.display_name:
                    known[f"{kind}:{target[1:]}"] = member.display_name
        return {str(r.id): recipient_name(r.first, known) for r in recipients}


def _description(text: str) -> str:
    text = " ".join(str(text).split())
    if len(text) > DESCRIPTION_MAX:
        raise InvalidInput(f"A template's description is at most {DESCRIPTION_MAX} characters.")
    return text


def _id(row: Template | Schedule) -> int:
    assert row.id is not None
    return row.id
