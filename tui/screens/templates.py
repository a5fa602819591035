"""8 · Templates: the tenant's named templates (issue 39), how many schedules use each,
the highlighted one in full with a preview filled in with sample data (typed as
``name=value``), and keys to add, edit and remove them (operators and admins: core
refuses a member, and the screen says so)."""

from __future__ import annotations

import asyncio
import logging
import shlex
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Header, Input, Static

from core.cases import Edited, TemplateDetail
from core.errors import HeraldError, InvalidInput
from core.models import Schedule, Template
from core.render import Parts
from tui.format import CELL, ago, clip
from tui.screens.base import ConsoleScreen, footer
from tui.screens.template_edit import TemplateEditScreen, variables_field
from tui.widgets.table import Col, PageTable

log = logging.getLogger(__name__)

#: The columns, and how they give way at 80 columns: the variables first (the pane
#: lists them), the description keeps what is left.
COLUMNS = (
    Col("name", 24, keep=9, least=10),
    Col("version", 7, keep=8),
    Col("variables", 30, keep=6, least=12),
    Col("used by", 12, keep=7),
    Col("description", CELL, keep=5, least=12, flex=True),
)

SAMPLE_HINT = (
    "Sample data as name=value pairs, e.g. service=api version=1.4 (quote a value with spaces)."
)


def parse_data(text: str) -> dict[str, str]:
    """Sample data as typed: ``service=api note="two words"`` (shell quoting), each
    value a string (core reads a number kind's "1.4" as a number). InvalidInput, in
    one sentence, for anything else."""
    try:
        words = shlex.split(text)
    except ValueError:
        raise InvalidInput(f"A quote is not closed. {SAMPLE_HINT}") from None
    data: dict[str, str] = {}
    for word in words:
        name, equals, value = word.partition("=")
        if not equals or not name:
            raise InvalidInput(f"{clip(word, 30)!r} is not name=value. {SAMPLE_HINT}")
        data[name] = value
    return data


def used_by(count: int) -> str:
    """The list's cell under "used by": ``12 schedules``, ``none``."""
    if not count:
        return "none"
    return f"{count} schedule{'s' if count != 1 else ''}"


def users_line(count: int, users: Sequence[Schedule], version: int, *, everyone: bool) -> str:
    """Which schedules use the template: their ids, with the version of those kept on
    an older one. A member sees their own among ``count`` (core shows them no others)."""
    shown = ", ".join(
        f"#{s.id}"
        if s.template_version in (None, version)
        else f"#{s.id} (kept on v{s.template_version})"
        for s in users
    )
    if not count:
        return "Used by no schedule."
    head = f"Used by {count} schedule{'s' if count != 1 else ''}"
    if everyone or len(users) == count:
        return f"{head}: {shown}."
    return f"{head}; yours: {shown or 'none'}."


def describe(detail: TemplateDetail, count: int, *, everyone: bool, now: datetime) -> str:
    """The highlighted template in full: what it is, its variables, who changed it
    last and when, and the schedules using it."""
    t = detail.template
    declared = ", ".join(f"{name} ({kind})" for name, kind in t.variables.items()) or "none"
    parts = [
        f"{t.name} v{t.version} · variables: {declared}",
        users_line(count, detail.used_by, t.version, everyone=everyone),
    ]
    if t.description:
        parts.append(t.description)
    extra = [
        label
        for label, value in (
            ("a subject", t.subject),
            ("Slack blocks", t.blocks),
            ("Discord embeds", t.embeds),
        )
        if value
    ]
    changed = f"Changed by {t.updated_by} {ago(t.updated_at, now)}"
    if len(detail.versions) > 1:
        changed += f" · {len(detail.versions)} versions"
    if extra:
        changed += " · with " + ", ".join(extra)
    parts.append(changed)
    return "\n".join(parts)


def rendered(parts: Parts) -> Text:
    """A preview as plain text (never read as markup): the subject first when there
    is one, and how many blocks or embeds come with it."""
    out = Text()
    if parts.subject:
        out.append("Subject: ", style="bold")
        out.append(parts.subject + "\n")
    out.append(parts.body)
    more = [
        f"{len(value)} {label}{'s' if len(value) != 1 else ''}"
        for label, value in (("Slack block", parts.blocks), ("Discord embed", parts.embeds))
        if value
    ]
    if more:
        out.append("\n+ " + ", ".join(more), style="italic")
    return out


def saved_sentence(edited: Edited | Template, before: int | None) -> str:
    """What a save did: the new version, and the schedules moved to it and kept on the
    version they had (with why the first was kept)."""
    if isinstance(edited, Template):
        return f"Added template {edited.name!r} (version {edited.version})."
    t = edited.template
    if before is not None and t.version == before:
        return f"Saved template {t.name!r} (still version {t.version})."
    said = [f"Saved template {t.name!r} as version {t.version}."]
    if edited.moved:
        ids = ", ".join(f"#{i}" for i in edited.moved)
        said.append(f"Moved to it: {ids}.")
    if edited.kept:
        ids = ", ".join(f"#{i}" for i, _ in edited.kept)
        said.append(f"Kept on version {before}: {ids} ({edited.kept[0][1]})")
    if not edited.moved and not edited.kept:
        said.append("No schedule uses it.")
    return " ".join(said)


def saved_short(edited: Edited | Template, before: int | None) -> str:
    """The status line's note of a save: ``last save: deploy v3, 2 moved, 1 kept on v2``."""
    t = edited if isinstance(edited, Template) else edited.template
    said = f"last save: {t.name} v{t.version}"
    if isinstance(edited, Edited) and t.version != before:
        said += f", {len(edited.moved)} moved"
        if edited.kept:
            said += f", {len(edited.kept)} kept on v{before}"
    return said


