"""The gateway's plumbing: one engine, sessions in one transaction, driver errors
wrapped at the edge, and the audit insert every change shares."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Self

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, AsyncSession

from core import db
from core.errors import DatabaseError, HeraldError
from core.models import Attempt, Audit, Job, Member, Schedule

SCHEDULE = Schedule.__table__  # type: ignore[attr-defined]
JOB = Job.__table__  # type: ignore[attr-defined]
ATTEMPT = Attempt.__table__  # type: ignore[attr-defined]
AUDIT = Audit.__table__  # type: ignore[attr-defined]
MEMBER = Member.__table__  # type: ignore[attr-defined]


@dataclass(frozen=True)
class AuditEntry:
    """One audit row to write in the same transaction as the change it records."""

    actor: str
    action: str
    object_type: str
    object_id: str = ""
    details: dict[str, Any] = field(default_factory=dict)


def new_idempotency_key() -> str:
    """A fresh job idempotency key: 22 url-safe characters (fits Discord's nonce)."""
    return secrets.token_urlsafe(16)


class Gateway:
    """Owns the engine. Create with :meth:`open`, finish with :meth:`close`."""

    def __init__(self, engine: AsyncEngine, url: str) -> None:
        self._engine = engine
        self.url = url
        self.backend = db.backend(url)

    @classmethod
    async def open(cls, url: str, *, migrate: bool = True, **engine_kwargs: Any) -> Self:
        """Connect to ``url``. With ``migrate`` the schema is checked (and, on SQLite,
        upgraded) first; DatabaseError if it cannot be used."""
        if migrate:
            await asyncio.to_thread(db.ensure_schema, url)
        return cls(db.make_async_engine(url, **engine_kwargs), url)

    async def close(self) -> None:
        await self._engine.dispose()

    @asynccontextmanager
    async def _session(self) -> AsyncIterator[AsyncSession]:
        """A session in one transaction, committed on success; driver errors become
        DatabaseError (the cause stays chained for the log)."""
        try:
            async with AsyncSession(self._engine, expire_on_commit=False) as session:
                async with session.begin():
                    yield session
        except HeraldError:
            raise
        except sa.exc.IntegrityError:
            raise
        except (sa.exc.OperationalError, sa.exc.InterfaceError) as exc:
            raise DatabaseError(
                f"The database at {db.redacted(self.url)} failed: {db.reason(exc)}"
            ) from exc

    @asynccontextmanager
    async def _conn(self) -> AsyncIterator[AsyncConnection]:
        async with self._session() as session:
            yield await session.connection()

    @staticmethod
    async def _audit(conn: AsyncConnection | AsyncSession, entry: AuditEntry, at: datetime) -> None:
        await conn.execute(
            sa.insert(AUDIT).values(
                at=at,
                actor=entry.actor,
                action=entry.action,
                object_type=entry.object_type,
                object_id=entry.object_id,
                details=entry.details,
            )
        )
