"""Named templates (core.render) and the schedules that use them: every query scoped to
the tenant its caller names.

A template's row holds its current version's parts, and ``template_version`` every
version as it was saved. A schedule using one carries the version it sends and a copy
of that version's parts (``schedule.body`` and its options), so that a claim reads
nothing more; :meth:`TemplateQueries.save_template_version` moves the schedules that
follow an edit to the new version in the transaction that saves it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlmodel import col, select

from core.errors import Conflict
from core.models import Schedule, ScheduleState, Template, TemplateVersion
from core.store.base import AuditEntry, Gateway
from core.store.paging import has_prefix

SCHEDULE = Schedule.__table__  # type: ignore[attr-defined]
TEMPLATE = Template.__table__  # type: ignore[attr-defined]
#: The states of a schedule that still sends: what "used by" counts.
LIVE = (ScheduleState.ACTIVE.value, ScheduleState.PAUSED.value)


@dataclass(frozen=True)
class Moved:
    """A schedule a template edit moves to its new version: its new body and options
    (the version's parts copied in), and the version it was on when read (a schedule
    changed since is not moved: the edit is refused with Conflict)."""

    schedule_id: int
    from_version: int
    #: The schedule's own version when read (an edit of it since: Conflict).
    schedule_version: int
    body: str
    options: dict[str, Any]


def version_of(template: Template, author: str, at: datetime) -> TemplateVersion:
    """The version row of ``template``'s current parts."""
    assert template.id is not None
    return TemplateVersion(
        template_id=template.id,
        version=template.version,
        body=template.body,
        subject=template.subject,
        blocks=template.blocks,
        embeds=template.embeds,
        variables=template.variables,
        author=author,
        created_at=at,
    )


