"""The providers' health as the console shows it: each provider ``email:`` and
``sms:`` go through (``HERALD_EMAIL_PROVIDERS``, ``HERALD_SMS_PROVIDERS``, in order)
and each provider the dispatchers ever found down (:meth:`core.store.Store.
provider_health`): up, or down until when and why, and since when.

Whether a provider is configured is its channel's own answer
(:attr:`core.channels.failover.Provider.configured`), asked of the channels as the
dispatcher builds them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfo

from core.actors import ActorRef
from core.cases.base import CaseBase
from core.channel_settings.providers import EMAIL_PROVIDERS, SMS_PROVIDERS
from core.channels.email import email_providers
from core.channels.failover import ProviderHealth
from core.channels.sms import SmsChannel
from core.http_client import HTTPClient
from core.receipts import provider_label
from core.scrub import scrub_credentials
from core.settings import Settings

#: How much of a provider's last failure the console shows (the log has it all).
REASON_CHARS = 80


@dataclass(frozen=True)
class ProviderState:
    """One provider's health as of ``now``."""

    #: The name the settings use (``sendgrid``).
    name: str
    #: What it serves, in the settings' order: "email 1st", "sms"; for a provider no
    #: list names (FCM; one taken out of its list since it was found down) its kind.
    serves: str
    #: Its credentials are set (False: its channel leaves it out). True for one no list
    #: names: it is shown by its health record alone.
    configured: bool
    now: datetime
    down_until: datetime | None = None
    #: Why it was last marked down, scrubbed and cut to :data:`REASON_CHARS`.
    reason: str = ""
    #: When its health last changed (marked down, or answering again); None: never.
    changed_at: datetime | None = None

    @property
    def label(self) -> str:
        return provider_label(self.name)

    @property
    def down(self) -> bool:
        return self.down_until is not None and self.down_until > self.now

    def health(self, zone: str) -> str:
        """In words, times in ``zone``: "up", "up since 09:06", "down until 09:05 (503
        from SendGrid)", "not configured"."""
        if not self.configured:
            return "not configured"
        if self.down and self.down_until is not None:
            because = f" ({self.reason})" if self.reason else ""
            return f"down until {_clock(self.down_until, self.now, zone)}{because}"
        if self.changed_at is not None:
            return f"up since {_clock(self.changed_at, self.now, zone)}"
        return "up"


def _clock(at: datetime, now: datetime, zone: str) -> str:
    """``09:05`` in ``zone``; ``03-04 09:05`` when not on ``now``'s day there."""
    tz = ZoneInfo(zone)
    here = at.astimezone(tz)
    return f"{here:%H:%M}" if here.date() == now.astimezone(tz).date() else f"{here:%m-%d %H:%M}"


def _ordinal(n: int) -> str:
    return {1: "1st", 2: "2nd", 3: "3rd"}.get(n, f"{n}th")


def configured(settings: Settings) -> set[str]:
    """The email and SMS providers the settings list whose credentials are set, as
    their channels decide it (built as the dispatcher builds them; no connection is
    opened): the console says what sending will do."""
    names = {p.name for p in email_providers(settings) if p.configured}
    sms = SmsChannel.from_settings(
        settings, http=HTTPClient(lazy_tls=True), health=ProviderHealth()
    )
    return names | {p.name for p in sms.providers}


def served(settings: Settings) -> dict[str, str]:
    """Each provider the settings list, in order, with what it serves ("email 1st")."""
    out: dict[str, str] = {}
    for kind, listed in (
        ("email", settings.email_providers),
        ("sms", settings.sms_providers),
    ):
        names = [n for n in listed.split(",") if n]
        for i, name in enumerate(names, 1):
            out.setdefault(name, kind if len(names) == 1 else f"{kind} {_ordinal(i)}")
    return out


#: The channel kind of a provider no list names (``push:`` goes through FCM alone).
_KIND = {
    **{name: "email" for name in EMAIL_PROVIDERS},
    **{name: "sms" for name in SMS_PROVIDERS},
    "fcm": "push",
}


class ProviderCases(CaseBase):
    """The providers' health (the console's overview)."""

    async def provider_health(self, actor_id: ActorRef) -> list[ProviderState]:
        """Every provider the settings list for ``email:`` and ``sms:``, in order, then
        any other the dispatchers found down, by name. Herald-wide (the providers are
        shared, like the dispatchers): anyone who may read the overview may read it."""
        await self.actor(actor_id)
        now = self.clock.now()
        rows = {row.provider: row for row in await self.store.provider_health()}
        listed = served(self.settings)
        ready = configured(self.settings)
        names = [*listed, *sorted(n for n in rows if n not in listed)]
        states = []
        for name in names:
            row = rows.get(name)
            states.append(
                ProviderState(
                    name,
                    listed.get(name) or _KIND.get(name, ""),
                    # one no list names is shown by its record alone
                    name in ready if name in listed else True,
                    now,
                    down_until=None if row is None else row.down_until,
                    reason="" if row is None else _reason(row.reason),
                    changed_at=None if row is None else row.changed_at,
                )
            )
        return states


def _reason(text: str) -> str:
    line = " ".join(scrub_credentials(text).split())
    return line if len(line) <= REASON_CHARS else line[: REASON_CHARS - 1].rstrip() + "…"
