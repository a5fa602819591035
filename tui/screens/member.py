"""A member in detail: how Herald reaches them, in words — their own preferences, the
tenant's defaults and what applies (quiet hours in the member's own zone). Read through
the preferences use case, so a member sees their own and an admin anyone's; anyone else
is told why not. Opened with ``m`` from the lists that name members (the queue's
recipient, a schedule's owner)."""

from __future__ import annotations

from typing import Any

from rich.markup import escape
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Header, Static

from core.errors import HeraldError
from core.preferences import Preferences
from tui.screens.base import ConsoleScreen, footer

#: What a level of preferences that says nothing reads as.
NOT_SET = "not set"


def quiet_words(prefs: Preferences, unset: str = NOT_SET) -> str:
    """``22:00–08:00 and weekends``, or ``unset`` when this level says nothing."""
    return prefs.quiet.describe() if prefs.quiet is not None else unset


def prefs_words(prefs: Preferences) -> str:
    """:meth:`Preferences.describe`, or ``not set`` when this level says nothing."""
    return prefs.describe() if prefs != Preferences() else NOT_SET


def quiet_line(own: Preferences, tenant: Preferences, effective: Preferences, zone: str) -> str:
    """Which quiet hours apply, whose they are, and the zone they are read in."""
    if effective.quiet is None or effective.quiet.empty:
        return "Quiet hours: none (reminders to them are never held)"
    whose = "their own" if own.quiet is not None else "the tenant's default"
    return f"Quiet hours: {effective.quiet.describe()}, {zone} time ({whose})"


class MemberScreen(ConsoleScreen):
    """One member's preferences and quiet hours (read once: no live refresh)."""

    FOCUS = "#member"
    BINDINGS = [Binding("escape,backspace", "back", "Back", id="member-back")]

    def __init__(self, member: str) -> None:
        super().__init__()
        self.member = member

    def compose(self) -> ComposeResult:
        yield Header()
        with VerticalScroll(id="member"):
            yield Static("Reading…", id="member-text")
        yield footer()

    def on_mount(self) -> None:
        self.title = f"Member {self.member}"
        super().on_mount()

    def _tick(self) -> None:
        """Not refreshed live: preferences change by a person's hand, rarely, and a
        refused read is audited (one per look, not one per second)."""

    async def fetch(self) -> Any:
        own = self.member == self.actor_id
        try:
            return await self.herald.preferences(
                self.principal, member=None if own else self.member
            )
        except HeraldError as exc:  # refused, or not a member: say so on the screen
            return str(exc)

    def show(self, data: Any) -> None:
        text = self.query_one("#member-text", Static)
        if isinstance(data, str):
            text.update(f"[b]{escape(self.member)}[/]\n\n{escape(data)}")
            return
        own, tenant, eff = data.own, data.tenant, data.effective
        lines = [
            f"[b]{escape(data.member_id)}[/] · zone {escape(data.zone)}",
            "",
            escape(quiet_line(own, tenant, eff, data.zone)),
            "",
            "Preferences",
            f"  Own:            {escape(prefs_words(own))}",
            f"  Tenant default: {escape(prefs_words(tenant))}",
            f"  Effective:      {escape(eff.describe())}",
            "",
            "Quiet hours",
            f"  Own:            {escape(quiet_words(own))}",
            f"  Tenant default: {escape(quiet_words(tenant))}",
            f"  Effective:      {escape(quiet_words(eff, 'none'))}",
        ]
        if eff.blocked:
            shown = ", ".join(eff.blocked[:10])
            more = f" and {len(eff.blocked) - 10} more" if len(eff.blocked) > 10 else ""
            lines += ["", f"Blocks reminders from: {escape(shown)}{more}"]
        text.update("\n".join(lines))

    def action_back(self) -> None:
        self.dismiss()
