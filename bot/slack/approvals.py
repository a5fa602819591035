"""Approvals in Slack (issue 40): what an approver is shown of a held message, with
Approve and Reject; the Reject modal asking why; what a decision leaves on the
message; ``/schedule approvals``; and the reply that tells an author their message
waits.

Every payload is built with slack_sdk's Block Kit models, so a block Slack would
answer ``invalid_blocks`` for fails here (``to_dict()`` validates):
https://api.slack.com/reference/block-kit/blocks#actions,
https://api.slack.com/reference/block-kit/block-elements#button,
https://api.slack.com/reference/block-kit/blocks#input,
https://api.slack.com/surfaces/modals#composing_views.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from slack_sdk.models.blocks import (
    ActionsBlock,
    ButtonElement,
    ContextBlock,
    InputBlock,
    MarkdownTextObject,
    PlainTextInputElement,
    SectionBlock,
)
from slack_sdk.models.views import View

from bot.slack.blocks import Blocks, Reply, clip, notice, quote, section, where
from bot.slack.words import escape
from core import limits
from core.errors import InvalidInput
from core.models import REJECT_REASON_CHARS
from core.store import ApprovalRow
from core.tenancy import neutralize_mentions

APPROVE = "herald_approval_approve"
REJECT = "herald_approval_reject"
ACTIONS = (APPROVE, REJECT)
#: The Reject modal's callback id and its reason field.
REJECT_CALLBACK = "herald_approval_reject"
REASON = "reason"
#: The block id of a request's buttons: ``approval:<id>``.
BLOCK_PREFIX = "approval:"
#: Requests ``/schedule approvals`` shows at most (a divider, a section and buttons
#: each: 15 * 3 + 1 within a message's 50 blocks).
LISTED = 15
#: What the author reads when their message is held.
HELD = "Held for approval: {why}. Nothing is sent until an approver approves it."


def approval_buttons(approval_id: int) -> dict[str, Any]:
    """Approve and Reject for one request, carrying its id."""
    value = str(approval_id)
    block = ActionsBlock(
        block_id=f"{BLOCK_PREFIX}{approval_id}",
        elements=[
            ButtonElement(text="Approve", action_id=APPROVE, value=value, style="primary"),
            ButtonElement(text="Reject", action_id=REJECT, value=value, style="danger"),
        ],
    )
    return block.to_dict()


def request_blocks(text: str, approval_id: int | None) -> Blocks:
    """One request as core wrote it (a whole sentence, its broadcast mentions already
    shown as text), with its buttons when it has an id."""
    blocks: Blocks = [SectionBlock(text=MarkdownTextObject(text=clip(text))).to_dict()]
    if approval_id is not None:
        blocks.append(approval_buttons(approval_id))
    return blocks


def decided(original: Blocks, approval_id: int, outcome: str) -> Blocks:
    """The message once request ``approval_id`` is decided: its buttons replaced by
    who decided (other requests in the same message keep theirs)."""
    block_id = f"{BLOCK_PREFIX}{approval_id}"
    said = ContextBlock(elements=[MarkdownTextObject(text=clip(outcome))]).to_dict()
    kept = [said if b.get("block_id") == block_id else b for b in original]
    return kept if said in kept else [*kept, said]


def outcome(approved: bool, user_id: str, at: datetime, zone: str, reason: str | None) -> str:
    """``Approved by <@U1> at 09:20`` / ``Rejected by <@U1>: too loud``."""
    if approved:
        local = at.astimezone(ZoneInfo(zone))
        return f":white_check_mark: Approved by <@{user_id}> at {local:%H:%M}"
    because = f": {escape(reason)}" if reason else "."
    return f":no_entry_sign: Rejected by <@{user_id}>{because}"


def reject_modal(approval_id: int, place: dict[str, Any]) -> dict[str, Any]:
    """The modal asking why a request is rejected; ``place`` (the clicked message's
    channel, ts, response_url and blocks when they fit) rides in its private_metadata
    so the submission can update that message."""
    meta = json.dumps({"id": approval_id, **place}, separators=(",", ":"))
    if len(meta) > limits.SLACK_PRIVATE_METADATA.size:
        meta = json.dumps(
            {"id": approval_id, **{k: v for k, v in place.items() if k != "blocks"}},
            separators=(",", ":"),
        )
    view = View(
        type="modal",
        callback_id=REJECT_CALLBACK,
        title="Reject request",
        submit="Reject",
        close="Cancel",
        private_metadata=meta,
        blocks=[
            SectionBlock(
                text=MarkdownTextObject(
                    text=f"Request {approval_id} will be rejected and its message not sent. "
                    "Its author reads your reason."
                )
            ),
            InputBlock(
                block_id=REASON,
                label="Why",
                element=PlainTextInputElement(
                    action_id=REASON, multiline=True, max_length=REJECT_REASON_CHARS
                ),
            ),
        ],
    )
    return view.to_dict()


def read_reject(view: dict[str, Any]) -> tuple[int, str, dict[str, Any]]:
    """The request id, the reason typed and the clicked message's place from a Reject
    modal's submission. InvalidInput when its metadata is not Herald's."""
    try:
        meta = json.loads(view.get("private_metadata") or "")
        approval_id = int(meta.pop("id"))
    except (ValueError, TypeError, KeyError, AttributeError):
        raise InvalidInput("This form carries no request number.") from None
    values = (view.get("state") or {}).get("values") or {}
    reason = str(((values.get(REASON) or {}).get(REASON) or {}).get("value") or "")
    return approval_id, reason, meta


def held_reply(reply: Reply, why: str) -> Reply:
    """A create's or an edit's reply for a message held for approval: the headline says
    it waits, and why."""
    text, blocks = reply
    said = HELD.format(why=escape(why))
    return f":hourglass: {said}", [section(f":hourglass: {said}"), *blocks[1:]]


def list_reply(rows: list[ApprovalRow], *, approver: bool, me: str) -> Reply:
    """``/schedule approvals``: each pending request with Approve and Reject for an
    approver (none on their own), or a member's own requests."""
    if not rows:
        return notice("No request waits for an approver.")
    shown = rows[:LISTED]
    more = f" (the first {LISTED})" if len(rows) > LISTED else ""
    blocks: Blocks = [section(f"*Requests waiting for an approver*: {len(rows)}{more}")]
    for row in shown:
        to = where(row.destination) if row.destination else "its destination"
        line = (
            f"*{row.id}* · <@{row.requested_by.partition(':')[2]}> asks to send to {to}"
            + (f" ({escape(row.expression)})" if row.expression else "")
            + f": {escape(row.why)}"
        )
        if row.kind != "send":
            line = f"*{row.id}* · a retry of dead letter {row.job_id}: {escape(row.why)}"
        blocks.append({"type": "divider"})
        body = neutralize_mentions(row.body)
        blocks.append(section(line + ("\n" + quote(body, 200) if body else "")))
        if approver and row.requested_by != me:
            blocks.append(approval_buttons(row.id))
    return f"Requests waiting for an approver: {len(rows)}", blocks
