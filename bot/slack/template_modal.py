"""The schedule modal's templates (issue 39): picking one shows its variables and its
text filled in with the data typed so far (core's ``preview_template``: sample
built-ins, a value not given yet shown as ``{{ name }}``), and the picker's options
when the tenant has more templates than a static menu lists."""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt.context.ack.async_ack import AsyncAck

from bot.slack.base import Person
from bot.slack.blocks import shown
from bot.slack.modal import (
    NO_TEMPLATE,
    PREVIEW_CHARS,
    ModalMeta,
    kept_text,
    option,
    read_submission,
    schedule_modal,
)
from bot.slack.prefs import Prefs
from bot.slack.words import Refusal, escape, unescape
from core.actors import Principal, Surface
from core.errors import HeraldError

log = logging.getLogger(__name__)

#: What a preview in the modal says of its sample values.
SAMPLE = (
    "_Preview with sample values (schedule #123, recipient Ann, today); a value not given "
    "yet shows as {{ name }}._"
)


class TemplateModal(Prefs):
    """The template fields of the schedule modal."""

    async def template_names(self, person: Person) -> list[str]:
        """The names of the tenant's templates, for the modal's picker."""
        return [t.name for t, _ in await self.herald.list_templates(person.principal)]

    async def check_template(self, person: Person, name: str) -> None:
        """Refuse, in Slack's words, a template this workspace does not have (core
        refuses it too, pointing at the CLI)."""
        if name not in await self.herald.template_names(person.principal, name):
            raise Refusal(
                f"There is no template named `{escape(name[:64])}` in this workspace: "
                "`/schedule templates` lists them."
            )

    async def template_preview(self, person: Person, name: str, data: dict[str, str]) -> str:
        """mrkdwn for the modal: the template's version and variables, and its text
        filled in with ``data`` (or the sentence saying why it cannot be)."""
        actor = person.principal
        try:
            found = [t for t, _ in await self.herald.list_templates(actor) if t.name == name]
            parts = await self.herald.preview_template(actor, name, data)
        except HeraldError as exc:
            return f":warning: {shown(exc)}"
        head = f"*{escape(name)}*"
        if found:
            template = found[0]
            variables = ", ".join(f"{escape(n)} ({k})" for n, k in template.variables.items())
            head += f" v{template.version} · variables: {variables or 'none'}"
        body = escape(unescape(parts.body))
        if len(body) > PREVIEW_CHARS:
            body = body[: PREVIEW_CHARS - 1] + "…"
        quoted = "\n".join(f">{line}" for line in body.splitlines() or [""])
        return f"{head}\n{SAMPLE}\n{quoted}"

    async def rebuild_modal(
        self, person: Person, view: dict[str, Any], *, when_preview: str | None
    ) -> None:
        """The modal again, as the person left it, with the "when" preview
        (``when_preview``, else the one it shows) and the template's preview."""
        sub = read_submission(view)
        if when_preview is None:
            when_preview = _context(view, "preview")
        template_preview = None
        if sub.template is not None:
            template_preview = await self.template_preview(person, sub.template, sub.data)
        meta = ModalMeta.loads(view.get("private_metadata"))
        rebuilt = schedule_modal(
            zone=person.zone,
            meta=meta,
            text=sub.text,
            preview=when_preview,
            kept=kept_text(view),
            templates=await self.template_names(person),
            data=sub.data_text or None,
            template_preview=template_preview,
            picked=sub.template or NO_TEMPLATE,
        )
        await self.client.views_update(view_id=view["id"], hash=view.get("hash"), view=rebuilt)

    async def on_template_picked(self, ack: AsyncAck, body: dict[str, Any]) -> None:
        """A template picked in the modal: its variables and text under the picker."""
        with self.tracker.track():
            await ack()
            await self.guard(self._picked(body), _logged)

    async def _picked(self, body: dict[str, Any]) -> None:
        person = await self.person(str(body["user"]["id"]), body)
        await self.rebuild_modal(person, body.get("view") or {}, when_preview=None)

    async def on_template_options(self, ack: AsyncAck, body: dict[str, Any]) -> None:
        """The picker's options as the person types (an ``external_select``: more
        templates than a static menu lists): the tenant's names starting so, the
        first 99 after "no template". Not counted as a command."""
        with self.tracker.track():
            names: list[str] = []
            try:
                user = str((body.get("user") or {}).get("id") or "")
                principal = Principal(f"slack:{user}", self.tenant(body), surface=Surface.SLACK)
                names = await self.herald.template_names(principal, str(body.get("value") or ""))
            except HeraldError as exc:
                log.info("slack template options refused: %s", exc)
            except Exception:  # the handler boundary: an empty menu, the cause logged
                log.exception("slack template options failed")
            await ack(options=[option(NO_TEMPLATE), *(option(n) for n in names[:99])])


async def _logged(reply: tuple[str, Any]) -> None:
    """A modal's action has no place for an error reply: it is only logged."""
    log.warning("slack modal template preview failed: %s", reply[0])


def _context(view: dict[str, Any], block_id: str) -> str | None:
    for block in view.get("blocks") or []:
        if isinstance(block, dict) and block.get("block_id") == block_id:
            elements = block.get("elements") or [{}]
            said = elements[0].get("text") if isinstance(elements[0], dict) else None
            return said if isinstance(said, str) and said else None
    return None
