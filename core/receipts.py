"""Delivery receipts: what a provider reports of a message after it accepted it
(Twilio's status callbacks, SendGrid's and Mailgun's event webhooks), read into one
:class:`ReceiptReport` each. The HTTP side (``/receipts/<provider>``, each provider's
signature checked) is :mod:`bot.receipts`; the store moves the attempt on
(:meth:`core.store.Store.take_receipt`)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

#: Each provider's name in a sentence, by the name the settings and the log use.
LABELS: dict[str, str] = {
    "smtp": "SMTP",
    "sendgrid": "SendGrid",
    "mailgun": "Mailgun",
    "twilio": "Twilio",
    "vonage": "Vonage",
    "fcm": "Firebase Cloud Messaging",
    "ntfy": "ntfy",
}


def provider_label(provider: str) -> str:
    """``twilio`` → ``Twilio`` (an unknown name as it is)."""
    return LABELS.get(provider, provider)


@dataclass(frozen=True, slots=True)
class ReceiptReport:
    """One provider report of one message."""

    provider: str
    #: The provider's id of the message, as its send answer gave it.
    message_id: str
    #: delivered, undelivered or bounced (core.models.Receipt); intermediate statuses
    #: (queued, sent) are not reports.
    status: str
    at: datetime
    #: The provider's words of a failure (its error code and reason); "" for none.
    detail: str = ""
