"""The API's preferences: ``GET|PUT /v1/me/preferences`` (the token's member: where
reminders to them go, who may remind them, whom they block, their quiet hours) and
``GET|PUT /v1/tenant/preferences`` (the tenant's defaults; admins, with an admin token).

Their models and handlers live here, their routes in :data:`ROUTES`, which
bot/api/routes.py adds to the table. The use cases (``core.cases.PreferenceCases``)
check rights, read every change before the one write and audit; a PUT names only what
it changes (the fields of ``core.cases.PreferenceChanges``) and answers what applies now.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, Strict

from bot.api.model_base import In, Out, example
from bot.api.requests import Call, Reply, Route
from core.cases import MAX_MEMBER_REF, MAX_PLACE, PreferenceChanges, prefs_json
from core.preferences import MAX_BLOCKED

_Member = Annotated[str, Field(min_length=1, max_length=MAX_MEMBER_REF)]
_Day = Annotated[str, Field(min_length=1, max_length=20)]
_QUIET_EXAMPLE = {"window": "22:00-08:00", "days": ["sat", "sun"]}


class QuietIn(In):
    """Quiet hours as answers show them (a GET's ``quiet`` may be sent back as is)."""

    window: str | None = Field(
        default=None, max_length=40, description="A daily window in the member's zone."
    )
    days: list[_Day] | None = Field(default=None, max_length=7, description="Whole quiet days.")


class PreferencesIn(In):
    """What to change; a field left out (or null) stays as it is."""

    model_config = example(
        {
            "place": "email:ada@example.com",
            "accept_from": "admins",
            "block": ["slack:U0BOB"],
            "quiet": "22:00-08:00",
            "quiet_days": ["weekends"],
        }
    )

    place: str | None = Field(
        default=None,
        max_length=MAX_PLACE,
        description="Where reminders to the member go: their DM (slack:@U123, "
        "discord:@<user id>), an email or SMS address, or push:<member>; an empty string "
        "clears it (they go where the author sends them). Not in a tenant's defaults.",
    )
    accept_from: Literal["anyone", "admins", "self", ""] | None = Field(
        default=None,
        description="Who may remind the member: anyone in the tenant, only admins, or "
        "nobody but themselves (self); an empty string clears it (the tenant's default).",
    )
    block: list[_Member] | None = Field(
        default=None,
        max_length=MAX_BLOCKED,
        description="Members whose reminders are refused, added to the list (slack:U123, "
        "slack:@U123 or @U123).",
    )
    unblock: list[_Member] | None = Field(
        default=None, max_length=MAX_BLOCKED, description="Members taken off the list."
    )
    quiet: Annotated[str, Field(max_length=40)] | QuietIn | None = Field(
        default=None,
        description='A daily quiet window in the member\'s zone, "22:00-08:00" (an empty '
        'string clears it), or {"window", "days"} as answers show it.',
    )
    quiet_days: list[_Day] | None = Field(
        default=None,
        max_length=7,
        description='Whole quiet days: ["sat", "sun"] or ["weekends"]; [] clears them.',
    )
    hold_channels: Annotated[bool, Strict()] | None = Field(
        default=None,
        description="A tenant's defaults only: hold messages to channels in the tenant's "
        "quiet hours too (by default only messages to a person are held).",
    )
    notices: Annotated[bool, Strict()] | None = Field(
        default=None,
        description="Whether the member is told by direct message (Slack, Discord) when "
        "a message they scheduled fails; on unless turned off.",
    )


class QuietOut(Out):
    window: str | None = Field(description="The daily window (22:00-08:00), or null.")
    days: list[str] = Field(description="Whole quiet days (mon … sun).")


class PreferencesOut(Out):
    """One record: a member's own, a tenant's defaults, or what applies (null: not set)."""

    model_config = example(
        {
            "place": None,
            "accept_from": "admins",
            "blocked": ["slack:U0BOB"],
            "quiet": _QUIET_EXAMPLE,
            "quiet_text": "22:00–08:00 and weekends",
            "hold_channels": None,
            "notices": None,
        }
    )

    place: str | None
    accept_from: Literal["anyone", "admins", "self"] | None
    blocked: list[str]
    quiet: QuietOut | None
    quiet_text: str | None = Field(description="The quiet hours in words.")
    hold_channels: bool | None
    notices: bool | None = Field(description="Told of failed messages by direct message.")


_OWN: dict[str, Any] = {
    "place": "email:ada@example.com",
    "accept_from": "admins",
    "blocked": ["slack:U0BOB"],
    "quiet": None,
    "quiet_text": None,
    "hold_channels": None,
    "notices": False,
}
_TENANT: dict[str, Any] = {
    "place": None,
    "accept_from": None,
    "blocked": [],
    "quiet": _QUIET_EXAMPLE,
    "quiet_text": "22:00–08:00 and weekends",
    "hold_channels": False,
    "notices": None,
}


class MemberPreferencesOut(Out):
    model_config = example(
        {
            "member": "slack:U0ADA",
            "zone": "Europe/Berlin",
            "own": _OWN,
            "tenant": _TENANT,
            "effective": {**_OWN, "quiet": _QUIET_EXAMPLE, "quiet_text": _TENANT["quiet_text"]},
            "summary": "reminders to email:ada@example.com · from admins only · 1 blocked · "
            "quiet 22:00–08:00 and weekends",
        }
    )

    member: str
    zone: str = Field(description="The zone the member's quiet hours are read in.")
    own: PreferencesOut = Field(description="What the member set themselves.")
    tenant: PreferencesOut = Field(description="The tenant's defaults.")
    effective: PreferencesOut = Field(description="What applies: their own over the defaults.")
    summary: str = Field(description="What applies, in words.")


class TenantPreferencesOut(Out):
    model_config = example({"tenant": "slack:T0123", "defaults": _TENANT})

    tenant: str
    defaults: PreferencesOut = Field(
        description="Every member's defaults: a member's own override them; blocks add up."
    )


def _changes(body: PreferencesIn) -> PreferenceChanges:
    data: dict[str, Any] = body.model_dump(exclude_unset=True, exclude_none=True)
    return PreferenceChanges.from_mapping(data)


async def my_preferences(call: Call) -> Reply:
    shown = await call.herald.preferences(call.principal)
    return Reply(MemberPreferencesOut.model_validate(shown.to_json()))


async def set_my_preferences(call: Call) -> Reply:
    shown = await call.herald.set_preferences(call.principal, _changes(call.body))
    return Reply(MemberPreferencesOut.model_validate(shown.to_json()))


def _tenant(call: Call, prefs: Any) -> Reply:
    return Reply(TenantPreferencesOut(tenant=call.token.tenant, defaults=prefs_json(prefs)))


async def tenant_preferences(call: Call) -> Reply:
    return _tenant(call, await call.herald.tenant_preferences(call.principal))


async def set_tenant_preferences(call: Call) -> Reply:
    return _tenant(
        call, await call.herald.set_tenant_preferences(call.principal, _changes(call.body))
    )


_PUT = (
    "Names only what changes (the other fields stay); bad input changes nothing (422). "
    "Answers what applies now."
)
#: The routes of preferences (bot/api/routes.py adds them).
ROUTES: tuple[Route, ...] = (
    Route(
        "GET",
        "/me/preferences",
        "getMyPreferences",
        "The token's member's preferences: their own, the tenant's defaults, what applies",
        "read",
        my_preferences,
        MemberPreferencesOut,
        tag="preferences",
    ),
    Route(
        "PUT",
        "/me/preferences",
        "setMyPreferences",
        "Change the token's member's preferences",
        "write",
        set_my_preferences,
        MemberPreferencesOut,
        body=PreferencesIn,
        problems=(422,),
        tag="preferences",
        description=_PUT,
    ),
    Route(
        "GET",
        "/tenant/preferences",
        "getTenantPreferences",
        "The tenant's default preferences (admins)",
        "admin",
        tenant_preferences,
        TenantPreferencesOut,
        tag="preferences",
        description="Refused (403) to anyone but an admin of the tenant.",
    ),
    Route(
        "PUT",
        "/tenant/preferences",
        "setTenantPreferences",
        "Change the tenant's default preferences (admins)",
        "admin",
        set_tenant_preferences,
        TenantPreferencesOut,
        body=PreferencesIn,
        problems=(422,),
        tag="preferences",
        description=_PUT + " Refused (403) to anyone but an admin of the tenant.",
    ),
)
