"""The ``email:`` channel's settings: the SMTP server it sends through."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr


class EmailSettings(BaseModel):
    """The ``HERALD_SMTP_*`` settings (a base of :class:`core.settings.Settings`)."""

    model_config = ConfigDict(defer_build=True)  # built as a base of Settings

    #: The SMTP server's host name; unset, the ``smtp`` provider is not configured.
    smtp_host: str | None = Field(default=None, alias="HERALD_SMTP_HOST")
    #: The SMTP server's port; unset: 587 with ``starttls``, 465 with ``tls``, 25 with
    #: ``none``.
    smtp_port: int | None = Field(default=None, alias="HERALD_SMTP_PORT")
    #: The user name Herald logs in to the SMTP server with; unset: no login.
    smtp_user: str | None = Field(default=None, alias="HERALD_SMTP_USER")
    #: The password of that login.
    smtp_password: SecretStr | None = Field(default=None, alias="HERALD_SMTP_PASSWORD")
    #: The From of every email (``Name <address>``); also through SendGrid and
    #: Mailgun unless HERALD_EMAIL_FROM is set.
    smtp_from: str = Field(default="Herald <herald@localhost>", alias="HERALD_SMTP_FROM")
    #: How the connection is encrypted: ``starttls`` (upgraded after connecting), ``tls``
    #: (from the start) or ``none`` (local relays only).
    smtp_tls: Literal["starttls", "tls", "none"] = Field(
        default="starttls", alias="HERALD_SMTP_TLS"
    )