class TemplatesScreen(ConsoleScreen):
    TITLE = "Templates"
    FOCUS = "#table"
    BINDINGS = [
        Binding("n", "new", "New", id="template-new"),
        Binding("e", "edit", "Edit", id="template-edit"),
        Binding("d", "remove", "Remove", id="template-remove"),
        Binding("s", "sample", "Sample data", id="template-sample"),
        Binding("escape", "back_to_list", "Back to the list", id="template-list", show=False),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.rows: dict[str, tuple[Template, int]] = {}
        #: The sample data typed (the preview's input), as text.
        self.sample = ""
        #: What the last save did, in short, for the status line (the notification
        #: says it in full).
        self.last_saved = ""

    def compose(self) -> ComposeResult:
        yield Header()
        yield PageTable(*COLUMNS, id="table")
        yield Static("", id="pane", classes="pane", markup=False)
        preview = Static("", id="preview", markup=False)
        preview.border_title = "Preview with sample data"
        yield preview
        yield Input(placeholder="sample data: service=api version=1.4", id="data", compact=True)
        yield Static("", id="status", classes="status", markup=False)
        yield Static("", classes="role-note")
        yield footer()

    async def fetch(self) -> Any:
        return await self.herald.list_templates(self.principal)

    def show(self, data: Any) -> None:
        listed: list[tuple[Template, int]] = data
        self.rows = {t.name: (t, count) for t, count in listed}
        self.table.show(
            [
                (
                    t.name,
                    (
                        t.name,
                        f"v{t.version}",
                        variables_field(t.variables),
                        used_by(count),
                        clip(t.description, CELL),
                    ),
                )
                for t, count in listed
            ]
        )
        total = len(listed)
        status = f"{total} template{'s' if total != 1 else ''}"
        if self.last_saved:
            status += f" · {self.last_saved}"
        self.query_one("#status", Static).update(status)
        self.update_role_note()
        self.update_pane()

    def current(self) -> Template | None:
        key = self.table.cursor_key()
        return None if key is None else self.rows.get(key, (None, 0))[0]

    # --- the highlighted template and its preview --------------------------------------

    def update_pane(self) -> None:
        """The highlighted template in full and its preview, read in a worker (the base
        screen calls this when the cursor moves)."""
        template = self.current()
        if template is None:
            self.query_one("#pane", Static).update(
                "No templates yet: n adds one." if not self.rows else ""
            )
            self.query_one("#preview", Static).update("")
            return
        self._detail(template.name, self.rows[template.name][1], self.sample)

    @on(Input.Changed, "#data")
    def data_changed(self, event: Input.Changed) -> None:
        self.sample = event.value
        self.update_pane()

    @on(Input.Submitted, "#data")
    def data_submitted(self) -> None:
        self.table.focus()

    @work(exclusive=True, group="detail", exit_on_error=False)
    async def _detail(self, name: str, count: int, sample: str) -> None:
        pane = self.query_one("#pane", Static)
        preview = self.query_one("#preview", Static)
        try:
            data = parse_data(sample)
        except InvalidInput as exc:
            data, problem = {}, str(exc)
        else:
            problem = ""
        try:
            # a newer highlight cancels this worker; the reads run to their end
            detail, parts, problem = await asyncio.shield(
                self.console.finish_later(self._read_detail(name, data, problem))
            )
        except HeraldError as exc:
            pane.update(str(exc))
            preview.update("")
            return
        except Exception as exc:  # a handler boundary: never crash the console
            log.exception("template preview failed", extra={"template": name})
            pane.update(f"{type(exc).__name__}: {exc}")
            return
        everyone = self.actor.sees_everything
        pane.update(describe(detail, count, everyone=everyone, now=self.herald.clock.now()))
        shown = rendered(parts)
        if problem:
            shown = Text.assemble((problem + "\n", "bold red"), shown)
        preview.update(shown)

    async def _read_detail(
        self, name: str, data: dict[str, str], problem: str
    ) -> tuple[TemplateDetail, Parts, str]:
        """The template in full and its preview with ``data`` (a value core refuses:
        the preview without the sample data, and why)."""
        detail = await self.herald.show_template(self.principal, name)
        try:
            parts = await self.herald.preview_template(self.principal, name, data)
        except InvalidInput as exc:
            if not data:
                raise
            problem = str(exc)
            parts = await self.herald.preview_template(self.principal, name, {})
        return detail, parts, problem

    def action_sample(self) -> None:
        self.query_one("#data", Input).focus()

    def action_back_to_list(self) -> None:
        self.table.focus()

    # --- add, edit, remove ----------------------------------------------------------------

    def action_new(self) -> None:
        self.app.push_screen(TemplateEditScreen(None), self._saved(None))

    def action_edit(self) -> None:
        template = self.current()
        if template is None:
            self.notify("No template to edit: n adds one.")
            return
        self.app.push_screen(TemplateEditScreen(template), self._saved(template.version))

    def _saved(self, before: int | None) -> Any:
        def saved(result: Edited | Template | None) -> None:
            if result is not None:
                self.last_saved = saved_short(result, before)
                self.notify(saved_sentence(result, before), title="Done", timeout=15)
            self.reload()

        return saved

    def action_remove(self) -> None:
        template = self.current()
        if template is None:
            return
        name, count = template.name, self.rows[template.name][1]

        async def remove() -> str:
            gone = await self.herald.remove_template(self.principal, name)
            self.last_saved = ""
            return f"Removed template {gone.name!r} and its versions."

        uses = ""
        if count:
            uses = f" {used_by(count)} {'uses' if count == 1 else 'use'} it: it cannot go while"
            uses += " it does." if count == 1 else " they do."
        self.confirm(f"Remove template {name!r} and all its versions?{uses}", remove)
