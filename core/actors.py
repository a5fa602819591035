"""Who is acting: a member id with the role that decides what they may do."""

from __future__ import annotations

from dataclasses import dataclass

from core.models import Role


@dataclass(frozen=True)
class Actor:
    """Who is acting, with the role that decides what they may do."""

    id: str
    role: Role
    timezone: str | None

    @property
    def sees_everything(self) -> bool:
        return self.role in (Role.OPERATOR, Role.ADMIN)

    @property
    def is_admin(self) -> bool:
        return self.role is Role.ADMIN
