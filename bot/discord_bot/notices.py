"""Authors told of their failures on Discord (issue 38; the sweeping is
:mod:`bot.notices`'): a direct message per author, mentions escaped and none allowed,
with buttons: Request retry (a dead letter: the member's request an admin decides on),
Resume (a schedule the system paused) and Edit (which answers with the command to run
in the server: the edit form acts in the server's tenant, a direct message has none).

A button's custom_id carries the tenant the schedule belongs to (``herald:notice:retry:
<server>:<job id>``): a click in a direct message comes with no server, and core then
checks that the clicker owns the job or schedule there.

A request for approval (issue 40) carries Approve and Reject (:mod:`.approvals`); the
one meant for the alert channel (owner ``discord:#alert``) is posted there, when the
channel belongs to the request's server (another server's requests are not shown)."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Collection
from typing import Any

import discord
import discord.utils
from discord import ui

from bot.discord_bot import actions, approvals, render
from bot.discord_bot.components import update
from bot.discord_bot.interact import herald_of
from bot.discord_bot.skips import MESSAGE_CHARS, owner_here
from bot.notices import NoticeSweeper, Unreachable, message
from bot.skip_notices import MAX_LINES
from core.actors import Principal, Surface
from core.cases import AuthorNotices, Herald
from core.events import ALERT_OWNER, NoticeKind

#: Buttons one message carries at most (Discord: five rows of five).
MOST_BUTTONS = 25
_LABELS = {"retry": "Request retry", "resume": "Resume", "edit": "Edit"}
_STYLES = {"retry": discord.ButtonStyle.primary, "resume": discord.ButtonStyle.primary}


def notice_view(group: AuthorNotices) -> ui.View | None:
    """The buttons of one author's notices (numbered in a digest), or None."""
    place = group.tenant.removeprefix("discord:")
    many = len(group.lines) > 1
    view = ui.View(timeout=None)
    for line in group.lines[:MAX_LINES]:
        wanted = []
        if line.retryable and line.job_id is not None:
            wanted.append(("retry", line.job_id, f" job {line.job_id}"))
        if line.resumable and line.schedule_id is not None:
            wanted.append(("resume", line.schedule_id, f" #{line.schedule_id}"))
        if line.editable and line.schedule_id is not None:
            wanted.append(("edit", line.schedule_id, f" #{line.schedule_id}"))
        for action, target, which in wanted:
            if len(view.children) < MOST_BUTTONS:
                view.add_item(NoticeButton(action, place, target, which if many else ""))
        if line.approval_id is not None and len(view.children) + 2 <= MOST_BUTTONS:
            which = f" #{line.approval_id}" if many else ""
            for button in approvals.buttons(place, line.approval_id, which):
                view.add_item(button)
    return view if view.children else None


class NoticeButton(
    ui.DynamicItem[ui.Button[Any]],
    template=(
        r"herald:notice:(?P<action>retry|resume|edit):(?P<place>@?[0-9]{1,20})"
        r":(?P<id>[0-9]{1,19})"
    ),
):
    """A button under a failure notice in the author's direct messages."""

    def __init__(self, action: str, place: str, target: int, which: str = "") -> None:
        super().__init__(
            ui.Button(
                label=_LABELS[action] + which,
                style=_STYLES.get(action, discord.ButtonStyle.secondary),
                custom_id=f"herald:notice:{action}:{place}:{target}",
            )
        )
        self.action = action
        self.place = place
        self.target = target

    @classmethod
    async def from_custom_id(
        cls, interaction: discord.Interaction[Any], item: ui.Item[Any], match: re.Match[str], /
    ) -> NoticeButton:
        return cls(match["action"], match["place"], int(match["id"]))

    async def callback(self, interaction: discord.Interaction[Any]) -> None:
        herald = herald_of(interaction)
        original = interaction.message.content if interaction.message else ""
        actor = Principal(
            actions.actor_id(interaction.user.id),
            f"discord:{self.place}",
            surface=Surface.DISCORD,
        )

        async def work(_: Principal) -> actions.Reply:
            note = await self._done(herald, actor)
            return actions.Reply(render.fit(f"{original}\n-# {note}" if original else note))

        await update(interaction, work)

    async def _done(self, herald: Herald, actor: Principal) -> str:
        if self.action == "edit":
            await herald.show_schedule(actor, self.target)  # yours, and still there
            return (
                f"Edit it in the server with `/schedule edit id:{self.target}`, "
                "or from `/schedule list`."
            )
        if self.action == "resume":
            await actions.change(herald, actor, "resume", self.target)
            return f"Resumed schedule #{self.target}."
        done, count = await herald.retry_dead_letters(actor, [self.target])
        if not count:
            return f"Dead letter {self.target} was already retried or decided."
        if done == "requested":
            return (
                f"Asked an admin to retry dead letter {self.target}; "
                "you will hear here what they decide."
            )
        return f"Dead letter {self.target} is being sent again."


#: Notices core writes whole, their mentions already neutralized (issue 40).
_WRITTEN = frozenset({NoticeKind.APPROVAL.value, NoticeKind.DECIDED.value})
_BROADCAST = re.compile(r"@(everyone|here|&[0-9]{17,20})")


def _escape(group: AuthorNotices) -> Callable[[str], str]:
    """How a group's lines are shown: every mention escaped, or for requests and
    decisions (core's own words) members shown as their mentions and destinations as
    Discord links, only broadcasts and roles escaped (nothing is pinged either way:
    no mention is allowed)."""
    if all(x.kind in _WRITTEN for x in group.lines):
        return lambda text: render.said(_BROADCAST.sub("@\u200b\\1", text))
    return discord.utils.escape_mentions


class DiscordNotices(NoticeSweeper):
    """Discord's: ``post(user_id, text, view)``; ``guilds`` the servers served
    (DISCORD_GUILD_IDS; empty: any); ``alert_tenant()`` the alert channel's server,
    ``alert(text, view)`` posts there. Closed direct messages (403) drop the notices."""

    def __init__(
        self,
        herald: Herald,
        post: Callable[[int, str, ui.View | None], Awaitable[None]],
        guilds: Collection[int],
        alert_tenant: Callable[[], Awaitable[str | None]],
        *,
        every: float,
        alert: Callable[[str, ui.View | None], Awaitable[None]] | None = None,
    ) -> None:
        super().__init__(
            herald,
            "discord",
            self._tell,
            every=every,
            quiet=(discord.Forbidden,),
            alert_tenant=alert_tenant,
        )
        self.post = post
        self.guilds = guilds
        self.alert = alert

    async def _tell(self, group: AuthorNotices) -> None:
        if group.owner == f"discord:{ALERT_OWNER}":
            await self._tell_alert_channel(group)
            return
        user = owner_here(group.owner, group.tenant, self.guilds)
        if user is None:
            raise Unreachable("not a member of a server this bot serves")
        hints = dict.fromkeys(x.hint for x in group.lines if x.hint)
        note = "".join(f"\n-# {h}" for h in hints)
        text = message(group, MESSAGE_CHARS - len(note), _escape(group)) + note
        await self.post(user, text, notice_view(group))

    async def _tell_alert_channel(self, group: AuthorNotices) -> None:
        """Requests for the alert channel: posted there when it is of their server."""
        tenant = await self.alert_tenant() if self.alert_tenant is not None else None
        if self.alert is None or tenant != group.tenant:
            raise Unreachable("no alert channel in this server")
        await self.alert(message(group, MESSAGE_CHARS, _escape(group)), notice_view(group))
