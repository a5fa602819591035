"""One line of input before an action (a duration to shift by, a reason to reject)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static


class PromptScreen(ModalScreen[str | None]):
    """Enter answers with the text, Escape answers None. With ``required`` (a sentence
    saying why an answer is needed), Enter on an empty line says it and waits."""

    BINDINGS = [Binding("escape", "cancel", "Cancel", id="prompt-cancel")]

    def __init__(self, question: str, placeholder: str = "", *, required: str = "") -> None:
        super().__init__()
        self.question = question
        self.placeholder = placeholder
        self.required = required

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Static(self.question, id="question", markup=False)
            yield Input(placeholder=self.placeholder, id="answer")
            yield Static("", id="hint", classes="hint")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        answer = event.value.strip()
        if not answer and self.required:
            self.query_one("#hint", Static).update(self.required)
            return
        self.dismiss(answer or None)

    def action_cancel(self) -> None:
        self.dismiss(None)
