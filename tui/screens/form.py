"""Create or edit a schedule: a form with a live preview of how the time reads. A
save's warnings (the same text already due there, a crowded destination) follow it as
notifications."""

from __future__ import annotations

from typing import Any

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static, TextArea

from core import views
from core.actors import ActorRef, Principal
from core.cases import Herald
from core.errors import HeraldError
from core.models import Schedule
from tui.format import stamp

PREVIEW_COUNT = 3
#: A save's warnings (core.cases.channel_view.SaveWarning), titled by kind.
WARNINGS = {"duplicate": "Already scheduled", "congestion": "Crowded"}
#: How long a save's warning stays on screen (the form has closed: it is read after).
WARNING_SECONDS = 20.0


def recipients_field(schedule: Schedule) -> str:
    """A schedule's recipients as the form's To field writes them: "slack:C1,
    slack:C2, slack:@U1 or email:a@example.com" (a chain's steps joined by "or")."""
    return ", ".join(" or ".join(r.to) for r in views.recipients_of(schedule))


def parse_recipients(text: str) -> list[str | dict[str, list[str]]]:
    """The To field read back: destinations separated by spaces or commas, "or"
    joining a chain's steps (a fallback), as the use cases take ``to``."""
    chains: list[list[str]] = []
    joined = False
    for word in text.replace(", ", " ").split():
        word = word.removesuffix(",")
        if word == "or" and chains:
            joined = True
        elif word:
            if joined:
                chains[-1].append(word)
            else:
                chains.append([word])
            joined = False
    return [c[0] if len(c) == 1 else {"first_of": c} for c in chains]


async def preview(herald: Herald, when: str, tz: str, *, actor: ActorRef) -> str:
    """How ``when`` reads for ``actor`` in ``tz`` (the form's zone, sent as the save
    sends it) and its next occurrences, or why it cannot be read: the use case every
    surface's preview is (:meth:`core.cases.Herald.preview_when`)."""
    if not when.strip():
        return "Say when: e.g. tomorrow at 9am, every weekday at 9:30, in 20 minutes."
    try:
        read = await herald.preview_when(
            actor, when, tz=tz or None, count=PREVIEW_COUNT, read_calendars=False
        )
    except HeraldError as exc:
        return f"[red]{exc}[/]"
    times = ", ".join(stamp(t, read.zone, seconds=False) for t in read.occurrences)
    skips = ""
    if read.calendars:
        skips = f" · skips the dates of {len(read.calendars)} calendar(s) (read when you save)"
    return f"[b]{read.reading.read_back}[/] · next: {times} ({read.zone}){skips}"


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
                    recipients_field(s) if s else "",
                    placeholder="slack:C0123, slack:@U1 or email:a@example.com, webhook:https://…",
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

    @work(exclusive=True, group="preview", exit_on_error=False)
    async def _preview(self, when: str, tz: str) -> None:
        who: Principal = self.app.principal  # type: ignore[attr-defined]
        kept = self.schedule.timezone if self.schedule is not None else ""  # an edit keeps it
        text = await preview(self.herald, when, tz.strip() or kept, actor=who)
        self.query_one("#preview", Static).update(text)

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
    async def _save(self, field: str, when: str, tz: str | None, text: str) -> None:
        who: Principal = self.app.principal  # type: ignore[attr-defined]
        error = self.query_one("#error", Static)
        wanted = parse_recipients(field)
        # one destination, or the list (create_schedule's annotation still says str)
        to: Any = wanted
        if len(wanted) == 1 and isinstance(wanted[0], str):
            to = wanted[0]
        elif not wanted:
            to = field
        try:
            s = self.schedule
            if s is None or s.id is None:
                saved, _ = await self.herald.create_schedule(
                    who, to=to, when=when, text=text, tz=tz
                )
                self.notify(f"Created schedule {saved.id}.", title="Done")
            else:
                changed_when = when != s.expression or (tz or s.timezone) != s.timezone
                # the same recipients: kept as they are (their zones and time limits too)
                same_to = parse_recipients(recipients_field(s)) == wanted
                if not changed_when and text == s.body and same_to:
                    self.notify("Nothing changed.")
                    self.dismiss(None)
                    return
                saved = await self.herald.edit_schedule(
                    who,
                    s.id,
                    when=when if changed_when else None,
                    tz=tz if changed_when else None,
                    text=text if text != s.body else None,
                    to=None if same_to else to,
                    expected_version=s.version,
                )
                self.notify(f"Saved schedule {saved.id} (version {saved.version}).", title="Done")
        except HeraldError as exc:
            error.update(f"[red]{exc}[/]")
            return
        self.warn(saved)
        self.dismiss(saved)

    def warn(self, saved: Schedule) -> None:
        """What the save found worth a warning (core.views.warnings_of): the same text
        already scheduled there at about the same time, a destination so crowded the
        message would wait. Each a notification that stays a while (the form closes)."""
        for found in views.warnings_of(saved):
            self.notify(
                found.plain,
                title=WARNINGS.get(found.kind, "Warning"),
                severity="warning",
                timeout=WARNING_SECONDS,
                markup=False,
            )
