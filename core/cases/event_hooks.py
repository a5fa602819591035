"""Event hooks and the pull feed for applications (issue 38): registered by an admin or for the token's own member, scoped to the tenant."""

from __future__ import annotations

from core.cases.base import CaseBase


class EventHookCases(CaseBase):
    """Event hooks and the pull feed for applications (issue 38): registered by an admin or for the token's own member, scoped to the tenant."""
