"""Authors told of their failures (issue 38): the notices a chat adapter takes and
tells, as the author's preferences allow.

A chat adapter's sweeper (bot/notices.py) calls :meth:`NoticeCases.take_notices` every
few seconds: the notices of its platform's authors, leased, grouped by author, each
as a line that says what failed and why. It tells each group in one direct message,
then calls :meth:`NoticeCases.notices_told` (told, or never to be told: the author
cannot be reached) or :meth:`NoticeCases.notices_untold` (the platform failed: the
next sweep tries again)."""

from __future__ import annotations

from collections.abc import Container, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from core.actors import Principal
from core.cases.base import CaseBase
from core.events import REASON_CHARS, NoticeKind, recipient_shown
from core.models import JobState, ScheduleState
from core.preferences import TENANT_DEFAULT, effective
from core.store import TakenNotice

#: Seconds a taken notice stays the taker's: past it, a process that died after
#: taking it has its notices told by the next sweep (at least once).
NOTICE_LEASE_SECONDS = 120.0


@dataclass(frozen=True)
class NoticeLine:
    """One notice as its author reads it, and what its buttons may do."""

    notice_id: int
    kind: str
    schedule_id: int | None
    job_id: int | None
    #: What failed and why, in one sentence.
    text: str
    #: The job is still dead: its author may ask for a retry.
    retryable: bool
    #: The schedule is paused: its author may resume it.
    resumable: bool
    #: The schedule is live (active or paused): its author may edit it.
    editable: bool
    #: An approver is asked to decide it (kind ``approval``): the surfaces show
    #: Approve and Reject buttons for this approval.
    approval_id: int | None = None

    @property
    def hint(self) -> str | None:
        """What the author can do when no button can (an expired message): edit a
        schedule still live, or schedule a one-off again (an ended one cannot be edited)."""
        if self.kind != NoticeKind.EXPIRED:
            return None
        if self.editable:
            return "An expired message cannot be retried: edit its schedule to send it again."
        return "An expired message cannot be retried: schedule it again to send it."


@dataclass(frozen=True)
class AuthorNotices:
    """One author's notices, told in one direct message."""

    tenant: str
    owner: str
    lines: tuple[NoticeLine, ...]

    @property
    def ids(self) -> list[int]:
        return [x.notice_id for x in self.lines]


def _sentence(reason: str) -> str:
    """The reason as the end of a sentence, cut to :data:`REASON_CHARS`."""
    text = " ".join(reason.split())
    if len(text) > REASON_CHARS:
        text = text[: REASON_CHARS - 1] + "…"
    return text if text.endswith((".", "!", "?", "…")) else text + "."


def notice_text(n: TakenNotice) -> str:
    """``Your message to #general (schedule 41) was not sent: the channel is archived.``"""
    # an expiry says "Not sent: it was 2 h late, …": the line says "not sent" already
    reason = n.reason.strip().removeprefix("Not sent: ")
    why = _sentence(reason) if reason else ""
    if n.kind == NoticeKind.PAUSED:
        what = f"schedule {n.schedule_id}" if n.schedule_id is not None else "a schedule"
        return (
            f"Schedule {n.schedule_id} was paused: {why} Resume it when the destination "
            "works again."
            if why
            else f"{what.capitalize()} was paused by Herald for failing."
        )
    if n.kind in (NoticeKind.APPROVAL, NoticeKind.DECIDED):
        return n.reason  # written whole when the request was made or decided
    if n.kind == NoticeKind.HOOK_DISABLED:
        return f"Your event hook was disabled: {why}" if why else "Your event hook was disabled."
    to = f" to {recipient_shown(n.destination)}" if n.destination else ""
    sid = f" (schedule {n.schedule_id})" if n.schedule_id is not None else ""
    failed = "was not sent in time" if n.kind == NoticeKind.EXPIRED else "was not sent"
    return f"Your message{to}{sid} {failed}: {why}" if why else f"Your message{to}{sid} {failed}."


