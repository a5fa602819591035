"""Dead letters in Slack: alerts posted to ``HERALD_SLACK_ALERT_CHANNEL`` with Retry and
Discard buttons (one message per letter, or a digest when many die at once), and the
message an admin's decision leaves behind."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from bot.slack.blocks import Blocks, button, context, quote, section, where
from bot.slack.grammar import escape
from core import limits, verbs
from core.store import DeadLetter, Settled

log = logging.getLogger(__name__)


def action_id(v: verbs.Verb) -> str:
    """A dead-letter button's action id: ``herald_dead_retry``."""
    return f"herald_dead_{v.name}"


#: The alerts' buttons, an admin's decision: the verbs on dead letters that Slack offers
#: (core/verbs.py), by action id.
DECISIONS = {action_id(v): v for v in verbs.offered(verbs.SLACK, verbs.DECISIONS)}
#: How a decision's button looks (a style and a question first); others are plain.
_LOOKS: dict[str, tuple[str | None, str | None]] = {
    "retry": ("primary", None),
    "discard": ("danger", "The message will not be sent. This cannot be undone."),
}
#: From this many letters in one burst, one digest message instead of one each.
DIGEST_FROM = 4
#: Job ids one digest's buttons carry at most (their comma-separated list must also
#: fit a button's value: Slack allows 2,000 characters there).
DIGEST_IDS = 150
DIGEST_LINES = 10
ERROR_CHARS = 300

Post = Callable[[str, Blocks], Awaitable[None]]


@dataclass(frozen=True)
class Letter:
    """What an alert shows of one dead letter."""

    job_id: int
    schedule_id: int
    destination: str
    attempts: int
    error: str
    body: str
    #: Where its retry stands (``asked by …``, ``rejected by …: why``), in lists.
    retry: str = ""

    @classmethod
    def from_finished(cls, item: Settled) -> Letter:
        error = item.error or (item.attempt.error if item.attempt else None) or "unknown error"
        job = item.job
        attempts = job.attempts - (1 if item.refund_attempt else 0)
        return cls(job.id, job.schedule_id, job.destination, attempts, error, job.body)

    @classmethod
    def from_dead(cls, letter: DeadLetter) -> Letter:
        error = letter.last_error or "unknown error"
        return cls(
            letter.job_id,
            letter.schedule_id,
            letter.destination,
            letter.attempts,
            error,
            letter.body,
            letter.retry_note or "",
        )


def decision_buttons(job_ids: Sequence[int], *, many: bool = False) -> dict[str, Any]:
    value = ",".join(str(j) for j in job_ids)
    if len(value) > limits.SLACK_BUTTON_VALUE.size:  # digest_chunks keeps them within
        raise ValueError(limits.SLACK_BUTTON_VALUE.sentence(len(value), "these job ids have"))
    suffix = " all" if many else ""
    return {
        "type": "actions",
        "block_id": f"dead:{job_ids[0]}",
        "elements": [
            button(f"{v.label}{suffix}", name, value, style=style, confirm=confirm)
            for name, v in DECISIONS.items()
            for style, confirm in [_LOOKS.get(v.name, (None, None))]
        ],
    }


def letter_blocks(letter: Letter, *, buttons: bool = True) -> Blocks:
    """One dead letter: what failed, where, why; with Retry and Discard."""
    attempts = f"{letter.attempts} attempt{'s' if letter.attempts != 1 else ''}"
    blocks: Blocks = [
        section(
            f":rotating_light: *Dead letter {letter.job_id}*: schedule #{letter.schedule_id} "
            f"to {where(letter.destination)} failed after {attempts}.\n"
            f"*Error:* {escape(letter.error[:ERROR_CHARS])}\n{quote(letter.body, 200)}"
        )
    ]
    if letter.retry:
        blocks.append(context(f"Retry {escape(letter.retry)}"))
    if buttons:
        blocks.append(decision_buttons([letter.job_id]))
    return blocks


def digest_blocks(letters: Sequence[Letter]) -> Blocks:
    """Many dead letters at once: the first few, and Retry all / Discard all."""
    lines = [
        f"• *{x.job_id}* (schedule #{x.schedule_id}) to {where(x.destination)}: "
        f"{escape(x.error[:120])}"
        for x in letters[:DIGEST_LINES]
    ]
    if len(letters) > DIGEST_LINES:
        lines.append(f"…and {len(letters) - DIGEST_LINES} more.")
    return [
        section(
            f":rotating_light: *{len(letters)} messages could not be delivered.*\n"
            + "\n".join(lines)
        ),
        decision_buttons([x.job_id for x in letters], many=True),
    ]


def digest_chunks(letters: Sequence[Letter]) -> list[list[Letter]]:
    """``letters`` in digests of at most DIGEST_IDS whose ids, comma-separated, fit
    one button's value."""
    chunks: list[list[Letter]] = []
    size = 0
    for letter in letters:
        width = len(str(letter.job_id))
        current = chunks[-1] if chunks else None
        if (
            current is None
            or len(current) >= DIGEST_IDS
            or size + 1 + width > limits.SLACK_BUTTON_VALUE.size
        ):
            chunks.append([letter])
            size = width
        else:
            current.append(letter)
            size += 1 + width
    return chunks


def decided(original: Blocks, outcome: str) -> Blocks:
    """The alert once decided: its content without the buttons, and who decided."""
    kept = [b for b in original if b.get("type") != "actions"]
    return [*kept, context(outcome)]


class DeadLetterAlerts:
    """Collects dead letters for ``window`` seconds, then posts them with ``post``.

    ``add`` never blocks (it is called from the dispatcher's outcome observer)."""

    def __init__(
        self,
        post: Post,
        *,
        window: float = 1.0,
        keep: Callable[[list[int]], Awaitable[set[int]]] | None = None,
    ) -> None:
        self.post = post
        self.window = window
        #: Which of these job ids this channel may hear of (its own tenant's).
        self.keep = keep
        self._pending: list[Letter] = []
        self._task: asyncio.Task[None] | None = None

    def add(self, item: Settled) -> None:
        self._pending.append(Letter.from_finished(item))
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(
                self._later(), name="herald-slack-dead-letters"
            )

    async def _later(self) -> None:
        await asyncio.sleep(self.window)
        await self.flush()

    async def flush(self) -> None:
        """Post what is pending now."""
        letters, self._pending = self._pending, []
        if letters and self.keep is not None:
            try:
                mine = await self.keep([x.job_id for x in letters])
            except Exception:  # never guess: what cannot be checked is not posted
                log.exception("could not check the tenant of dead letters")
                mine = set()
            letters = [x for x in letters if x.job_id in mine]
        if not letters:
            return
        if len(letters) < DIGEST_FROM:
            messages = [
                (f"Dead letter {x.job_id}: {x.error[:200]}", letter_blocks(x)) for x in letters
            ]
        else:
            messages = [
                (f"{len(chunk)} messages could not be delivered", digest_blocks(chunk))
                for chunk in digest_chunks(letters)
            ]
        for text, blocks in messages:
            try:
                await self.post(text, blocks)
            except Exception:  # an alert must never take the adapter down
                log.exception("could not post a dead-letter alert to slack")

    async def close(self) -> None:
        """Post what is pending and stop."""
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        await self.flush()
