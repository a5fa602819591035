"""Whether anything will send a new schedule: a running dispatcher, and the channel
its destination needs configured. Said to the person scheduling, as warnings."""

from __future__ import annotations

from datetime import datetime, timedelta

from core.settings import Settings
from core.store import Store

#: A dispatcher that has not heartbeated for this long is not counted as running.
RECENT = timedelta(minutes=1)


async def send_warnings(
    store: Store, settings: Settings, destination: str, *, now: datetime
) -> list[str]:
    """One sentence per reason nothing may send to ``destination`` (empty when all
    looks ready)."""
    warnings = []
    kind = destination.partition(":")[0]
    if kind == "email" and not settings.smtp_host:
        warnings.append("No SMTP server is configured (HERALD_SMTP_HOST): email cannot be sent.")
    if kind == "slack" and settings.slack_bot_token is None:
        warnings.append("No Slack token is configured (SLACK_BOT_TOKEN): Slack cannot be sent.")
    if kind == "discord" and settings.discord_bot_token is None:
        warnings.append(
            "No Discord token is configured (DISCORD_BOT_TOKEN): Discord cannot be sent."
        )
    workers = await store.running_workers()
    if not any(w.heartbeat_at >= now - RECENT for w in workers):
        warnings.append(
            "No dispatcher has reported in the last minute: nothing sends it until "
            "`herald run` runs."
        )
    return warnings
