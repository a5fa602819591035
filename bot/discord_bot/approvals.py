"""Approvals on Discord (issue 40, :mod:`core.approvals`): the Approve and Reject
buttons under a request (told to each approver by direct message and to the alert
channel by :mod:`.notices`, and under ``/schedule approvals``), the form asking why a
request is rejected, and the list of requests.

A button's custom_id carries the server the request belongs to and its id
(``herald:approval:approve:<server>:<id>``): a click in a direct message comes with no
server, so the request's server is taken from the button Herald posted; in a server
the click's own server counts (another server's request is then not found). Core
decides who may decide (:meth:`core.cases.Herald.approve`): the server's approvers,
never the author. After a decision the message says who decided, and loses that
request's buttons; a refusal is told to the clicker alone.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import discord
from discord import ui

from bot.discord_bot import render
from bot.discord_bot.interact import NO_MENTIONS, herald_of, member_of, report
from core import approvals, limits, until_done
from core.actors import Principal, Surface, discord_tenant
from core.cases import Herald
from core.models import REJECT_REASON_CHARS
from core.store import ApprovalRow

#: The decisions a button makes.
ACTIONS = ("approve", "reject")
_STYLES = {"approve": discord.ButtonStyle.success, "reject": discord.ButtonStyle.danger}
#: Requests ``/schedule approvals`` shows with their buttons (two each, 25 at most).
LISTED = 10
#: How much of a request's text a list row quotes.
ROW_TEXT = 120


def custom_id(action: str, place: str, approval_id: int) -> str:
    """``herald:approval:<action>:<server>:<id>`` (at most 64 of Discord's 100 characters)."""
    return f"herald:approval:{action}:{place}:{approval_id}"


def place_of(tenant: str) -> str:
    """What a button says of a request's tenant: the server id (``discord:123`` → ``123``)."""
    return tenant.removeprefix("discord:")


def clicker(interaction: discord.Interaction[Any], place: str) -> Principal:
    """Who decides: the clicker, in the click's server, or (a direct message) in the
    server the button names."""
    tenant = (
        discord_tenant(interaction.guild_id, interaction.user.id)
        if interaction.guild_id is not None
        else f"discord:{place}"
    )
    return Principal(f"discord:{interaction.user.id}", tenant, surface=Surface.DISCORD)


def verdict(approve: bool, user_id: int, at: datetime, reason: str | None) -> str:
    """What a request says once decided: "Approved by <@U> at 09:20" (a Discord
    timestamp, read in each reader's own time) or "Rejected by <@U>: reason"."""
    if approve:
        return f"**Approved** by <@{user_id}> at <t:{int(at.timestamp())}:t>"
    said = f": {reason}" if reason else ""
    return f"**Rejected** by <@{user_id}>{said}"


def remaining(message: discord.Message | None, approval_id: int) -> ui.View | None:
    """The buttons left on ``message`` once this request is decided: the others of a
    digest (or a list), each as it was; None when none are left."""
    if message is None:
        return None
    view = ui.View(timeout=None)
    mine = re.compile(rf"herald:approval:[a-z]+:@?[0-9]+:{approval_id}")
    for row in message.components:
        for child in getattr(row, "children", ()):
            cid = getattr(child, "custom_id", None)
            if cid is None or mine.fullmatch(cid) or len(view.children) >= 25:
                continue
            view.add_item(ui.Button(label=child.label, style=child.style, custom_id=cid, row=None))
    return view if view.children else None


async def decide(
    interaction: discord.Interaction[Any],
    approval_id: int,
    place: str,
    *,
    approve: bool,
    reason: str | None = None,
) -> None:
    """Approve or reject request ``approval_id`` for the clicker, then edit the message
    the button is on: who decided, and the buttons of the others only."""
    await interaction.response.defer()
    herald = herald_of(interaction)
    try:
        await member_of(interaction)  # synced, and counted against their commands
        actor = clicker(interaction, place)
        if approve:
            await herald.approve(actor, [approval_id])
        else:
            await herald.reject(actor, [approval_id], reason=reason)
    except Exception as exc:
        await report(interaction, exc)
        return
    message = interaction.message
    said = verdict(
        approve, interaction.user.id, herald.clock.now(), " ".join((reason or "").split())
    )
    view = remaining(message, approval_id)
    original = message.content if message is not None else ""
    if view is not None:  # a digest: say which one
        said = f"Request {approval_id}: {said}"
    await interaction.edit_original_response(
        content=with_verdict(original, said), view=view, allowed_mentions=NO_MENTIONS
    )


def with_verdict(original: str, said: str) -> str:
    """The message once decided: its text (cut if need be) and the verdict, whole."""
    if not original:
        return render.fit(said)
    room = render.MAX_MESSAGE - len(said) - 1
    kept = original if len(original) <= room else original[: room - 1] + "…"
    return f"{kept}\n{said}"


class ApprovalButton(
    ui.DynamicItem[ui.Button[Any]],
    template=r"herald:approval:(?P<action>approve|reject):(?P<place>@?[0-9]{1,20}):(?P<id>[0-9]{1,19})",
):
    """Approve or Reject under a request; Reject asks why first (:class:`RejectForm`)."""

    def __init__(self, action: str, place: str, approval_id: int, which: str = "") -> None:
        super().__init__(
            ui.Button(
                label=action.capitalize() + which,
                style=_STYLES[action],
                custom_id=custom_id(action, place, approval_id),
            )
        )
        self.action = action
        self.place = place
        self.approval_id = approval_id

    @classmethod
    async def from_custom_id(
        cls, interaction: discord.Interaction[Any], item: ui.Item[Any], match: re.Match[str], /
    ) -> ApprovalButton:
        return cls(match["action"], match["place"], int(match["id"]))

    async def callback(self, interaction: discord.Interaction[Any]) -> None:
        if self.action == "approve":
            await decide(interaction, self.approval_id, self.place, approve=True)
        else:
            await interaction.response.send_modal(RejectForm(self.approval_id, self.place))


def buttons(place: str, approval_id: int, which: str = "") -> list[ApprovalButton]:
    """Approve and Reject for one request (``which``: " #5" when there are several)."""
    return [ApprovalButton(action, place, approval_id, which) for action in ACTIONS]


class RejectForm(ui.Modal):
    """Why a request is rejected (optional; its author reads it)."""

    def __init__(self, approval_id: int, place: str) -> None:
        super().__init__(
            title=limits.clip(f"Reject request {approval_id}", limits.DISCORD_MODAL_TITLE),
            custom_id=f"herald:approval:form:{place}:{approval_id}",
            timeout=3600,
        )
        self.approval_id = approval_id
        self.place = place
        self.reason: ui.TextInput[Any] = ui.TextInput(
            custom_id="reason",
            style=discord.TextStyle.paragraph,
            required=False,
            max_length=REJECT_REASON_CHARS,
            placeholder="What should change (the author reads it)",
        )
        self.add_item(ui.Label(text="Reason", component=self.reason))

    async def on_submit(self, interaction: discord.Interaction[Any], /) -> None:
        reason = self.reason.value.strip() or None
        await decide(interaction, self.approval_id, self.place, approve=False, reason=reason)

    async def on_error(  # type: ignore[override]  # Modal's own signature
        self, interaction: discord.Interaction[Any], error: Exception, /
    ) -> None:
        await report(interaction, error)


# --- /schedule approvals -----------------------------------------------------------------


def row_text(row: ApprovalRow) -> str:
    """One request in a list: its id, who asks, where, when, why, and its text."""
    where = render.mention(row.destination) if row.destination else "its destination"
    when = f" ({render.clip(row.expression, 40)})" if row.expression else ""
    what = f"retry dead letter {row.job_id}" if row.kind == "retry" else "send"
    text = render.clip(row.body or "", ROW_TEXT)
    return (
        f"**#{row.id}** · {until_done.mention(row.requested_by)} asks to {what} to {where}{when} · "
        f"{render.clip(render.said(row.why), 100)}\n> {text}"
    )


def listing(rows: Sequence[ApprovalRow], *, deciding: bool) -> str:
    """``/schedule approvals``: the pending requests, oldest first, at most
    :data:`LISTED`; ``deciding``: the viewer decides them (else: their own)."""
    if not rows:
        return "No request waits for a decision." if deciding else "None of your requests waits."
    head = "**Waiting for approval**" if deciding else "**Your requests waiting for approval**"
    shown = [row_text(r) for r in rows[:LISTED]]
    more = (
        [f"-# …and {len(rows) - LISTED} more (`herald approvals list`)."]
        if len(rows) > LISTED
        else []
    )
    return render.fit("\n".join([f"{head} ({len(rows)}):", *shown, *more]))


async def pending(herald: Herald, actor: Principal) -> tuple[str, ui.View | None]:
    """``/schedule approvals``: the text, and for an approver Approve and Reject under
    each request someone else made."""
    rows = await herald.approvals(actor)
    member = await herald.actor(actor)
    deciding = approvals.is_approver(member, herald.settings) or member.sees_everything
    view = ui.View(timeout=None)
    if deciding:
        theirs = [r for r in rows[:LISTED] if r.requested_by != member.id]
        for row in theirs:
            which = f" #{row.id}" if len(theirs) > 1 else ""
            for button in buttons(place_of(row.tenant), row.id, which):
                view.add_item(button)
    return listing(rows, deciding=deciding), view if view.children else None
