"""The one delivery interface every channel implements.

A channel is given one :class:`Delivery` and returns a :class:`DeliveryResult`; it
classifies every provider answer as ok, retryable (optionally with a retry-after) or
permanent. ``send`` must not raise for anything the provider or the network does: it
returns a result. If it raises anyway, the dispatcher records the exception as a
retryable failure (a bug must never lose a message).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any, ClassVar, Protocol

from core.destinations import Destination, UriSyntax
from core.ratelimit import UNLIMITED, RateLimit


class Outcome(StrEnum):
    OK = "ok"
    RETRY = "retry"
    PERMANENT = "permanent"


@dataclass(slots=True)
class Delivery:
    """One try at sending one job. Not frozen only because a frozen dataclass takes
    five times as long to build, once per delivery; treat it as read-only."""

    job_id: int
    schedule_id: int
    destination: Destination
    body: str
    idempotency_key: str
    attempt: int
    occurrence_at: datetime
    due_at: datetime
    #: Per-schedule presentation options (Slack ``blocks``, ``username``, ``icon_url``,
    #: email ``subject``...). Never secrets.
    options: Mapping[str, Any] = field(default_factory=dict)
    #: The name of whoever scheduled it, to show under the message (a shared channel
    #: of a tenant that wants it, core.settings ``scheduled_by``); None: show none.
    #: A name as the members table has it, never a mention: a channel shows it
    #: so that nobody is notified.
    scheduled_by: str | None = None
    #: The schedule's tenant (whose members' devices ``push:`` reaches).
    tenant: str = ""


@dataclass(slots=True)
class DeliveryResult:
    """What the provider said. ``retry_after`` (seconds) is the provider's own pause.
    Read-only by convention (like :class:`Delivery`)."""

    outcome: Outcome
    status_code: int | None = None
    message_id: str | None = None
    error: str | None = None
    retry_after: float | None = None
    #: Which provider answered (``sendgrid``, ``twilio``) when the channel goes through
    #: one of several (core.channels.failover); None: the channel is its own provider.
    provider: str | None = None
    #: The provider, not the message, failed (refused connection, timeout, 5xx, a long
    #: 429): the next provider of the channel's list may take the message.
    down: bool = False

    @classmethod
    def ok(cls, status_code: int | None = None, message_id: str | None = None) -> DeliveryResult:
        return cls(Outcome.OK, status_code, message_id)

    @classmethod
    def retry(
        cls, error: str, status_code: int | None = None, retry_after: float | None = None
    ) -> DeliveryResult:
        return cls(Outcome.RETRY, status_code, None, error, retry_after)

    @classmethod
    def permanent(cls, error: str, status_code: int | None = None) -> DeliveryResult:
        return cls(Outcome.PERMANENT, status_code, None, error)

    @classmethod
    def unavailable(
        cls, error: str, status_code: int | None = None, retry_after: float | None = None
    ) -> DeliveryResult:
        """The provider is down (not the message's fault): a retry that another
        provider of the channel's list may take at once."""
        return cls(Outcome.RETRY, status_code, None, error, retry_after, down=True)


class Channel(ABC):
    """Sends deliveries of one destination kind (``kind`` is the URI scheme).

    Optional capabilities have defaults: ``rate_limit`` is the per-destination bucket
    the dispatcher applies before calling ``send``; ``close`` releases connections.
    """

    kind: ClassVar[str]
    #: How its destinations are written (``kind`` is its scheme), read by
    #: :func:`core.channels.parse_destination`.
    uri: ClassVar[UriSyntax]
    rate_limit: ClassVar[RateLimit] = UNLIMITED

    @abstractmethod
    async def send(self, delivery: Delivery) -> DeliveryResult:
        """Send one delivery and classify the answer. Never raises for provider or
        network errors: those are results."""

    async def validate(self, destination: Destination) -> None:  # noqa: B027
        """Check, at schedule time, that the destination can be reached (e.g. the bot
        may post in that channel). Raises InvalidInput with what to do. Default: no check."""

    def attach(self, store: ChannelStore) -> None:  # noqa: B027 - optional capability
        """Given the database a channel may need at send time (providers' shared health,
        members' devices); called once by the dispatcher that owns the channel."""

    async def close(self) -> None:  # noqa: B027 - optional capability, empty by default
        """Release connections; called once when the dispatcher stops."""


@dataclass(frozen=True, slots=True)
class ProviderDown:
    """A provider every dispatcher skips until ``until``, and why."""

    provider: str
    until: datetime
    reason: str


@dataclass(frozen=True, slots=True)
class Device:
    """One registered push device of a member."""

    id: int
    member_id: str
    token: str
    label: str
    platform: str


class ChannelStore(Protocol):
    """What channels read and write in the database (the Store implements it)."""

    async def providers_down(self, now: datetime) -> list[ProviderDown]:
        """The providers marked down whose cool-down has not ended."""

    async def mark_provider_down(self, provider: str, until: datetime, reason: str) -> None:
        """Mark ``provider`` down for every dispatcher until ``until``."""

    async def mark_provider_up(self, provider: str, now: datetime | None = None) -> None:
        """``provider`` answered: its mark ends ``now`` (default: the wall clock)."""

    async def devices_of(self, tenant: str, member_id: str) -> list[Device]:
        """A member's registered push devices, oldest first."""

    async def forget_device(self, tenant: str, device_id: int, reason: str) -> None:
        """Remove a device whose token the provider says is dead."""
