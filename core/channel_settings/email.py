"""The ``email:`` channel's settings: the SMTP server it sends through."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr


class EmailSettings(BaseModel):
    """The ``HERALD_SMTP_*`` settings (a base of :class:`core.settings.Settings`)."""

    model_config = ConfigDict(defer_build=True)  # built as a base of Settings

    smtp_host: str | None = Field(default=None, alias="HERALD_SMTP_HOST")
    smtp_port: int | None = Field(default=None, alias="HERALD_SMTP_PORT")
    smtp_user: str | None = Field(default=None, alias="HERALD_SMTP_USER")
    smtp_password: SecretStr | None = Field(default=None, alias="HERALD_SMTP_PASSWORD")
    smtp_from: str = Field(default="Herald <herald@localhost>", alias="HERALD_SMTP_FROM")
    smtp_tls: Literal["starttls", "tls", "none"] = Field(
        default="starttls", alias="HERALD_SMTP_TLS"
    )
