"""What every API model shares: unknown fields refused, and one example each (which
the OpenAPI document and ``/v1/docs`` show)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict


class In(BaseModel):
    """A request body or query: unknown fields are refused, not ignored."""

    model_config = ConfigDict(extra="forbid")


class Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


def example(shown: dict[str, Any], *, zoned: bool = False) -> ConfigDict:
    """A model's configuration with its one example (and, ``zoned``, ``tz`` accepted
    for ``timezone``)."""
    extra: dict[str, Any] = {"examples": [shown]}
    if zoned:
        return ConfigDict(
            extra="forbid", json_schema_extra=extra, validate_by_name=True, validate_by_alias=True
        )
    return ConfigDict(extra="forbid", json_schema_extra=extra)
