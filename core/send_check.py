"""Whether anything will send a new schedule: a running dispatcher, and the channel
its destination needs configured. Said to the person scheduling, as warnings."""

from __future__ import annotations

from datetime import datetime, timedelta

from core.channels.email import email_providers
from core.channels.failover import ProviderHealth
from core.channels.sms import SmsChannel
from core.http_client import HTTPClient
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
    missing = _unconfigured(settings, kind)
    if missing is not None:
        warnings.append(missing)
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


def _unconfigured(settings: Settings, kind: str) -> str | None:
    """The warning for an ``email:``, ``sms:`` or ``push:`` destination when none of
    the providers its kind goes through has its credentials; None otherwise."""
    if kind == "email":
        # the channel's own providers, so the warning says what sending will do
        providers = email_providers(settings)
        if any(p.configured for p in providers):
            return None
        if [p.name for p in providers] == ["smtp"]:
            return "No SMTP server is configured (HERALD_SMTP_HOST): email cannot be sent."
        hints = [f"{p.settings_hint} for {p.label}" for p in providers]
        return (
            "No email provider HERALD_EMAIL_PROVIDERS lists is configured (set "
            f"{'; or '.join(hints)}): email cannot be sent."
        )
    if kind == "sms":
        # the channel as the dispatcher builds it: no connection is opened
        sms = SmsChannel.from_settings(
            settings, http=HTTPClient(lazy_tls=True), health=ProviderHealth()
        )
        if sms.providers:
            return None
        return (
            f"No SMS provider is configured (set {SmsChannel.settings_hint}): SMS cannot be sent."
        )
    if kind == "push" and not settings.fcm_service_account_file:
        return (
            "No Firebase service account is configured (FCM_SERVICE_ACCOUNT_FILE): push "
            "cannot be sent."
        )
    return None
