"""The settings of the providers ``email:`` and ``sms:`` go through, and of ``push:``:
which providers, in which order (failover), each one's credentials, and its API's base
URL. Each provider's variables are named after it (``SENDGRID_API_KEY``,
``TWILIO_AUTH_TOKEN``); the base URLs are ``HERALD_<PROVIDER>_API_URL`` so that tests
point them at local fakes."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator

#: The providers each channel kind knows, by the name ``HERALD_*_PROVIDERS`` lists.
EMAIL_PROVIDERS = ("smtp", "sendgrid", "mailgun")
SMS_PROVIDERS = ("twilio", "vonage")


def _provider_list(value: str, known: tuple[str, ...], setting: str) -> str:
    names = [n.strip().lower() for n in value.split(",") if n.strip()]
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(
            f"{setting} names {', '.join(unknown)}: the providers are {', '.join(known)}"
        )
    if len(set(names)) != len(names):
        raise ValueError(f"{setting} names a provider twice")
    return ",".join(names)


class ProviderSettings(BaseModel):
    """The ``HERALD_EMAIL_PROVIDERS``/``HERALD_SMS_PROVIDERS`` lists and each provider's
    settings (a base of :class:`core.settings.Settings`)."""

    model_config = ConfigDict(defer_build=True)  # built as a base of Settings

    #: The providers ``email:`` goes through, in order: the next is tried when one is
    #: down (refused connection, timeout, 5xx, a long 429).
    email_providers: str = Field(default="smtp", alias="HERALD_EMAIL_PROVIDERS")
    #: The providers ``sms:`` goes through, in order.
    sms_providers: str = Field(default="twilio", alias="HERALD_SMS_PROVIDERS")
    #: Seconds a provider found down is skipped by every dispatcher before it is tried again.
    provider_cooldown: float = Field(
        default=60.0, gt=0, le=86_400, alias="HERALD_PROVIDER_COOLDOWN"
    )
    #: The sender of email sent through an HTTP provider (default HERALD_SMTP_FROM).
    email_from: str | None = Field(default=None, alias="HERALD_EMAIL_FROM")

    # SendGrid (v3 Mail Send; signed Event Webhook)
    #: The SendGrid API key (Mail Send permission); unset, ``sendgrid`` is not configured.
    sendgrid_api_key: SecretStr | None = Field(default=None, alias="SENDGRID_API_KEY")
    #: The base URL of SendGrid's API (a local fake in tests).
    sendgrid_api_url: str = Field(
        default="https://api.sendgrid.com", alias="HERALD_SENDGRID_API_URL"
    )
    #: The Event Webhook's verification key (base64 ECDSA public key, from SendGrid's
    #: Mail Settings); unset, /receipts/sendgrid refuses every callback.
    sendgrid_webhook_public_key: str | None = Field(
        default=None, alias="SENDGRID_WEBHOOK_PUBLIC_KEY"
    )

    # Mailgun (Messages API; HMAC-signed webhooks)
    #: The Mailgun API key; ``mailgun`` is configured with it and MAILGUN_DOMAIN.
    mailgun_api_key: SecretStr | None = Field(default=None, alias="MAILGUN_API_KEY")
    #: The Mailgun sending domain (``mg.example.com``) messages go out through.
    mailgun_domain: str | None = Field(default=None, alias="MAILGUN_DOMAIN")
    #: The base URL of Mailgun's API (``https://api.eu.mailgun.net`` for the EU region;
    #: a local fake in tests).
    mailgun_api_url: str = Field(default="https://api.mailgun.net", alias="HERALD_MAILGUN_API_URL")
    #: The HTTP webhook signing key (Mailgun's control panel); unset, /receipts/mailgun
    #: refuses every callback.
    mailgun_webhook_signing_key: SecretStr | None = Field(
        default=None, alias="MAILGUN_WEBHOOK_SIGNING_KEY"
    )

    # Twilio (Programmable Messaging; X-Twilio-Signature on status callbacks)
    #: The Twilio account SID (``AC…``); ``twilio`` is configured with it,
    #: TWILIO_AUTH_TOKEN and TWILIO_FROM.
    twilio_account_sid: str | None = Field(default=None, alias="TWILIO_ACCOUNT_SID")
    #: The Twilio auth token: it signs in, and verifies the status callbacks at
    #: /receipts/twilio.
    twilio_auth_token: SecretStr | None = Field(default=None, alias="TWILIO_AUTH_TOKEN")
    #: The sending number (E.164) or a Messaging Service SID (MG…).
    twilio_from: str | None = Field(default=None, alias="TWILIO_FROM")
    #: The base URL of Twilio's API (a local fake in tests).
    twilio_api_url: str = Field(default="https://api.twilio.com", alias="HERALD_TWILIO_API_URL")

    # Vonage (SMS API)
    #: The Vonage API key; ``vonage`` is configured with it, VONAGE_API_SECRET and
    #: VONAGE_FROM.
    vonage_api_key: str | None = Field(default=None, alias="VONAGE_API_KEY")
    #: The Vonage API secret.
    vonage_api_secret: SecretStr | None = Field(default=None, alias="VONAGE_API_SECRET")
    #: The sender: a number (E.164; a leading + is dropped) or an alphanumeric sender id.
    vonage_from: str | None = Field(default=None, alias="VONAGE_FROM")
    #: The base URL of Vonage's SMS API (a local fake in tests).
    vonage_api_url: str = Field(default="https://rest.nexmo.com", alias="HERALD_VONAGE_API_URL")

    # Firebase Cloud Messaging (HTTP v1; OAuth2 with a service account)
    #: The service account key file (JSON) Herald signs its token requests with.
    fcm_service_account_file: str | None = Field(default=None, alias="FCM_SERVICE_ACCOUNT_FILE")
    #: The base URL of FCM's HTTP v1 API (a local fake in tests).
    fcm_api_url: str = Field(default="https://fcm.googleapis.com", alias="HERALD_FCM_API_URL")
    #: Where the OAuth2 token is asked for (default: the key file's token_uri).
    fcm_token_url: str | None = Field(default=None, alias="HERALD_FCM_TOKEN_URL")

    @field_validator("email_providers")
    @classmethod
    def _email(cls, value: str) -> str:
        return _provider_list(value, EMAIL_PROVIDERS, "HERALD_EMAIL_PROVIDERS")

    @field_validator("sms_providers")
    @classmethod
    def _sms(cls, value: str) -> str:
        return _provider_list(value, SMS_PROVIDERS, "HERALD_SMS_PROVIDERS")

    def sender_address(self) -> str:
        """The From of email through an HTTP provider."""
        return self.email_from or str(getattr(self, "smtp_from", "Herald <herald@localhost>"))