class TemplateQueries(Gateway):
    """Named templates: add, read, list with their users, save a version, remove."""

    async def add_template(self, template: Template, *, audit: AuditEntry) -> Template:
        """Insert ``template`` as its version 1, audited in the same transaction.
        Conflict when its tenant has a template of that name already."""
        try:
            async with self._session() as s:
                s.add(template)
                await s.flush()
                s.add(version_of(template, template.created_by, template.created_at))
                entry = replace(audit, object_id=str(template.id), tenant=template.tenant)
                await self._audit(s, entry, template.created_at)
        except sa.exc.IntegrityError:
            raise Conflict(
                f"There is a template named {template.name!r} already: edit it "
                f"(herald template edit {template.name}) or choose another name."
            ) from None
        return template

    async def get_template(self, tenant: str, name: str) -> Template | None:
        stmt = select(Template).where(col(Template.tenant) == tenant, col(Template.name) == name)
        async with self._read_session() as s:
            return (await s.execute(stmt)).scalars().first()

    async def template_names(self, tenant: str, prefix: str = "") -> list[str]:
        """The names of ``tenant``'s templates starting with ``prefix``, in order (no
        use counts: what autocomplete asks at every key)."""
        stmt = sa.select(TEMPLATE.c.name).where(TEMPLATE.c.tenant == tenant)
        if prefix:
            stmt = stmt.where(has_prefix(TEMPLATE.c.name, prefix))
        async with self._read() as conn:
            return [str(n) for n in (await conn.execute(stmt.order_by(TEMPLATE.c.name))).scalars()]

    async def list_templates(self, tenant: str) -> list[tuple[Template, int]]:
        """The templates of ``tenant`` by name, each with how many live schedules
        (active or paused) use it."""
        users = (
            sa.select(sa.func.count())
            .select_from(SCHEDULE)
            .where(
                SCHEDULE.c.template_id == TEMPLATE.c.id,
                SCHEDULE.c.tenant == tenant,
                SCHEDULE.c.state.in_(LIVE),
            )
            .scalar_subquery()
        )
        stmt = (
            select(Template, users)
            .where(col(Template.tenant) == tenant)
            .order_by(col(Template.name))
        )
        async with self._read_session() as s:
            return [(row[0], int(row[1])) for row in (await s.execute(stmt)).all()]

    async def template_versions(self, tenant: str, template_id: int) -> list[TemplateVersion]:
        """Every version of a template of ``tenant``, newest first."""
        stmt = (
            select(TemplateVersion)
            .join(Template, col(Template.id) == col(TemplateVersion.template_id))
            .where(col(Template.tenant) == tenant, col(TemplateVersion.template_id) == template_id)
            .order_by(col(TemplateVersion.version).desc())
        )
        async with self._read_session() as s:
            return list((await s.execute(stmt)).scalars())

    async def template_version(
        self, tenant: str, template_id: int, version: int
    ) -> TemplateVersion | None:
        stmt = (
            select(TemplateVersion)
            .join(Template, col(Template.id) == col(TemplateVersion.template_id))
            .where(
                col(Template.tenant) == tenant,
                col(TemplateVersion.template_id) == template_id,
                col(TemplateVersion.version) == version,
            )
        )
        async with self._read_session() as s:
            return (await s.execute(stmt)).scalars().first()

    async def template_users(self, tenant: str, template_id: int) -> list[Schedule]:
        """The live schedules (active or paused) of ``tenant`` using a template, by id."""
        stmt = (
            select(Schedule)
            .where(
                col(Schedule.tenant) == tenant,
                col(Schedule.template_id) == template_id,
                col(Schedule.state).in_(LIVE),
            )
            .order_by(col(Schedule.id))
        )
        async with self._read_session() as s:
            return list((await s.execute(stmt)).scalars())

    async def save_template_version(
        self,
        template: Template,
        *,
        expected_version: int,
        new_version: bool,
        moved: Sequence[Moved],
        audit: AuditEntry,
        now: datetime,
    ) -> Template:
        """Save ``template`` (its parts as they are now; a new version row when
        ``new_version``) over ``expected_version``, and move ``moved`` schedules to it,
        each bumped a version (a person's concurrent edit of one gets Conflict), in one
        transaction with the audit row. Conflict when the template or one of the
        schedules changed since they were read; nothing is saved then."""
        assert template.id is not None
        values = {
            "version": template.version,
            "body": template.body,
            "subject": template.subject,
            "blocks": template.blocks,
            "embeds": template.embeds,
            "variables": template.variables,
            "description": template.description,
            "updated_by": template.updated_by,
            "updated_at": now,
        }
        async with self._session() as s:
            done = await s.execute(
                sa.update(TEMPLATE)
                .where(
                    TEMPLATE.c.id == template.id,
                    TEMPLATE.c.tenant == template.tenant,
                    TEMPLATE.c.version == expected_version,
                )
                .values(**values)
            )
            if done.rowcount != 1:  # type: ignore[attr-defined]
                raise Conflict(
                    f"Template {template.name!r} changed since you read it (now past version "
                    f"{expected_version}): read it again and redo your edit."
                )
            if new_version:
                s.add(version_of(template, template.updated_by, now))
            for one in moved:
                done = await s.execute(
                    sa.update(SCHEDULE)
                    .where(
                        SCHEDULE.c.id == one.schedule_id,
                        SCHEDULE.c.tenant == template.tenant,
                        SCHEDULE.c.template_id == template.id,
                        SCHEDULE.c.template_version == one.from_version,
                        SCHEDULE.c.version == one.schedule_version,
                        SCHEDULE.c.state.in_(LIVE),
                    )
                    .values(
                        body=one.body,
                        options=one.options,
                        template_version=template.version,
                        version=SCHEDULE.c.version + 1,
                        updated_at=now,
                    )
                )
                if done.rowcount != 1:  # type: ignore[attr-defined]
                    raise Conflict(
                        f"Schedule {one.schedule_id}, which uses template {template.name!r}, "
                        "changed while it was being edited: try the edit again."
                    )
            await self._audit(
                s, replace(audit, object_id=str(template.id), tenant=template.tenant), now
            )
        return template

    async def remove_template(
        self, tenant: str, template_id: int, *, audit: AuditEntry, now: datetime
    ) -> list[int]:
        """Remove a template of ``tenant`` and its versions, unless a live schedule
        uses it: then nothing changes and their ids are returned (empty: removed).
        Ended and cancelled schedules that used it keep their text and lose the link."""
        async with self._session() as s:
            users = (
                (
                    await s.execute(
                        sa.select(SCHEDULE.c.id)
                        .where(
                            SCHEDULE.c.tenant == tenant,
                            SCHEDULE.c.template_id == template_id,
                            SCHEDULE.c.state.in_(LIVE),
                        )
                        .order_by(SCHEDULE.c.id)
                    )
                )
                .scalars()
                .all()
            )
            if users:
                return [int(i) for i in users]
            await s.execute(
                sa.update(SCHEDULE)
                .where(SCHEDULE.c.tenant == tenant, SCHEDULE.c.template_id == template_id)
                .values(template_id=None)
            )
            await s.execute(
                sa.delete(TemplateVersion.__table__).where(  # type: ignore[attr-defined]
                    TemplateVersion.__table__.c.template_id == template_id  # type: ignore[attr-defined]
                )
            )
            await s.execute(
                sa.delete(TEMPLATE).where(TEMPLATE.c.id == template_id, TEMPLATE.c.tenant == tenant)
            )
            await self._audit(s, replace(audit, object_id=str(template_id), tenant=tenant), now)
        return []
