"""Members: a member's zone, what a chat platform says about them, their role, and the
first admin of a fresh database."""

from __future__ import annotations

from core.actors import Actor, ActorRef, Principal
from core.cases.base import CaseBase, check_tenant, principal_of
from core.cases.recipients import member_of
from core.errors import HeraldError, InvalidInput, NotFound
from core.models import LOCAL_TENANT, Role
from core.store import AuditEntry
from core.zones import resolve_zone


class MemberCases(CaseBase):
    """A member's time zone, their name and admin standing, and roles."""

    async def set_timezone(self, actor_id: ActorRef, tz: str) -> str:
        """Remember the actor's preferred zone; returns its canonical name."""
        actor = await self.actor(actor_id)
        name = resolve_zone(tz).key
        await self.store.save_member(
            actor.tenant,
            actor.id,
            now=self.clock.now(),
            timezone=name,
            audit=AuditEntry.by(actor, "member.timezone", "member", actor.id, {"timezone": name}),
        )
        return name

    async def set_member_timezone(self, actor_id: ActorRef, member_id: str, tz: str) -> str:
        """An admin sets ``member_id``'s zone in the admin's own tenant (the member row is
        made if Herald has none yet): where a schedule read in "their time" finds a
        Discord or email recipient's zone. ``member_id`` is a member id (``slack:U1``,
        ``discord:123``, ``email:alice@example.com``) or a person's destination
        (``slack:@U1``). Audited (``member.timezone``). PermissionDenied (audited) for a
        non-admin; InvalidInput for an unknown zone or a malformed id. Returns the zone's
        canonical name."""
        actor = await self.actor(actor_id)
        member_id = _member_id(member_id)
        if not actor.is_admin:
            why = "Only an admin can set another member's time zone; yours: herald timezone ZONE."
            raise await self.denied(actor, "member.timezone", "member", member_id, why)
        name = resolve_zone(tz).key
        await self.actor(Principal(member_id, actor.tenant))  # validates the id
        await self.store.save_member(
            actor.tenant,
            member_id,
            now=self.clock.now(),
            timezone=name,
            audit=AuditEntry.by(actor, "member.timezone", "member", member_id, {"timezone": name}),
        )
        return name

    async def sync_member(
        self,
        actor_id: ActorRef,
        *,
        display_name: str | None = None,
        platform_admin: bool | None = None,
    ) -> Actor:
        """Record what a chat platform says about a member of a tenant (name; whether
        they administer that workspace/server, which makes them an admin of that tenant
        only). Writes only when something changed; a change of admin standing is
        audited. ``platform_admin`` defaults to what the principal carries."""
        principal = principal_of(actor_id)
        actor_id, tenant = principal.id, principal.tenant
        if platform_admin is None:
            platform_admin = principal.platform_admin
        member = await self.store.get_member(tenant, actor_id)
        name_changed = display_name is not None and (
            member is None or member.display_name != display_name
        )
        was_admin = member is not None and member.platform_admin
        admin_changed = platform_admin is not None and platform_admin != was_admin
        if member is None or name_changed or admin_changed:
            audit = None
            if admin_changed:
                audit = AuditEntry(
                    f"system:{actor_id.partition(':')[0]}",
                    "member.platform_admin",
                    "member",
                    actor_id,
                    {"platform_admin": platform_admin},
                    tenant=tenant,
                    surface=principal.surface,
                )
            member = await self.store.save_member(
                tenant,
                actor_id,
                now=self.clock.now(),
                display_name=display_name,
                platform_admin=platform_admin,
                audit=audit,
            )
        return self._actor_of(principal, member)

    async def set_role(
        self, actor_id: ActorRef, member_id: str, role: str, *, tenant: str | None = None
    ) -> None:
        """An admin gives ``member_id`` a role (member, operator, admin) in ``tenant``
        (default: the admin's own; another tenant only for Herald-wide admins)."""
        actor = await self.actor(actor_id)
        where = tenant or actor.tenant
        if not actor.is_admin:
            why = "Only an admin can change roles."
            if actor.tenant == LOCAL_TENANT and not await self.admins_for(actor):
                why += " There is none yet: become the first with `herald admin init`."
            raise await self.denied(actor, "member.role", "member", member_id, why)
        try:
            new_role = Role(role)
        except ValueError as exc:
            raise InvalidInput(f"Unknown role {role!r}: use member, operator or admin.") from exc
        check_tenant(where)
        if not actor.owns_tenant_of(where):
            raise await self.denied(
                actor,
                "member.role",
                "member",
                member_id,
                f"There is no tenant {where} of yours.",
                NotFound,
            )
        await self.actor(Principal(member_id, where))  # validates the id
        await self.store.save_member(
            where,
            member_id,
            now=self.clock.now(),
            role=new_role.value,
            audit=AuditEntry.by(
                actor, "member.role", "member", member_id, {"role": new_role.value}, tenant=where
            ),
        )

    async def init_admin(self, actor_id: ActorRef, member_id: str | None = None) -> str:
        """Make the first admin of the ``local`` tenant (admins there act Herald-wide):
        the person at the terminal, or ``member_id``, on a database where nobody holds
        the admin role in ``local`` yet. Audited (``member.first_admin``). Refused, and the
        refusal audited, once such an admin exists, and from any tenant but ``local``
        (PermissionDenied); InvalidInput for a malformed id. Returns the new admin's id.
        The role is stored, so every running process reads it at its next request."""
        actor = await self.actor(actor_id)
        target = member_id or actor.id
        principal_of(Principal(target))  # validates the id
        if actor.tenant != LOCAL_TENANT:
            raise await self.denied(
                actor,
                "member.first_admin",
                "member",
                target,
                "Only the person at Herald's terminal can make its first admin "
                "(herald admin init).",
            )
        audit = AuditEntry.by(
            actor, "member.first_admin", "member", target, {"role": Role.ADMIN.value}
        )
        existing = await self.store.make_first_admin(
            LOCAL_TENANT, target, now=self.clock.now(), audit=audit
        )
        if existing:
            if target in existing:
                why = f"{target} is an admin already: give others roles with herald member role."
            else:
                why = (
                    f"This database has an admin already ({', '.join(existing)}): ask one "
                    f"to make {target} an admin (herald member role {target} admin)."
                )
            raise await self.denied(actor, "member.first_admin", "member", target, why)
        return target

    async def admins_for(self, actor_id: ActorRef) -> list[str]:
        """Who can answer the actor's requests (a dead letter's retry): ``HERALD_ADMINS``
        as this process reads it, and the admins stored for the actor's tenant and for
        ``local`` (Herald-wide). Empty: nobody yet (``herald admin init`` makes one)."""
        found = set(self.settings.admins)
        for tenant in dict.fromkeys((principal_of(actor_id).tenant, LOCAL_TENANT)):
            found.update(await self.store.admins_of(tenant))
        return sorted(found)


def _member_id(text: str) -> str:
    """A member id as written, or the member a person's destination names
    (``slack:@U1`` → ``slack:U1``; an email address as Herald stores it)."""
    text = text.strip()
    try:
        found = member_of(text)
    except HeraldError:  # not a destination: an id as written (checked by the caller)
        return text
    return found or text
