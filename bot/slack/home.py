"""The App Home tab: the member's upcoming schedules with their next times and buttons;
for operators and admins, a summary of the queue and the newest dead letters."""

from __future__ import annotations

from typing import Any

from bot.slack.blocks import Blocks, button, context, schedule_blocks, section
from bot.slack.dead import Letter, letter_blocks
from core import limits
from core.cases import Overview
from core.models import Schedule
from core.store import DeadLetter

#: Schedules and dead letters shown: 3 blocks a schedule, 2 a letter, with the header,
#: buttons and notes, stay well inside Slack's 100 blocks of a Home tab.
HOME_LIMIT = 20
DEAD_LIMIT = 5


def home_view(
    schedules: list[Schedule],
    *,
    zone: str,
    overview: Overview | None = None,
    dead: list[DeadLetter] | None = None,
    admin: bool = False,
    notice: str | None = None,
) -> dict[str, Any]:
    """The Home tab view for ``views.publish``."""
    blocks: Blocks = [
        {"type": "header", "text": {"type": "plain_text", "text": "Your scheduled messages"}},
        {
            "type": "actions",
            "block_id": "home:new",
            "elements": [button("Schedule a message", "herald_open_modal", "new", style="primary")],
        },
        context(f"Times are read in {zone}. Type `/schedule help` in any channel for the grammar."),
    ]
    if notice:
        blocks.insert(1, section(notice))
    if not schedules:
        blocks.append(section("Nothing scheduled yet."))
    for schedule in schedules[:HOME_LIMIT]:
        blocks.append({"type": "divider"})
        blocks.extend(schedule_blocks(schedule, full=True))
    if len(schedules) > HOME_LIMIT:
        blocks.append(context(f"…and {len(schedules) - HOME_LIMIT} more: `/schedule list`."))
    if overview is not None:
        blocks.extend(_operations(overview, dead or [], admin=admin))
    if len(blocks) > limits.SLACK_HOME_BLOCKS.size:  # HOME_LIMIT and DEAD_LIMIT forbid it
        raise ValueError(limits.SLACK_HOME_BLOCKS.sentence(len(blocks), "this Home tab has"))
    return {"type": "home", "blocks": blocks}


def _operations(overview: Overview, dead: list[DeadLetter], *, admin: bool) -> Blocks:
    counts = overview.counts
    figures = overview.figures
    waiting = counts.get("pending", 0) + counts.get("retrying", 0)
    lines = [
        f"Waiting *{waiting}* (retrying {counts.get('retrying', 0)}), "
        f"in flight *{counts.get('claimed', 0)}*, due in the next hour *{figures.due_next_hour}*",
        f"Finished in the last hour *{figures.finished_last_hour}*, delivered on the first "
        f"try *{figures.first_try_ok}*",
        f"Dead letters *{figures.dead}* ({figures.dead_requested} with a retry request)",
    ]
    if figures.oldest_overdue is not None:
        job_id, due = figures.oldest_overdue
        late = int((overview.now - due).total_seconds())
        lines.append(f"Oldest overdue job *{job_id}*, {late} s late")
    blocks: Blocks = [
        {"type": "divider"},
        {"type": "header", "text": {"type": "plain_text", "text": "Operations"}},
        section("\n".join(lines)),
    ]
    for letter in dead[:DEAD_LIMIT]:
        blocks.extend(letter_blocks(Letter.from_dead(letter), buttons=admin))
    return blocks
