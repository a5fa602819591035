"""Build :class:`~core.channels.base.Delivery` objects for channel tests."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from core.channels import URI_SYNTAXES, parse_destination
from core.channels.base import Delivery
from core.destinations import Destination

OCCURRENCE = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
KEY = "k3y-0f-the-j0b_abcdefg"  # 22 url-safe characters, like the store's keys


def make_delivery(
    uri: str,
    body: str = "Stand-up in 5 minutes",
    *,
    key: str = KEY,
    attempt: int = 1,
    options: Mapping[str, Any] | None = None,
    job_id: int = 7,
    schedule_id: int = 3,
) -> Delivery:
    """A delivery of job 7 of schedule 3 to ``uri`` (a ``discord-webhook:`` one is not
    checked, so that the channel's own refusals can be tried)."""
    kind, _, target = uri.partition(":")
    if kind == "discord-webhook":
        destination = Destination(kind, target, URI_SYNTAXES[kind])
    else:
        destination = parse_destination(uri)
    return Delivery(
        job_id=job_id,
        schedule_id=schedule_id,
        destination=destination,
        body=body,
        idempotency_key=key,
        attempt=attempt,
        occurrence_at=OCCURRENCE,
        due_at=OCCURRENCE,
        options=dict(options or {}),
    )
