"""Add or edit a named template: its text (Liquid), variables, subject and description.

Core checks what is saved: a text it cannot read, an undeclared variable, or an edit
that would break schedules using the template (named) is refused in the form, nothing
saved; after such a refusal "keep those" saves anyway, those schedules staying on the
version they had (``force_version``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static, TextArea

from core.actors import Principal
from core.cases import Edited, Herald, WouldBreak
from core.errors import HeraldError
from core.models import Template


def variables_field(variables: Mapping[str, str]) -> str:
    """Declared variables as the form writes them: ``service:text version:number``."""
    return " ".join(f"{name}:{kind}" for name, kind in variables.items())


def parse_variables(text: str) -> dict[str, str]:
    """The variables field read back: names separated by spaces or commas, each with
    its kind after a colon (``text`` when left out); core checks names and kinds."""
    declared: dict[str, str] = {}
    for word in text.replace(",", " ").split():
        name, colon, kind = word.partition(":")
        declared[name] = kind if colon else "text"
    return declared


class TemplateEditScreen(ModalScreen[Edited | Template | None]):
    """``template`` None adds a new one; otherwise edits it (at its version). Dismissed
    with what core saved (a Template added, or an Edited), or None."""

    BINDINGS = [
        Binding("ctrl+s", "save", "Save", id="template-form-save"),
        Binding("ctrl+o", "keep", "Save, keep those", id="template-form-keep"),
        Binding("escape", "cancel", "Cancel", id="template-form-cancel"),
    ]

    def __init__(self, template: Template | None) -> None:
        super().__init__()
        self.template = template
        #: An edit was refused because it would break schedules: "keep those" may save.
        self.would_break = False

    @property
    def herald(self) -> Herald:
        return self.app.herald  # type: ignore[attr-defined,no-any-return]

    def compose(self) -> ComposeResult:
        t = self.template
        title = "New template" if t is None else f"Edit template {t.name!r} (version {t.version})"
        with Vertical(classes="dialog form template-form"):
            yield Static(title, classes="title", markup=False)
            if t is None:
                with Horizontal(classes="field"):
                    yield Label("Name")
                    yield Input(placeholder="deploy", id="name", compact=True)
            with Horizontal(classes="field"):
                yield Label("About")
                yield Input(
                    t.description if t else "",
                    placeholder="what it is for (optional)",
                    id="description",
                    compact=True,
                )
            with Horizontal(classes="field"):
                yield Label("Vars")
                yield Input(
                    variables_field(t.variables) if t else "",
                    placeholder="service:text version:number released:date",
                    id="variables",
                    compact=True,
                )
            with Horizontal(classes="field"):
                yield Label("Subj.")
                yield Input(
                    (t.subject or "") if t else "",
                    placeholder="email subject (optional)",
                    id="subject",
                    compact=True,
                )
            yield Label("Text: Liquid, e.g. Deploy {{ service }} v{{ version }} on {{ date }}")
            yield TextArea(t.body if t else "", id="body", compact=True, soft_wrap=True)
            yield Static("", id="error", markup=False)
            with Horizontal(classes="buttons"):
                yield Button("Save (ctrl+s)", id="save", variant="primary")
                yield Button("Save, keep those (ctrl+o)", id="keep", variant="warning")
                yield Button("Cancel (esc)", id="cancel")

    def on_mount(self) -> None:
        self.query_one("#keep", Button).display = False
        self.query_one("#name" if self.template is None else "#body").focus()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "keep":
            return self.would_break  # only after core named the schedules an edit breaks
        return True

    @on(Button.Pressed, "#save")
    def save_pressed(self) -> None:
        self.action_save()

    @on(Button.Pressed, "#keep")
    def keep_pressed(self) -> None:
        self.action_keep()

    @on(Button.Pressed, "#cancel")
    def action_cancel(self) -> None:
        self.dismiss(None)

    def action_save(self) -> None:
        self._save(force=False)

    def action_keep(self) -> None:
        self._save(force=True)

    def _value(self, selector: str) -> str:
        return self.query_one(selector, Input).value.strip()

    @work(exclusive=True, group="save", exit_on_error=False)
    async def _save(self, *, force: bool) -> None:
        who: Principal = self.app.principal  # type: ignore[attr-defined]
        body = self.query_one("#body", TextArea).text
        variables = parse_variables(self._value("#variables"))
        description = self._value("#description")
        subject = self._value("#subject")
        t = self.template
        try:
            if t is None:
                saved: Edited | Template = await self.herald.add_template(
                    who,
                    self._value("#name"),
                    body,
                    subject=subject or None,
                    variables=variables,
                    description=description,
                )
            else:
                changes: dict[str, Any] = {
                    "body": body if body != t.body else None,
                    "variables": variables if variables != t.variables else None,
                    # an empty subject takes it out
                    "subject": subject if subject != (t.subject or "") else None,
                    "description": description if description != t.description else None,
                }
                if all(v is None for v in changes.values()):
                    self.notify("Nothing changed.")
                    self.dismiss(None)
                    return
                saved = await self.herald.edit_template(
                    who, t.name, expected_version=t.version, force_version=force, **changes
                )
        except HeraldError as exc:
            if isinstance(exc, WouldBreak):
                self._refused(exc.said("ctrl+o"), would_break=True)
            else:
                self._refused(str(exc))
            return
        self.dismiss(saved)

    def _refused(self, why: str, would_break: bool = False) -> None:
        """Core's sentence in the form, nothing saved; for an edit that would break
        schedules, the way to save keeping them on the version they have."""
        self.would_break = self.template is not None and would_break
        keep = self.query_one("#keep", Button)
        keep.display = self.would_break
        if self.would_break and self.template is not None:
            keep.label = f"Save, keep those on v{self.template.version} (ctrl+o)"
        self.query_one("#error", Static).update(f"Not saved: {why}")
        self.refresh_bindings()
