"""API tokens as use cases: made by an admin (or by a member for themselves), listed,
revoked, and read back from a bearer header into the principal a request acts as.

A token is ``hk_<id>_<secret>``: the id is public (lists, the audit log), the secret has
256 random bits and only its SHA-256 is stored, so a stolen database holds no usable
token. A token acts as its member, in its tenant, with the member's role as it is at
each request, and never beyond the token's scope."""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass
from datetime import timedelta

from core import timeexpr
from core.actors import ActorRef, Principal, Surface
from core.cases.base import CaseBase
from core.errors import InvalidInput, NotFound, PermissionDenied
from core.models import ApiToken, Role, TokenScope
from core.store import AuditEntry

PREFIX = "hk_"
#: A token as people paste it: ``hk_`` + 12 hex characters of id + ``_`` + 43 of secret.
TOKEN_RE = re.compile(r"^hk_([0-9a-f]{12})_([A-Za-z0-9_-]{43})$")
#: What each scope allows, at most (the member's role still decides).
SCOPES = (TokenScope.READ.value, TokenScope.WRITE.value, TokenScope.ADMIN.value)
MIN_EXPIRY = timedelta(hours=1)
MAX_EXPIRY = timedelta(days=3650)


class Unauthorized(PermissionDenied):
    """The request carries no valid token (HTTP 401: no, bad, expired or revoked)."""


@dataclass(frozen=True)
class Minted:
    """A new token: its row and the secret string, shown once."""

    token: ApiToken
    secret: str


def parse_expiry(text: str) -> timedelta | None:
    """``90d``, ``12h``, ``2 weeks`` (any duration :func:`core.timeexpr.parse_duration`
    reads), or ``never``, as a lifetime; InvalidInput otherwise."""
    if text.strip().lower() == "never":
        return None
    try:
        life = timeexpr.parse_duration(text)
    except InvalidInput:
        raise InvalidInput(
            f"{text!r} is not a token lifetime: write e.g. 90d, 12h, 2w or never."
        ) from None
    if not MIN_EXPIRY <= life <= MAX_EXPIRY:
        raise InvalidInput("A token's lifetime must be between 1 hour and 10 years.")
    return life


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def scope_allows(scope: str, needed: str) -> bool:
    """Whether a token of ``scope`` may do what needs ``needed``."""
    return SCOPES.index(scope) >= SCOPES.index(needed)


class TokenCases(CaseBase):
    """Making, listing and revoking API tokens; reading a bearer token."""

    async def create_token(
        self,
        actor_id: ActorRef,
        member_id: str,
        *,
        tenant: str | None = None,
        scope: str = TokenScope.WRITE.value,
        name: str = "",
        expires: str = "90d",
    ) -> Minted:
        """A token acting as ``member_id`` in ``tenant`` (default: the actor's). An admin
        makes one for any member of a tenant within reach; anyone, for themselves."""
        actor = await self.actor(actor_id)
        where = tenant or actor.tenant
        if scope not in SCOPES:
            raise InvalidInput(f"Unknown scope {scope!r}: use read, write or admin.")
        if len(name) > 200:
            raise InvalidInput("A token's name takes at most 200 characters.")
        life = parse_expiry(expires)
        own = member_id == actor.id and where == actor.tenant
        if not own and not actor.is_admin:
            raise await self.denied(
                actor,
                "token.create",
                "member",
                member_id,
                "Only an admin can make a token for another member.",
            )
        if not actor.owns_tenant_of(where):
            raise await self.denied(
                actor,
                "token.create",
                "member",
                member_id,
                f"There is no tenant {where} of yours.",
                NotFound,
            )
        await self.actor(Principal(member_id, where))  # validates the id and tenant
        now = self.clock.now()
        token_id = secrets.token_hex(6)
        secret = secrets.token_urlsafe(32)
        row = ApiToken(
            id=token_id,
            tenant=where,
            member_id=member_id,
            scope=scope,
            name=name.strip(),
            secret_hash=_hash(secret),
            created_by=actor.id,
            created_at=now,
            expires_at=None if life is None else now + life,
        )
        audit = AuditEntry.by(
            actor,
            "token.create",
            "token",
            token_id,
            {
                "member": member_id,
                "scope": scope,
                "expires_at": row.expires_at and row.expires_at.isoformat(),
            },
            tenant=where,
        )
        stored = await self.store.add_token(row, audit=audit)
        return Minted(stored, f"{PREFIX}{token_id}_{secret}")

    async def list_tokens(self, actor_id: ActorRef, *, tenant: str | None = None) -> list[ApiToken]:
        """Tokens the actor may see: an admin's, every one of their tenant (Herald-wide
        admins: every tenant's, or ``tenant``'s); anyone else's, their own."""
        actor = await self.actor(actor_id)
        if actor.is_admin:
            return await self.store.list_tokens(tenant=self.tenant_scope(actor, tenant))
        return await self.store.list_tokens(tenant=actor.tenant, member_id=actor.id)

    async def revoke_token(self, actor_id: ActorRef, token_id: str) -> ApiToken:
        """Revoke a token at once (its own member, or an admin of its tenant)."""
        actor = await self.actor(actor_id)
        token_id = token_id.removeprefix(PREFIX).split("_")[0]
        token = await self.store.get_token(token_id)
        mine = token is not None and token.member_id == actor.id and token.tenant == actor.tenant
        if token is None or not (mine or (actor.is_admin and actor.owns_tenant_of(token.tenant))):
            raise NotFound(f"No token {token_id} of yours.")
        audit = AuditEntry.by(actor, "token.revoke", "token", token_id, tenant=token.tenant)
        revoked = await self.store.revoke_token(token_id, now=self.clock.now(), audit=audit)
        assert revoked is not None
        return revoked

    async def token_principal(self, bearer: str) -> tuple[Principal, ApiToken]:
        """Who a bearer token acts as (Unauthorized for a malformed, unknown, revoked or
        expired one; the sentence says which, never echoing the token)."""
        m = TOKEN_RE.match(bearer.strip())
        if not m:
            raise Unauthorized("That is not a Herald API token (they look like hk_…).")
        token = await self.store.get_token(m.group(1))
        if token is None or not hmac.compare_digest(token.secret_hash, _hash(m.group(2))):
            raise Unauthorized("Unknown API token.")
        if token.revoked_at is not None:
            raise Unauthorized(f"API token {token.id} was revoked.")
        if token.expires_at is not None and token.expires_at <= self.clock.now():
            raise Unauthorized(f"API token {token.id} expired; make a new one.")
        cap = None if token.scope == TokenScope.ADMIN.value else Role.OPERATOR
        principal = Principal(
            token.member_id, token.tenant, surface=Surface.API, via=token.id, max_role=cap
        )
        return principal, token
