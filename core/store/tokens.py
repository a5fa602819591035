"""API tokens: made, listed, looked up by their public id, revoked."""

from __future__ import annotations

from datetime import datetime

from sqlmodel import col, select

from core.models import ApiToken
from core.store.base import AuditEntry, Gateway


class TokenQueries(Gateway):
    """The rows behind the HTTP API's bearer tokens."""

    async def add_token(self, token: ApiToken, *, audit: AuditEntry) -> ApiToken:
        async with self._session() as s:
            s.add(token)
            await s.flush()
            await self._audit(s, audit, token.created_at)
            return token

    async def get_token(self, token_id: str) -> ApiToken | None:
        async with self._read_session() as s:
            return await s.get(ApiToken, token_id)

    async def list_tokens(
        self, *, tenant: str | None = None, member_id: str | None = None
    ) -> list[ApiToken]:
        """Tokens, newest first (``None``: any tenant, any member)."""
        stmt = select(ApiToken)
        if tenant is not None:
            stmt = stmt.where(col(ApiToken.tenant) == tenant)
        if member_id is not None:
            stmt = stmt.where(col(ApiToken.member_id) == member_id)
        stmt = stmt.order_by(col(ApiToken.created_at).desc(), col(ApiToken.id))
        async with self._read_session() as s:
            return list((await s.execute(stmt)).scalars())

    async def revoke_token(
        self, token_id: str, *, now: datetime, audit: AuditEntry
    ) -> ApiToken | None:
        """Mark the token revoked (once; a revoked token keeps its first date)."""
        async with self._session() as s:
            token = await s.get(ApiToken, token_id)
            if token is None:
                return None
            if token.revoked_at is None:
                token.revoked_at = now
                await self._audit(s, audit, now)
            return token

    async def touch_token(self, token_id: str, *, now: datetime) -> None:
        """Record that the token was used (callers do this at most once a minute)."""
        async with self._session() as s:
            token = await s.get(ApiToken, token_id)
            if token is not None:
                token.last_used_at = now
