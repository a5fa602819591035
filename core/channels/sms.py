"""SMS (``sms:+15551234567``) through the providers ``HERALD_SMS_PROVIDERS`` lists, in
order (core.channels.failover). Placeholder of the foundation: the providers come next."""

from __future__ import annotations

import re
from typing import Any, ClassVar

from core.channels.failover import FailoverChannel, ProviderHealth
from core.destinations import UriSyntax
from core.errors import InvalidInput

_E164 = re.compile(r"^\+[1-9][0-9]{6,14}$")


def _check_number(raw: str, target: str) -> None:
    if not _E164.match(target):
        raise InvalidInput(f"{raw!r} is not a phone number in E.164 form: use sms:+15551234567.")


class SmsChannel(FailoverChannel):
    kind: ClassVar[str] = "sms"
    uri: ClassVar[UriSyntax] = UriSyntax(
        "sms", "sms:+15551234567", _check_number, settings=("sms_providers",)
    )
    settings_hint: ClassVar[str] = (
        "TWILIO_ACCOUNT_SID, TWILIO_AUTH_TOKEN and TWILIO_FROM (HERALD_SMS_PROVIDERS)"
    )

    @classmethod
    def from_settings(cls, settings: Any, *, http: Any, health: ProviderHealth) -> SmsChannel:
        return cls([], health)
