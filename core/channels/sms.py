"""SMS (``sms:+12025550123``) through the providers ``HERALD_SMS_PROVIDERS`` lists, in
order (default ``twilio``; core.channels.failover): Twilio's Programmable Messaging and
Vonage's SMS API (core.channels.sms_providers).

A number is checked when a schedule is saved: written in E.164 (``+``, the country
code, the number; no spaces) and a number of its country's lengths and ranges, as
libphonenumber (the ``phonenumbers`` package) knows them, so a typo is refused then,
not found by a provider at send time. The text's SMS segments are checked then too
(core.limits, core.sms_text).
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

from core.channels.failover import FailoverChannel, Provider, ProviderHealth
from core.channels.sms_providers import TwilioProvider, VonageProvider
from core.destinations import UriSyntax
from core.errors import InvalidInput
from core.http_client import HTTPClient
from core.ratelimit import RateLimit

#: ``+`` and 7 to 15 digits, the first not 0 (ITU-T E.164's shape).
_E164 = re.compile(r"^\+[1-9][0-9]{6,14}$")
#: A number as people write it: what is worth offering its E.164 form for.
_WRITTEN = re.compile(r"^\+[0-9 ().\-]{6,30}$")
EXAMPLE = "sms:+12025550123"


def _check_number(raw: str, target: str) -> None:
    """A valid number written in E.164; InvalidInput in one sentence otherwise (with
    the E.164 form of a valid number written with spaces or dashes)."""
    import phonenumbers  # ~20 ms: loaded by the first sms: destination, not by every CLI

    canonical = None
    if _E164.match(target) or _WRITTEN.match(target):
        try:
            number = phonenumbers.parse(target, None)
        except phonenumbers.NumberParseException:
            number = None
        if number is not None and phonenumbers.is_valid_number(number):
            canonical = phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.E164)
    if canonical == target:
        return
    if canonical is not None:
        raise InvalidInput(f"{raw!r} is not written in E.164: write it sms:{canonical}.")
    raise InvalidInput(
        f"{raw!r} is not a phone number: write it in E.164 (+, the country code, the "
        f"number), e.g. {EXAMPLE}."
    )


class SmsChannel(FailoverChannel):
    """Text messages to phone numbers, through Twilio and/or Vonage with failover."""

    kind: ClassVar[str] = "sms"
    uri: ClassVar[UriSyntax] = UriSyntax(
        "sms",
        EXAMPLE,
        _check_number,
        settings=(
            "sms_providers",
            "twilio_account_sid",
            "twilio_auth_token",
            "twilio_from",
            "twilio_api_url",
            "vonage_api_key",
            "vonage_api_secret",
            "vonage_from",
            "vonage_api_url",
            "public_url",
        ),
    )
    settings_hint: ClassVar[str] = (
        "TWILIO_ACCOUNT_SID, TWILIO_AUTH_TOKEN and TWILIO_FROM, or VONAGE_API_KEY, "
        "VONAGE_API_SECRET and VONAGE_FROM, as HERALD_SMS_PROVIDERS lists them"
    )
    #: One message a second to one number. Twilio documents 1 message segment per
    #: second per US long code (a sender's number:
    #: https://help.twilio.com/articles/115002943027), and queues what a sender is
    #: given faster. The dispatcher keeps this bucket per *destination* (the
    #: recipient's number, core.ratelimit), counting messages, not segments: no
    #: recipient is sent a burst, and a sender's whole rate stays Twilio's queueing.
    rate_limit: ClassVar[RateLimit] = RateLimit(rate=1.0, burst=1.0)

    @classmethod
    def from_settings(
        cls, settings: Any, *, http: HTTPClient, health: ProviderHealth
    ) -> SmsChannel:
        """The providers ``HERALD_SMS_PROVIDERS`` names, in its order (those without
        credentials are left out by :class:`FailoverChannel`)."""
        timeout = settings.http_timeout
        made: dict[str, Provider] = {}
        for name in settings.sms_providers.split(","):
            if name == "twilio":
                made[name] = TwilioProvider(
                    account_sid=settings.twilio_account_sid,
                    auth_token=settings.twilio_auth_token,
                    sender=settings.twilio_from,
                    api_url=settings.twilio_api_url,
                    public_url=settings.public_url,
                    http=http,
                    timeout=timeout,
                )
            elif name == "vonage":
                made[name] = VonageProvider(
                    api_key=settings.vonage_api_key,
                    api_secret=settings.vonage_api_secret,
                    sender=settings.vonage_from,
                    api_url=settings.vonage_api_url,
                    http=http,
                    timeout=timeout,
                )
        return cls(list(made.values()), health)
