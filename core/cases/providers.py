"""The providers' health as the console shows it: each provider ``email:`` and
``sms:`` go through (``HERALD_EMAIL_PROVIDERS``, ``HERALD_SMS_PROVIDERS``, in order)
and each provider the dispatchers ever found down (:meth:`core.store.Store.
provider_health`): up, or down until when and why, and since when.

A provider's "configured" here reads its settings the way its channel does (its
credentials set); the channel's own :attr:`core.channels.failover.Provider.configured`
decides what is sent, this only what is shown.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfo

from core.actors import ActorRef
from core.cases.base import CaseBase
from core.channel_settings.providers import EMAIL_PROVIDERS, SMS_PROVIDERS
from core.receipts import provider_label
from core.scrub import scrub_credentials
from core.settings import Settings

#: How much of a provider's last failure the console shows (the log has it all).
REASON_CHARS = 80

#: What each provider needs set before its channel uses it (its credentials).
_NEEDS: dict[str, tuple[str, ...]] = {
    "smtp": ("smtp_host",),
    "sendgrid": ("sendgrid_api_key",),
    "mailgun": ("mailgun_api_key", "mailgun_domain"),
    "twilio": ("twilio_account_sid", "twilio_auth_token", "twilio_from"),
    "vonage": ("vonage_api_key", "vonage_api_secret", "vonage_from"),
    "fcm": ("fcm_service_account_file",),
}


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


def configured(settings: Settings, provider: str) -> bool:
    """Whether ``provider``'s settings are set (its channel would use it)."""
    return all(getattr(settings, need, None) for need in _NEEDS.get(provider, ("-",)))


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
        names = [*listed, *sorted(n for n in rows if n not in listed)]
        states = []
        for name in names:
            row = rows.get(name)
            states.append(
                ProviderState(
                    name,
                    listed.get(name) or _KIND.get(name, ""),
                    # one no list names is shown by its record alone
                    configured(self.settings, name) if name in listed else True,
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
