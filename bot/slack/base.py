"""What every Slack handler shares: who is acting, the in-flight work, the reply and
modal helpers, the App Home.

Handlers acknowledge first (Slack wants an answer within 3 seconds), then do their
work; a :class:`core.errors.HeraldError` becomes an ephemeral sentence, anything else
is logged with its traceback and the person gets a short apology.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any, Literal

from slack_sdk.web.async_client import AsyncWebClient

from bot.slack.approvals import held_reply
from bot.slack.blocks import Reply, notice, refusal
from bot.slack.directory import ChannelNames, Directory, error_code
from bot.slack.home import home_view
from bot.slack.modal import (
    MAX_PICKED,
    ModalMeta,
    data_text,
    fingerprint,
    fits_input,
    schedule_modal,
)
from bot.slack.pending import Pending
from core import limits, views
from core.actors import Actor, ActorRef, Principal, Surface, slack_tenant
from core.cases import Herald
from core.channels import parse_destination
from core.errors import HeraldError
from core.models import Schedule, ScheduleState
from core.settings import Settings

log = logging.getLogger(__name__)

SORRY = ":warning: Something went wrong on Herald's side; the operators can see it in the log."
#: Slack closes a modal's submission after 3 s; validation gets this long before ack.
ACK_BUDGET = 2.5

Send = Callable[[Reply], Awaitable[None]]
#: What a create does about the same message already scheduled there (core's
#: ``create_schedule(duplicates=…)``).
Duplicates = Literal["warn", "refuse", "ignore"]


def seen_in(channel: str) -> str | None:
    """The channel a signed request came from as a destination (its members see its
    agenda), or None when it came from no channel (a direct message, the Home tab)."""
    return f"slack:{channel}" if channel[:1] in ("C", "G") else None


@dataclass(frozen=True)
class Person:
    """Who clicked or typed: their Slack id, their Herald actor and the zone Herald reads
    their times in (their own choice, else their Slack profile's, else the default)."""

    user_id: str
    actor: Actor
    zone: str
    #: Where ``zone`` comes from, in words.
    zone_source: str = "Herald's default"

    @property
    def principal(self) -> Principal:
        """Who to act as: this member, in the workspace the request came from."""
        return self.actor.principal


class ForeignTeam(HeraldError):
    """A request from a Slack workspace this deployment is not installed in."""


def request_team(body: dict[str, Any]) -> tuple[str, str | None]:
    """The team (workspace) and Enterprise Grid org a Slack request comes from: slash
    commands carry ``team_id``/``enterprise_id``; interactions ``team``/``enterprise``
    and ``user.team_id``; events ``team_id`` (https://api.slack.com/interactivity/
    handling#payloads). Raises ForeignTeam when it names none."""
    team = body.get("team")
    user = body.get("user") if isinstance(body.get("user"), dict) else {}
    team_id = (
        (team.get("id") if isinstance(team, dict) else None)
        or body.get("team_id")
        or (user or {}).get("team_id")
        or (body.get("view") or {}).get("team_id")
    )
    enterprise = body.get("enterprise")
    enterprise_id = (enterprise.get("id") if isinstance(enterprise, dict) else None) or body.get(
        "enterprise_id"
    )
    if not isinstance(team_id, str) or not team_id:
        raise ForeignTeam("This request names no Slack workspace.")
    return team_id, enterprise_id if isinstance(enterprise_id, str) and enterprise_id else None


class Tracker:
    """The handler tasks still running after their acknowledgement, so the adapter can
    let them finish at shutdown."""

    def __init__(self) -> None:
        self.tasks: set[asyncio.Task[Any]] = set()

    @contextmanager
    def track(self) -> Iterator[None]:
        task = asyncio.current_task()
        if task is not None:
            self.tasks.add(task)
        try:
            yield
        finally:
            if task is not None:
                self.tasks.discard(task)

    async def drain(self, grace: float) -> None:
        """Wait up to ``grace`` s for running handlers, then cancel the rest."""
        current = asyncio.current_task()
        pending = [t for t in self.tasks if t is not current and not t.done()]
        if not pending:
            return
        _, late = await asyncio.wait(pending, timeout=grace)
        for task in late:
            task.cancel()
        if late:
            await asyncio.gather(*late, return_exceptions=True)


class Base:
    """Shared state and helpers of the handler mixins."""

    def __init__(
        self,
        settings: Settings,
        herald: Herald,
        client: AsyncWebClient,
        tracker: Tracker,
        teams: frozenset[str] = frozenset(),
    ) -> None:
        self.settings = settings
        self.herald = herald
        self.client = client
        self.directory = Directory(client)
        self.channel_names = ChannelNames(client)
        self.tracker = tracker
        #: The workspaces (team ids) this deployment serves: HERALD_SLACK_TEAM_IDS, else
        #: the bot token's own (auth.test). Empty: none known, every request is refused.
        self.teams = teams
        #: Creates held back by a duplicate, waiting for Create anyway or Cancel.
        self.pending = Pending()

    # --- who ----------------------------------------------------------------------

    def tenant(self, body: dict[str, Any]) -> str:
        """The tenant of a request; ForeignTeam (refused, logged) for a workspace this
        deployment is not installed in."""
        team_id, enterprise_id = request_team(body)
        if team_id not in self.teams and (enterprise_id or "") not in self.teams:
            log.warning("slack request from a workspace Herald is not installed in")
            raise ForeignTeam("Herald is not installed in this Slack workspace.")
        return slack_tenant(team_id, enterprise_id)

    async def person(self, user_id: str, body: dict[str, Any]) -> Person:
        """Sync what Slack says about ``user_id`` (in the workspace ``body`` comes from)
        into Herald and resolve their zone. Every command counts against the member's
        commands per minute (QuotaExceeded past it)."""
        tenant = self.tenant(body)
        info = await self.directory.user(user_id)
        admin = None
        if self.settings.slack_admins_from_workspace and info.known:
            admin = info.workspace_admin
        actor = await self.herald.sync_member(
            Principal(f"slack:{user_id}", tenant, surface=Surface.SLACK),
            display_name=info.name,
            platform_admin=admin,
        )
        await self.herald.count_command(actor)
        if actor.timezone:
            return Person(user_id, actor, actor.timezone, "you set it")
        if info.tz:
            return Person(user_id, actor, info.tz, "from your Slack profile")
        return Person(user_id, actor, self.settings.default_tz)

    async def entrant(self, user_id: str, body: dict[str, Any], send: Send) -> Person | None:
        """:meth:`person`, or None after telling them why not (a workspace Herald is not
        installed in, too many commands)."""
        try:
            return await self.person(user_id, body)
        except HeraldError as exc:
            await self._safely(send, refusal(exc))
            return None

    # --- the boundary -------------------------------------------------------------

    async def guard(self, work: Awaitable[None], send: Send) -> None:
        """Run one handler's work after its ack: errors become an ephemeral reply."""
        try:
            await work
        except HeraldError as exc:
            await self._safely(send, refusal(exc))
        except Exception:  # the handler boundary: log with traceback, apologise
            log.exception("slack handler failed")
            await self._safely(send, notice(SORRY))

    @staticmethod
    async def _safely(send: Send, reply: Reply) -> None:
        try:
            await send(reply)
        except Exception as exc:
            log.warning("could not send a slack reply: %s", error_code(exc))

    # --- modal --------------------------------------------------------------------

    async def open_modal(
        self,
        trigger_id: str,
        person: Person,
        *,
        channel: str | None = None,
        schedule: Schedule | None = None,
    ) -> None:
        """Open the schedule modal, empty (in ``channel``) or filled with ``schedule``
        (one sending a template: that template picked, its data filled in, and no
        message)."""
        text = data = None
        if schedule is None:
            meta = ModalMeta(channels=(channel,) if channel and channel[0] in "CG" else ())
        else:
            channels = _picked_channels(schedule)
            used = views.template_of(schedule)
            meta = ModalMeta(
                schedule_id=schedule.id,
                version=schedule.version,
                channels=channels or (),
                when=schedule.expression,
                text_fp=fingerprint(schedule.body if used is None else ""),
                fixed=None if channels else views.recipients_text(schedule),
                long_text=used is None and not fits_input(schedule.body),
            )
            if used is None:
                text = schedule.body
            else:
                data = data_text(used["data"])
                if len(data) > limits.SLACK_INPUT_MAX_LENGTH.size:
                    data = ""  # more than the field holds: kept as it is unless typed anew
                meta = replace(meta, template=str(used["name"]), data_fp=fingerprint(data.strip()))
        names = [t.name for t, _ in await self.herald.list_templates(person.principal)]
        view = schedule_modal(
            zone=person.zone, meta=meta, text=text, templates=names, data=data or None
        )
        await self.client.views_open(trigger_id=trigger_id, view=view)

    # --- App Home -----------------------------------------------------------------

    async def live_schedules(self, actor_id: ActorRef, *, everyone: bool = False) -> list[Schedule]:
        """Active, awaiting approval and paused schedules, soonest first (the active
        ones first)."""
        found: list[Schedule] = []
        live = (ScheduleState.ACTIVE, ScheduleState.AWAITING, ScheduleState.PAUSED)
        for state in live:
            found += await self.herald.list_schedules(
                actor_id, everyone=everyone, state=state.value
            )
        far = self.herald.clock.now().replace(year=9999)
        return sorted(found, key=lambda s: (s.state != "active", s.next_run_at or far, s.id))

    async def held(self, person: Person, schedule: Schedule, reply: Reply) -> Reply:
        """``reply`` to a create or an edit, saying plainly when the message waits for
        an approver (and why) instead of that it is scheduled."""
        if schedule.state != ScheduleState.AWAITING.value:
            return reply
        requests = await self.herald.approvals(
            person.principal, kind="send", schedule_id=schedule.id
        )
        why = next((r.why for r in requests), None)
        return held_reply(reply, why or "it needs a second person's approval")

    async def publish_home(self, person: Person, notice_text: str | None = None) -> None:
        actor = person.actor
        schedules = await self.live_schedules(actor)
        overview = dead = None
        if actor.sees_everything:
            overview = await self.herald.overview(actor)
            dead = await self.herald.dead_letters(actor, limit=5)
        view = home_view(
            schedules,
            zone=person.zone,
            overview=overview,
            dead=dead,
            admin=actor.is_admin,
            notice=notice_text,
        )
        await self.client.views_publish(user_id=person.user_id, view=view)

    def home_sender(self, person: Person) -> Send:
        """Replies to a click in the Home tab: the tab again, with the reply on top."""

        async def send(reply: Reply) -> None:
            await self.publish_home(person, reply[0])

        return send


def _picked_channels(schedule: Schedule) -> tuple[str, ...] | None:
    """The channels the modal's picker shows for ``schedule``: each recipient a Slack
    channel (a thread reply as its channel), at most :data:`MAX_PICKED`; None when any
    recipient is something else (a reminder, a chain, another kind), which the modal
    shows fixed."""
    found: list[str] = []
    for recipient in views.recipients_of(schedule):
        parsed = parse_destination(recipient.first)
        if len(recipient.to) > 1 or parsed.kind != "slack" or parsed.is_dm:
            return None
        found.append(parsed.target.partition("/")[0])
    return tuple(found) if len(found) <= MAX_PICKED else None
