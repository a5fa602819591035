"""Members' push devices (``push:`` reaches every device of a member)."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlmodel import col, select

from core.channels.base import Device as DeviceRow
from core.models import Device
from core.store.base import AuditEntry, Gateway


class DeviceQueries(Gateway):
    """The device rows, always within one tenant."""

    async def devices_of(self, tenant: str, member_id: str) -> list[DeviceRow]:
        stmt = (
            select(Device)
            .where(col(Device.tenant) == tenant, col(Device.member_id) == member_id)
            .order_by(col(Device.id))
        )
        async with self._read_session() as s:
            return [
                DeviceRow(d.id or 0, d.member_id, d.token, d.label, d.platform)
                for d in (await s.execute(stmt)).scalars()
            ]

    async def add_device(self, device: Device, *, audit: AuditEntry) -> tuple[Device, bool]:
        """Register ``device`` (the same token twice for one member is the same device:
        returned, with False)."""
        async with self._session() as s:
            found = (
                await s.execute(
                    select(Device).where(
                        col(Device.tenant) == device.tenant,
                        col(Device.member_id) == device.member_id,
                        col(Device.token) == device.token,
                    )
                )
            ).scalar_one_or_none()
            if found is not None:
                return found, False
            s.add(device)
            await s.flush()
            await self._audit(s, audit, device.created_at)
            return device, True

    async def remove_device(
        self, tenant: str, member_id: str, device_id: int, *, now: datetime, audit: AuditEntry
    ) -> bool:
        """Remove one of the member's devices; False when they have none by that id."""
        async with self._session() as s:
            device = await s.get(Device, device_id)
            if device is None or device.tenant != tenant or device.member_id != member_id:
                return False
            await s.delete(device)
            await self._audit(s, audit, now)
            return True

    async def forget_device(self, tenant: str, device_id: int, reason: str) -> None:
        """The provider says the device's token is dead: it is removed (audited as
        the system's doing, with the provider's reason)."""
        now = datetime.now(UTC)
        async with self._session() as s:
            device = await s.get(Device, device_id)
            if device is None or device.tenant != tenant:
                return
            await s.delete(device)
            entry = AuditEntry(
                "system:push",
                "device.forget",
                "device",
                str(device_id),
                {"member": device.member_id, "reason": reason[:300]},
                tenant=tenant,
            )
            await self._audit(s, entry, now)
