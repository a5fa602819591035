"""Members' push devices: the FCM registration tokens ``push:MEMBER`` sends to
(``herald member device add|list|remove``, ``/v1/me/devices``), and the save-time
check of a ``push:`` destination.

A device belongs to one member in one tenant. A member adds, lists and removes their
own; an admin those of a member of their tenant (as with ``herald member zone``), and a
Herald-wide admin those of any tenant. Adding and removing are audited (``device.add``,
``device.remove``, the token shown by its last 6 characters only).

Bounds: a token is 1 to 4,096 characters of FCM's alphabet (letters, digits, ``-``,
``_`` and ``:``), a label at most 100 characters on one line, a platform android, ios
or web, and a member holds at most :data:`MAX_DEVICES` devices: each is one FCM
request per delivery, so the cap bounds what one schedule's message costs and how long
its send takes, far above the phones, tablets and browsers one person uses.
"""

from __future__ import annotations

import re

from core.actors import Actor, ActorRef, Principal
from core.cases.base import CaseBase, check_tenant, principal_of
from core.channels.base import Device
from core.destinations import Destination
from core.errors import InvalidInput, NotFound
from core.models import Device as DeviceRow
from core.store import AuditEntry, Store

#: The most devices one member may register in a tenant (see the module).
MAX_DEVICES = 20
DEVICE_TOKEN_MAX = 4096
DEVICE_LABEL_MAX = 100
DEVICE_PLATFORMS = ("android", "ios", "web")
_TOKEN = re.compile(r"^[A-Za-z0-9_:-]+$")


def token_tail(token: str) -> str:
    """What is ever shown of a device token: its last 6 characters."""
    return "…" + token[-6:]


def check_token(token: str) -> str:
    token = token.strip()
    if not token or len(token) > DEVICE_TOKEN_MAX or not _TOKEN.match(token):
        raise InvalidInput(
            f"That is not an FCM registration token: 1 to {DEVICE_TOKEN_MAX:,} characters of "
            "letters, digits, -, _ and : (what the app's getToken() returns)."
        )
    return token


def check_label(label: str) -> str:
    label = " ".join((label or "").split())
    if len(label) > DEVICE_LABEL_MAX or not label.isprintable():
        raise InvalidInput(
            f"A device's label is at most {DEVICE_LABEL_MAX} characters on one line."
        )
    return label


def check_platform(platform: str) -> str:
    platform = (platform or "").strip().lower()
    if platform and platform not in DEVICE_PLATFORMS:
        raise InvalidInput(f"Unknown platform {platform!r}: use {', '.join(DEVICE_PLATFORMS)}.")
    return platform


async def check_push_member(store: Store, tenant: str, destination: Destination) -> None:
    """Refuse (InvalidInput) a ``push:`` destination whose member has no device in
    ``tenant``, the tenant the schedule is saved in: nothing would ever reach them."""
    member = destination.target
    if not await store.devices_of(tenant, member):
        raise InvalidInput(
            f"{member} has no registered device here, so push:{member} would reach "
            "nobody: they can add one with `herald member device add` (or POST "
            "/v1/me/devices)."
        )


class DeviceCases(CaseBase):
    """A member's push devices: added, listed, removed."""

    async def _device_owner(
        self, actor: Actor, member: str | None, tenant: str | None, action: str
    ) -> tuple[str, str]:
        """Whose devices ``actor`` names, and in which tenant: their own by default; a
        member of their tenant's as an admin; any tenant's as a Herald-wide admin.
        Refusals are audited (``<action>.denied``) and say nothing of another tenant."""
        where = tenant or actor.tenant
        check_tenant(where)
        whose = (member or actor.id).strip()
        principal_of(Principal(whose, where))  # a well-formed member id
        if where != actor.tenant and not actor.herald_wide:
            raise await self.denied(
                actor, action, "member", whose, f"There is no tenant {where} of yours.", NotFound
            )
        if (whose != actor.id or where != actor.tenant) and not actor.is_admin:
            raise await self.denied(
                actor,
                action,
                "member",
                whose,
                "Only an admin can manage another member's devices; yours: "
                "herald member device add TOKEN.",
            )
        return whose, where

    async def add_device(
        self,
        actor_id: ActorRef,
        token: str,
        *,
        label: str = "",
        platform: str = "",
        member: str | None = None,
        tenant: str | None = None,
    ) -> tuple[DeviceRow, bool]:
        """Register an FCM token for ``member`` (default: the actor) in ``tenant``
        (default: the actor's). Returns the device and whether it is new (the same
        token again is the same device). InvalidInput for a bad token, label or
        platform, or past :data:`MAX_DEVICES`; PermissionDenied/NotFound (audited) for
        someone else's devices without the rights."""
        actor = await self.actor(actor_id)
        token, label, platform = check_token(token), check_label(label), check_platform(platform)
        whose, where = await self._device_owner(actor, member, tenant, "device.add")
        existing = await self.store.devices_of(where, whose)
        if len(existing) >= MAX_DEVICES and all(d.token != token for d in existing):
            raise InvalidInput(
                f"{whose} has {MAX_DEVICES} devices already, the most one member may have: "
                "remove one first (herald member device remove ID)."
            )
        now = self.clock.now()
        details = {"member": whose, "device_token": token_tail(token), "platform": platform}
        if label:
            details["label"] = label
        return await self.store.add_device(
            DeviceRow(
                tenant=where,
                member_id=whose,
                token=token,
                label=label,
                platform=platform,
                created_at=now,
            ),
            audit=AuditEntry.by(actor, "device.add", "member", whose, details, tenant=where),
        )

    async def list_devices(
        self, actor_id: ActorRef, *, member: str | None = None, tenant: str | None = None
    ) -> list[Device]:
        """The devices of ``member`` (default: the actor) in ``tenant``, oldest first."""
        actor = await self.actor(actor_id)
        whose, where = await self._device_owner(actor, member, tenant, "device.list")
        return await self.store.devices_of(where, whose)

    async def remove_device(
        self,
        actor_id: ActorRef,
        device_id: int,
        *,
        member: str | None = None,
        tenant: str | None = None,
    ) -> Device:
        """Remove one of ``member``'s devices (audited ``device.remove``) and return
        it. NotFound when they have none by that id (another member's or tenant's is
        not named)."""
        actor = await self.actor(actor_id)
        whose, where = await self._device_owner(actor, member, tenant, "device.remove")
        theirs = {d.id: d for d in await self.store.devices_of(where, whose)}
        gone = device_id in theirs and await self.store.remove_device(
            where,
            whose,
            device_id,
            now=self.clock.now(),
            audit=AuditEntry.by(
                actor, "device.remove", "member", whose, {"device": device_id}, tenant=where
            ),
        )
        if not gone:
            raise NotFound(f"{whose} has no device {device_id}: see herald member device list.")
        return theirs[device_id]