def _line(n: TakenNotice) -> NoticeLine:
    live = n.schedule_state in (ScheduleState.ACTIVE.value, ScheduleState.PAUSED.value)
    return NoticeLine(
        notice_id=n.id,
        kind=n.kind,
        schedule_id=n.schedule_id,
        job_id=n.job_id,
        text=notice_text(n),
        retryable=n.kind == NoticeKind.DEAD and n.job_state == JobState.DEAD.value,
        resumable=n.kind == NoticeKind.PAUSED and n.schedule_state == ScheduleState.PAUSED.value,
        editable=live,
        approval_id=n.approval_id if n.kind == NoticeKind.APPROVAL else None,
    )


class NoticeCases(CaseBase):
    """Authors told of their failures (issue 38): the notices a chat adapter takes and
    tells, as the author's preferences allow."""

    async def take_notices(
        self,
        platform: str,
        now: datetime,
        *,
        told: Mapping[str, datetime] | None = None,
        alert_tenant: str | None = None,
        alerted: Container[int] = frozenset(),
    ) -> list[AuthorNotices]:
        """The notices of ``platform``'s authors (``slack``, ``discord``) to tell now,
        one group per author, taken for :data:`NOTICE_LEASE_SECONDS`.

        Dropped (deleted, never told): the notices of an author whose preferences turn
        them off, and the dead letters of an admin of ``alert_tenant`` (the tenant whose
        alert channel this platform posts to) that are ``alerted`` (job ids the channel
        was given: it tells them already). A dead letter the channel never heard of (a
        provider's receipt made it, or a process whose adapter was down) is told here.

        A digest: ``told`` is when the adapter last messaged each author; an author
        messaged within ``HERALD_NOTICE_DIGEST`` seconds waits (their notices held)
        until that window has passed, then hears of them all in one message; a request
        for approval is never held (its author waits on it), and takes the held ones
        with it."""
        taken = await self.store.take_notices(f"{platform}:", now=now, lease=NOTICE_LEASE_SECONDS)
        groups: dict[tuple[str, str], list[TakenNotice]] = {}
        for n in taken:
            groups.setdefault((n.tenant, n.owner), []).append(n)
        window = timedelta(seconds=self.settings.notice_digest_seconds)
        ready: list[AuthorNotices] = []
        dropped: list[int] = []
        for (tenant, owner), notices in groups.items():
            keep = await self._wanted(tenant, owner, notices, alert_tenant, alerted)
            dropped.extend(n.id for n in notices if n not in keep)
            if not keep:
                continue
            last = (told or {}).get(owner)
            asking = any(n.kind == NoticeKind.APPROVAL for n in keep)  # an approver waits
            if last is not None and now < last + window and not asking:
                await self.store.hold_notices([n.id for n in keep], until=last + window)
                continue
            ready.append(AuthorNotices(tenant, owner, tuple(_line(n) for n in keep)))
        await self.store.delete_notices(dropped)
        return ready

    async def _wanted(
        self,
        tenant: str,
        owner: str,
        notices: list[TakenNotice],
        alert_tenant: str | None,
        alerted: Container[int],
    ) -> list[TakenNotice]:
        """The notices this author is to be told of (see :meth:`take_notices`)."""
        stored = await self.store.preferences_of(tenant, [owner])
        if effective(stored.get(owner), stored.get(TENANT_DEFAULT)).notices is False:
            return []

        def shown(n: TakenNotice) -> bool:
            return n.kind == NoticeKind.DEAD and n.job_id is not None and n.job_id in alerted

        if alert_tenant == tenant and any(shown(n) for n in notices):
            actor = await self.actor(Principal(owner, tenant=tenant))
            if actor.is_admin:
                return [n for n in notices if not shown(n)]
        return notices

    async def notices_told(self, ids: Sequence[int]) -> None:
        """These notices were told (or their author cannot be reached): gone."""
        await self.store.delete_notices(ids)

    async def notices_untold(self, ids: Sequence[int]) -> None:
        """Telling these failed: the next sweep takes them again."""
        await self.store.release_notices(ids)

    async def pending_notices(self, platform: str = "") -> int:
        """How many notices wait to be told (of ``platform``'s authors, or all)."""
        return await self.store.pending_notices(f"{platform}:" if platform else "")
