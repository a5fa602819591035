"""The API's event hooks and event feed (issue 38): ``POST /v1/event-hooks`` (the
signing secret answered once), ``GET /v1/event-hooks``, ``GET`` and ``DELETE
/v1/event-hooks/{hook_id}``, ``POST /v1/event-hooks/{hook_id}/enable``, and ``GET
/v1/events?after=CURSOR`` for applications that pull.

Their models and handlers live here, their routes in :data:`ROUTES`, which
bot/api/routes.py adds to the table. The use cases (core.cases.event_hooks) check,
scope to the token's tenant and member, and audit; a hook's URL is answered redacted
(its path and query often carry a token) and its secret only when it is made."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, Literal, get_args

from pydantic import Field

from bot.api.model_base import In, Out, example
from bot.api.requests import Call, Reply, Route
from core.cases import (
    DESCRIPTION_MAX,
    KEY_PREFIX_MAX,
    PAGE_DEFAULT,
    PAGE_MAX,
    URL_MAX,
    shown_url,
)
from core.events import body_of, message_id
from core.models import Event, EventHook

EventTypeName = Literal[
    "job.delivered",
    "job.retrying",
    "job.dead",
    "job.expired",
    "job.receipt",
    "schedule.paused",
    "schedule.ended",
]

_HOOK_EXAMPLE: dict[str, Any] = {
    "id": 3,
    "url": "https://hooks.example.com/…",
    "types": ["job.dead", "job.delivered"],
    "owner": "local:ada",
    "tenant_wide": True,
    "schedule_id": None,
    "key_prefix": "order-",
    "description": "billing",
    "state": "active",
    "tries": 0,
    "failing_since": None,
    "next_try_at": None,
    "last_error": None,
    "delivered": 42,
    "last_delivered_at": "2026-03-02T12:00:00+00:00",
    "created_at": "2026-03-01T09:00:00+00:00",
}


class HookIn(In):
    model_config = example(
        {
            "url": "https://hooks.example.com/herald",
            "types": ["job.dead", "job.delivered"],
            "key_prefix": "order-",
        }
    )

    url: str = Field(
        min_length=1,
        max_length=URL_MAX,
        description="The https (or http) URL Herald POSTs events to; never an internal address.",
    )
    types: list[EventTypeName] = Field(
        min_length=1, max_length=7, description="The event types it hears."
    )
    schedule_id: int | None = Field(
        default=None, ge=1, le=2**31 - 1, description="Only this schedule's events."
    )
    key_prefix: str | None = Field(
        default=None,
        min_length=1,
        max_length=KEY_PREFIX_MAX,
        description="Only events of jobs whose idempotency key starts with this.",
    )
    description: str = Field(default="", max_length=DESCRIPTION_MAX)


class HookOut(Out):
    model_config = example(_HOOK_EXAMPLE)

    id: int
    url: str = Field(description="The URL, its path and query hidden.")
    types: list[str]
    owner: str
    tenant_wide: bool = Field(
        description="An admin's hook hears the workspace's events; a member's, their own "
        "schedules' only."
    )
    schedule_id: int | None
    key_prefix: str | None
    description: str
    state: Literal["active", "disabled"]
    tries: int = Field(description="Failed tries of the event it is stuck on (0: none).")
    failing_since: datetime | None
    next_try_at: datetime | None
    last_error: str | None
    delivered: int
    last_delivered_at: datetime | None
    created_at: datetime


class HookCreated(HookOut):
    model_config = example({**_HOOK_EXAMPLE, "secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"})

    secret: str = Field(
        description="The signing secret (Standard Webhooks), shown this once: keep it."
    )


class HookList(Out):
    model_config = example({"hooks": [_HOOK_EXAMPLE]})

    hooks: list[HookOut]


class EventsQuery(In):
    model_config = example({"after": "MTIzLjQ1Ng", "limit": 100})

    after: str | None = Field(
        default=None,
        max_length=60,
        description="The next_cursor of the previous page (none: from the oldest event kept).",
    )
    limit: int = Field(default=PAGE_DEFAULT, ge=1, le=PAGE_MAX)


class EventOut(Out):
    model_config = example(
        {
            "id": "evt_981",
            "type": "job.dead",
            "timestamp": "2026-03-02T12:00:05+00:00",
            "data": {"schedule_id": 12, "idempotency_key": "order-7", "attempt": 5},
        }
    )

    id: str = Field(description="The event's id: the webhook-id of its pushes.")
    type: str
    timestamp: datetime
    data: dict[str, Any]


class EventPageOut(Out):
    model_config = example({"events": [], "next_cursor": "MTIzLjQ1Ng"})

    events: list[EventOut]
    next_cursor: str = Field(description="Where to read on from (after=...).")


def _out(hook: EventHook) -> dict[str, Any]:
    return {
        "id": hook.id or 0,
        "url": shown_url(hook.url),
        "types": list(hook.types),
        "owner": hook.owner,
        "tenant_wide": hook.tenant_wide,
        "schedule_id": hook.schedule_id,
        "key_prefix": hook.key_prefix,
        "description": hook.description,
        "state": hook.state,
        "tries": hook.tries,
        "failing_since": hook.failing_since,
        "next_try_at": hook.next_try_at,
        "last_error": hook.last_error,
        "delivered": hook.delivered,
        "last_delivered_at": hook.last_delivered_at,
        "created_at": hook.created_at,
    }


def event_out(event: Event) -> EventOut:
    """An event as the feed answers it: the body a hook is pushed, with its id."""
    body = json.loads(body_of(event.type, event.at, event.data))
    return EventOut(id=message_id(event.id or 0), **body)


async def register_hook(call: Call) -> Reply:
    body: HookIn = call.body
    made = await call.herald.register_hook(
        call.principal,
        body.url,
        list(body.types),
        schedule_id=body.schedule_id,
        key_prefix=body.key_prefix,
        description=body.description,
    )
    return Reply(HookCreated(**_out(made.hook), secret=made.secret), 201)


async def list_hooks(call: Call) -> Reply:
    hooks = await call.herald.list_hooks(call.principal)
    return Reply(HookList(hooks=[HookOut(**_out(h)) for h in hooks]))


async def show_hook(call: Call) -> Reply:
    hook = await call.herald.show_hook(call.principal, call.path_int("hook_id"))
    return Reply(HookOut(**_out(hook)))


async def remove_hook(call: Call) -> Reply:
    hook = await call.herald.remove_hook(call.principal, call.path_int("hook_id"))
    return Reply(HookOut(**_out(hook)))


async def enable_hook(call: Call) -> Reply:
    hook = await call.herald.enable_hook(call.principal, call.path_int("hook_id"))
    return Reply(HookOut(**_out(hook)))


async def events(call: Call) -> Reply:
    query: EventsQuery = call.query
    page = await call.herald.events_after(call.principal, query.after, query.limit)
    return Reply(
        EventPageOut(events=[event_out(e) for e in page.events], next_cursor=page.next_cursor)
    )


_HOOK = "/event-hooks/{hook_id}"
_TYPES = ", ".join(get_args(EventTypeName))

#: The routes of event hooks and the event feed (bot/api/routes.py adds them).
ROUTES: tuple[Route, ...] = (
    Route(
        "POST",
        "/event-hooks",
        "registerEventHook",
        "Register an event hook: Herald POSTs the events it hears, signed",
        "write",
        register_hook,
        HookCreated,
        201,
        body=HookIn,
        problems=(404, 422),
        tag="events",
        description="An admin's hook hears the workspace's events, a member's those of "
        f"their own schedules. Types: {_TYPES}. Each POST carries webhook-id, "
        "webhook-timestamp and webhook-signature (Standard Webhooks) made with the secret "
        "answered here, once.",
    ),
    Route(
        "GET",
        "/event-hooks",
        "listEventHooks",
        "The event hooks the token manages (an admin: the workspace's)",
        "read",
        list_hooks,
        HookList,
        tag="events",
    ),
    Route(
        "GET",
        _HOOK,
        "getEventHook",
        "One event hook, with how its pushes go",
        "read",
        show_hook,
        HookOut,
        problems=(404,),
        tag="events",
    ),
    Route(
        "DELETE",
        _HOOK,
        "removeEventHook",
        "Remove an event hook: nothing more is pushed to it",
        "write",
        remove_hook,
        HookOut,
        problems=(404,),
        tag="events",
    ),
    Route(
        "POST",
        _HOOK + "/enable",
        "enableEventHook",
        "Enable an event hook again, its failures forgotten",
        "write",
        enable_hook,
        HookOut,
        problems=(404,),
        tag="events",
        description="It is pushed at once, from the first event it did not take.",
    ),
    Route(
        "GET",
        "/events",
        "listEvents",
        "The events the token sees, after a cursor (the pull feed)",
        "read",
        events,
        EventPageOut,
        query=EventsQuery,
        problems=(422,),
        tag="events",
        description="The same events hooks are pushed, in order. Pass next_cursor as after "
        "to read on; a page with no events answers the same cursor.",
    ),
)
