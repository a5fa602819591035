"""Members' preferences and their tenants' defaults (core.preferences), read for many
members at once (the dispatcher reads a batch's recipients in one query)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from sqlmodel import col, select

from core.models import Member, Preference
from core.preferences import TENANT_DEFAULT, Preferences
from core.store.base import AuditEntry, Gateway


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
