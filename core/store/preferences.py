"""Members' preferences and their tenants' defaults (core.preferences), read for many
members at once (the dispatcher reads a batch's recipients in one query)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlmodel import col, select

from core.models import Member, Preference, Role
from core.preferences import TENANT_DEFAULT, Preferences
from core.store.base import AuditEntry, Gateway


@dataclass(frozen=True, slots=True)
class PersonNow:
    """What the dispatcher reads of one member (or ``*``, the tenant's defaults) when it
    sends to them: their own stored preferences (None: none), their zone, the name the
    members table has for them, and whether they are an admin of the tenant (their role,
    or the platform says so; ``HERALD_ADMINS`` is the service's, not the tenant's)."""

    prefs: Preferences | None
    zone: str | None = None
    name: str = ""
    admin: bool = False


class PreferenceQueries(Gateway):
    """The preference rows, always within one tenant."""

    async def preferences_of(
        self, tenant: str, member_ids: Iterable[str]
    ) -> dict[str, Preferences]:
        """The stored preferences of these members (and ``*``, the tenant's defaults),
        by member id, each with the member's zone (None when unknown); members with no
        row are absent."""
        ids = sorted({*member_ids, TENANT_DEFAULT})
        stmt = (
            select(Preference, Member.timezone)
            .join(
                Member,
                (col(Member.tenant) == col(Preference.tenant))
                & (col(Member.id) == col(Preference.member_id)),
                isouter=True,
            )
            .where(col(Preference.tenant) == tenant, col(Preference.member_id).in_(ids))
        )
        found: dict[str, Preferences] = {}
        async with self._read_session() as s:
            for row, zone in (await s.execute(stmt)).all():
                prefs = Preferences.from_json(row.data)
                found[row.member_id] = Preferences(
                    place=prefs.place,
                    accept_from=prefs.accept_from,
                    blocked=prefs.blocked,
                    quiet=prefs.quiet,
                    hold_channels=prefs.hold_channels,
                    notices=prefs.notices,
                    zone=zone,
                )
        return found

    async def put_preferences(
        self,
        tenant: str,
        member_id: str,
        prefs: Preferences,
        *,
        now: datetime,
        by: str,
        audit: AuditEntry,
    ) -> None:
        """Store ``prefs`` as the member's (``*``: the tenant's defaults), replacing
        what was there, audited in the same transaction."""
        async with self._session() as s:
            row = await s.get(Preference, (tenant, member_id))
            if row is None:
                row = Preference(tenant=tenant, member_id=member_id)
                s.add(row)
            row.data = prefs.to_json()
            row.updated_at = now
            row.updated_by = by
            await s.flush()
            await self._audit(s, audit, now)

    async def people_now(
        self, wanted: Mapping[str, Iterable[str]]
    ) -> dict[tuple[str, str], PersonNow]:
        """For each tenant, these members' (and ``*``'s) preferences, zones, names and
        roles as they are now, in one query (a claimed batch's recipients and authors):
        by (tenant, member id); a member with neither a row nor preferences is absent."""
        pref, member = Preference.__table__, Member.__table__  # type: ignore[attr-defined]
        wanted_in = [(t, sorted({*ids, TENANT_DEFAULT})) for t, ids in wanted.items()]
        if not wanted_in:
            return {}

        def among(tenant_col: sa.ColumnElement[str], id_col: sa.ColumnElement[str]) -> Any:
            return sa.or_(*[(tenant_col == t) & id_col.in_(ids) for t, ids in wanted_in])

        joined = sa.and_(member.c.tenant == pref.c.tenant, member.c.id == pref.c.member_id)
        with_prefs = (
            sa.select(
                pref.c.tenant,
                pref.c.member_id,
                pref.c.data,
                member.c.timezone,
                member.c.role,
                member.c.platform_admin,
                member.c.display_name,
            )
            .select_from(pref.outerjoin(member, joined))
            .where(among(pref.c.tenant, pref.c.member_id))
        )
        without = sa.select(
            member.c.tenant,
            member.c.id,
            sa.null(),
            member.c.timezone,
            member.c.role,
            member.c.platform_admin,
            member.c.display_name,
        ).where(
            among(member.c.tenant, member.c.id),
            ~sa.exists().where(joined),
        )
        found: dict[tuple[str, str], PersonNow] = {}
        async with self._read() as conn:
            rows = (await conn.execute(sa.union_all(with_prefs, without))).all()
        for tenant, member_id, data, zone, role, platform_admin, name in rows:
            found[(tenant, member_id)] = PersonNow(
                prefs=None if data is None else Preferences.from_json(data),
                zone=zone or None,
                name=name or "",
                admin=role == Role.ADMIN.value or bool(platform_admin),
            )
        return found
