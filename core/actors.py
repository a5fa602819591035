"""Who is acting: a member of one tenant, with the role that decides what they may do.

A *tenant* is the workspace or server a request comes from: ``slack:T…`` (a Slack
workspace; ``slack:E…/T…`` inside an Enterprise Grid org), ``discord:<guild id>`` (a
direct message's tenant is the user's own, ``discord:@<user id>``) and ``local`` for the
terminal (the CLI and the console). Every row a member makes belongs to the tenant they
made it in, and every query the use cases run is limited to the actor's tenant, except
for Herald-wide operators and admins (``HERALD_ADMINS``, and operators and admins of
``local``), who see and act across tenants.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from core.models import LOCAL_TENANT, Role

__all__ = [
    "LOCAL_TENANT",
    "Actor",
    "ActorRef",
    "Mentions",
    "Principal",
    "Surface",
    "discord_tenant",
    "slack_tenant",
]


def slack_tenant(team_id: str, enterprise_id: str | None = None) -> str:
    """The tenant of a Slack workspace (inside its Enterprise Grid org, when it has one)."""
    return f"slack:{enterprise_id}/{team_id}" if enterprise_id else f"slack:{team_id}"


def discord_tenant(guild_id: int | None, user_id: int) -> str:
    """The tenant of a Discord server, or of a user's direct messages with the bot."""
    return f"discord:{guild_id}" if guild_id is not None else f"discord:@{user_id}"


class Surface(StrEnum):
    """Where a request came from, as its entry point says: each composition root (the
    CLI, the console, the Slack and Discord adapters) builds its principals with its
    own, and the audit log records it. Herald's own work (the dispatcher, calendar
    refreshes) is ``system``."""

    CLI = "cli"
    CONSOLE = "console"
    SLACK = "slack"
    DISCORD = "discord"
    API = "api"
    SYSTEM = "system"


@dataclass(frozen=True, slots=True)
class Mentions:
    """Whom the author of a message may notify where it is posted, as their platform
    said when they scheduled it. The bot posts with more rights than its members have,
    so a delivered message notifies only whom its author could have."""

    #: ``@everyone``/``@here`` and every role (Discord's Mention Everyone permission).
    everyone: bool = False
    #: Roles the author may mention although they lack ``everyone`` (mentionable roles).
    roles: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class Principal:
    """Who is asking, as a surface knows them: a member id and the tenant the request
    came from, with what the platform says about them in that request."""

    id: str
    tenant: str = LOCAL_TENANT
    #: The platform says they administer the tenant (None: it did not say).
    platform_admin: bool | None = None
    mentions: Mentions = field(default_factory=Mentions)
    #: The surface the request came through (None: the caller did not say).
    surface: Surface | None = None
    #: The credential the request came with, when it was not the surface's own: an
    #: API token's public id (the audit log records it).
    via: str | None = None
    #: The highest role this request may act with, whatever the member's own (an API
    #: token's scope: a write token of an admin acts as an operator). None: no cap.
    max_role: Role | None = None


@dataclass(frozen=True)
class Actor:
    """Who is acting, in which tenant, with the role that decides what they may do."""

    id: str
    role: Role
    timezone: str | None
    tenant: str = LOCAL_TENANT
    #: Sees and acts across tenants (HERALD_ADMINS; operators and admins of ``local``).
    herald_wide: bool = False
    mentions: Mentions = field(default_factory=Mentions)
    #: The surface this actor's request came through (the audit log records it).
    surface: Surface | None = None
    #: The API token the request came with (its public id), if any.
    via: str | None = None
    #: The cap on this actor's role that the request carried (see Principal.max_role).
    max_role: Role | None = None

    @property
    def sees_everything(self) -> bool:
        """Sees every member's rows of the tenants in its scope (operators, admins)."""
        return self.role in (Role.OPERATOR, Role.ADMIN)

    @property
    def is_admin(self) -> bool:
        return self.role is Role.ADMIN

    @property
    def scope(self) -> str | None:
        """The tenant every query is limited to (None: every tenant)."""
        return None if self.herald_wide else self.tenant

    def owns_tenant_of(self, tenant: str) -> bool:
        """Whether a row of ``tenant`` is within this actor's reach."""
        return self.herald_wide or tenant == self.tenant

    @property
    def principal(self) -> Principal:
        """Who this actor is, to resolve again (their role may have changed since)."""
        return Principal(
            self.id,
            self.tenant,
            mentions=self.mentions,
            surface=self.surface,
            via=self.via,
            max_role=self.max_role,
        )


#: What the use cases accept as "who is acting": a Principal (or an Actor already
#: resolved), or a bare member id, which acts in the ``local`` tenant (the terminal's).
ActorRef = str | Principal | Actor
