"""Create or edit a schedule: a form with a live preview of how the time reads."""

from __future__ import annotations

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static, TextArea

from core import calendars
from core.actors import Principal
from core.errors import HeraldError
from core.models import Schedule
from core.usecases import Herald
from core.zones import resolve_zone
from tui.format import stamp

PREVIEW_COUNT = 3


def preview(
    herald: Herald, when: str, tz: str, *, kept: str | None = None, actor: str | None = None
) -> str:
    """How ``when`` reads in ``tz`` and its next occurrences (or why it cannot be read).
    ``tz`` is read as a person names a zone (a city...), unless it is ``kept``, the zone
    already chosen; ``actor``'s tenant sets the time of a rule that names none."""
    if not when.strip():
        return "Say when: e.g. tomorrow at 9am, every weekday at 9:30, in 20 minutes."
    try:
        zone = tz if tz == kept else resolve_zone(tz).key
        when, urls = calendars.split_skip_phrase(when)
        reading = herald.read_when(when, zone, actor=actor)
        upcoming = reading.occurrences(PREVIEW_COUNT)
    except HeraldError as exc:
        return f"[red]{exc}[/]"
    times = ", ".join(stamp(t, reading.timezone, seconds=False) for t in upcoming)
    skips = f" · skips the dates of {len(urls)} calendar(s) (read when you save)" if urls else ""
    return f"[b]{reading.read_back}[/] · next: {times}{skips}"


class ScheduleFormScreen(ModalScreen[Schedule | None]):
    """``schedule`` None creates a new one; otherwise edits it (with its version)."""

    BINDINGS = [
        Binding("ctrl+s", "save", "Save", id="form-save"),
        Binding("escape", "cancel", "Cancel", id="form-cancel"),
    ]

    def __init__(self, schedule: Schedule | None) -> None:
        super().__init__()
        self.schedule = schedule

    @property
    def herald(self) -> Herald:
        return self.app.herald  # type: ignore[attr-defined,no-any-return]

    def default_zone(self) -> str:
        if self.schedule is not None:
            return self.schedule.timezone
        actor = getattr(self.app, "actor", None)
        zone = actor.timezone if actor is not None else None
        return zone or str(self.app.settings.default_tz)  # type: ignore[attr-defined]

    def compose(self) -> ComposeResult:
        s = self.schedule
        title = "New schedule" if s is None else f"Edit schedule {s.id} (version {s.version})"
        with Vertical(classes="dialog form"):
            yield Static(f"[b]{title}[/]")
            with Horizontal(classes="field"):
                yield Label("To")
                yield Input(
                    s.destination if s else "",
                    placeholder="slack:C0123, webhook:https://…",
                    id="to",
                    compact=True,
                )
            with Horizontal(classes="field"):
                yield Label("When")
                yield Input(
                    s.expression if s else "",
                    placeholder="every weekday at 9am",
                    id="when",
                    compact=True,
                )
            with Horizontal(classes="field"):
                yield Label("Zone")
                yield Input(self.default_zone(), id="tz", compact=True)
            yield Static("", id="preview")
            yield Label("Text")
            yield TextArea(s.body if s else "", id="text", compact=True, soft_wrap=True)
            yield Static("", id="error")
            with Horizontal(classes="buttons"):
                yield Button("Save (ctrl+s)", id="save", variant="primary")
                yield Button("Cancel (esc)", id="cancel")

    def on_mount(self) -> None:
        self.query_one("#to" if self.schedule is None else "#when", Input).focus()
        self.update_preview()

    @on(Input.Changed, "#when,#tz")
    def update_preview(self) -> None:
        self._preview(self.query_one("#when", Input).value, self.query_one("#tz", Input).value)

    @work(thread=True, exclusive=True, group="preview", exit_on_error=False)
    def _preview(self, when: str, tz: str) -> None:
        kept = self.default_zone()
        actor = getattr(self.app, "actor_id", None)
        text = preview(self.herald, when, tz.strip() or kept, kept=kept, actor=actor)
        self.app.call_from_thread(self.query_one("#preview", Static).update, text)

    @on(Input.Submitted)
    def submitted(self) -> None:
        self.action_save()

    @on(Button.Pressed, "#save")
    def save_pressed(self) -> None:
        self.action_save()

    @on(Button.Pressed, "#cancel")
    def action_cancel(self) -> None:
        self.dismiss(None)

    def action_save(self) -> None:
        self._save(
            self.query_one("#to", Input).value.strip(),
            self.query_one("#when", Input).value.strip(),
            self.query_one("#tz", Input).value.strip() or None,
            self.query_one("#text", TextArea).text,
        )

    @work(exclusive=True, group="save", exit_on_error=False)
    async def _save(self, to: str, when: str, tz: str | None, text: str) -> None:
        who: Principal = self.app.principal  # type: ignore[attr-defined]
        error = self.query_one("#error", Static)
        try:
            s = self.schedule
            if s is None or s.id is None:
                saved, _ = await self.herald.create_schedule(
                    who, to=to, when=when, text=text, tz=tz
                )
                self.notify(f"Created schedule {saved.id}.", title="Done")
            else:
                changed_when = when != s.expression or (tz or s.timezone) != s.timezone
                if not changed_when and text == s.body and to == s.destination:
                    self.notify("Nothing changed.")
                    self.dismiss(None)
                    return
                saved = await self.herald.edit_schedule(
                    who,
                    s.id,
                    when=when if changed_when else None,
                    tz=tz if changed_when else None,
                    text=text if text != s.body else None,
                    to=to if to != s.destination else None,
                    expected_version=s.version,
                )
                self.notify(f"Saved schedule {saved.id} (version {saved.version}).", title="Done")
        except HeraldError as exc:
            error.update(f"[red]{exc}[/]")
            return
        self.dismiss(saved)
