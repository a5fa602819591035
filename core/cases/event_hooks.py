"""Event hooks and the pull feed for applications (issue 38): registered by an admin or
for the token's own member, scoped to the tenant.

A hook is a URL Herald POSTs events to, signed as Standard Webhooks say with a secret
shown once, when it is registered (core.events). It lives in its registrant's tenant
and hears only that tenant's events: an admin's hook every schedule's
(``tenant_wide``), a member's only those of the member's own schedules. It may hear
only some event types, one schedule, or jobs whose idempotency key starts with a
prefix. An admin manages every hook of their tenant; a member, their own.

``GET /v1/events`` (:meth:`EventHookCases.events_after`) reads the same events from an
opaque cursor, scoped the same way, for applications that pull instead.

Registering, removing and enabling are audited (``hook.create``, ``hook.remove``,
``hook.enable``; the URL redacted, never the secret). The dispatcher disables a hook
that failed for ``HERALD_HOOK_DISABLE_AFTER`` (core.dispatcher.hooks).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from core.actors import Actor, ActorRef
from core.cases.base import CaseBase
from core.errors import InvalidInput, NotFound
from core.events import EVENT_TYPES, new_secret, recipient_shown
from core.models import Event, EventHook
from core.store import AuditEntry, EventScope, decode_cursor, encode_cursor

#: Characters of an idempotency-key prefix a hook may filter on, at most.
KEY_PREFIX_MAX = 200
#: Characters of a hook's URL at most (the column's size).
URL_MAX = 2000
DESCRIPTION_MAX = 200
#: The largest hook id (the column is a 32-bit integer): past it, none is found.
MAX_ID = 2**31 - 1
#: Events a page of ``GET /v1/events`` holds at most (and by default).
PAGE_MAX = 500
PAGE_DEFAULT = 100


@dataclass(frozen=True)
class Registered:
    """A new hook and its signing secret, shown this once."""

    hook: EventHook
    secret: str


@dataclass(frozen=True)
class EventPage:
    """A page of the pull feed: its events and the cursor to read the next one from
    (past the workspace's events the reader does not see, so that no read scans them
    again; the same cursor when there was nothing new at all)."""

    events: list[Event]
    next_cursor: str


def shown_url(url: str) -> str:
    """A hook's URL as lists and the audit show it (path and query hidden, as a
    webhook destination's are: they often carry a token)."""
    return recipient_shown("webhook:" + url).removeprefix("webhook:")


def check_types(types: Sequence[str]) -> list[str]:
    chosen = sorted({t.strip() for t in types if t.strip()})
    unknown = [t for t in chosen if t not in EVENT_TYPES]
    if unknown or not chosen:
        what = f"Unknown event type {unknown[0]!r}" if unknown else "A hook needs an event type"
        raise InvalidInput(f"{what}: choose among {', '.join(EVENT_TYPES)}.")
    return chosen


def check_key_prefix(prefix: str | None) -> str | None:
    if prefix is None or prefix == "":
        return None
    if len(prefix) > KEY_PREFIX_MAX or not prefix.isprintable():
        raise InvalidInput(
            f"An idempotency-key prefix is 1 to {KEY_PREFIX_MAX} printable characters."
        )
    return prefix


class EventHookCases(CaseBase):
    """Registering, listing, removing and enabling event hooks; the pull feed."""

    async def _check_url(self, url: str) -> str:
        url = url.strip()
        if not url or len(url) > URL_MAX or not url.lower().startswith(("https://", "http://")):
            raise InvalidInput(
                f"A hook's URL is an http(s) URL of at most {URL_MAX} characters, "
                "e.g. https://example.com/herald-events."
            )
        refused = await self.settings.network_guard().refusal(url)
        if refused is not None:
            raise InvalidInput(refused)
        return url

    async def _hook(self, actor: Actor, hook_id: int, action: str) -> EventHook:
        """The hook ``hook_id`` of the actor's tenant that they may manage (an admin:
        any; a member: their own). Refusals are audited and never say whether another
        tenant has it."""
        reason = f"There is no event hook {hook_id} of yours: see herald hooks list."
        if not 1 <= hook_id <= MAX_ID:
            raise NotFound(reason)
        hook = await self.store.get_hook(actor.tenant, hook_id)
        if hook is None:
            raise NotFound(reason)
        if hook.owner != actor.id and not actor.is_admin:
            raise await self.denied(actor, action, "event_hook", str(hook_id), reason, NotFound)
        return hook

    async def register_hook(
        self,
        actor_id: ActorRef,
        url: str,
        types: Sequence[str],
        *,
        schedule_id: int | None = None,
        key_prefix: str | None = None,
        description: str = "",
    ) -> Registered:
        """Register a hook in the actor's tenant. InvalidInput for a URL that is not
        http(s) or reaches an internal address, no or unknown types, a bad key prefix,
        or past ``HERALD_MAX_EVENT_HOOKS``; NotFound for a schedule they cannot see."""
        actor = await self.actor(actor_id)
        checked = await self._check_url(url)
        chosen = check_types(types)
        prefix = check_key_prefix(key_prefix)
        description = " ".join(description.split())
        if len(description) > DESCRIPTION_MAX:
            raise InvalidInput(f"A hook's description is at most {DESCRIPTION_MAX} characters.")
        if schedule_id is not None:
            schedule = await self._visible(actor, schedule_id)
            if schedule.tenant != actor.tenant:
                raise NotFound(f"There is no schedule {schedule_id} of yours.")
        cap = self.settings.max_event_hooks
        if await self.store.count_hooks(actor.tenant) >= cap:
            raise InvalidInput(
                f"This workspace has {cap} event hooks already, the most it may have "
                "(HERALD_MAX_EVENT_HOOKS): remove one first (herald hooks remove ID)."
            )
        now = self.clock.now()
        secret = new_secret()
        hook = EventHook(
            tenant=actor.tenant,
            owner=actor.id,
            tenant_wide=actor.is_admin,
            url=checked,
            types=chosen,
            schedule_id=schedule_id,
            key_prefix=prefix,
            description=description,
            secret=secret,
            created_at=now,
            updated_at=now,
        )
        details = {
            "url": shown_url(checked),
            "types": chosen,
            "tenant_wide": actor.is_admin,
            "schedule_id": schedule_id,
            "key_prefix": prefix,
        }
        stored = await self.store.add_hook(
            hook, audit=AuditEntry.by(actor, "hook.create", "event_hook", "", details)
        )
        return Registered(stored, secret)

    async def list_hooks(self, actor_id: ActorRef) -> list[EventHook]:
        """The hooks of the actor's tenant they manage (an admin: all; else their own)."""
        actor = await self.actor(actor_id)
        owner = None if actor.is_admin else actor.id
        return await self.store.list_hooks(actor.tenant, owner=owner)

    async def show_hook(self, actor_id: ActorRef, hook_id: int) -> EventHook:
        actor = await self.actor(actor_id)
        return await self._hook(actor, hook_id, "hook.show")

    async def remove_hook(self, actor_id: ActorRef, hook_id: int) -> EventHook:
        """Remove a hook (audited ``hook.remove``): nothing more is pushed to it."""
        actor = await self.actor(actor_id)
        hook = await self._hook(actor, hook_id, "hook.remove")
        audit = AuditEntry.by(
            actor, "hook.remove", "event_hook", str(hook_id), {"url": shown_url(hook.url)}
        )
        if not await self.store.remove_hook(
            actor.tenant, hook_id, now=self.clock.now(), audit=audit
        ):
            raise NotFound(f"There is no event hook {hook_id} of yours: see herald hooks list.")
        return hook

    async def enable_hook(self, actor_id: ActorRef, hook_id: int) -> EventHook:
        """Make a hook active again, its failures forgotten (audited ``hook.enable``):
        it is pushed at once, from the first event it did not take."""
        actor = await self.actor(actor_id)
        hook = await self._hook(actor, hook_id, "hook.enable")
        audit = AuditEntry.by(
            actor,
            "hook.enable",
            "event_hook",
            str(hook_id),
            {"url": shown_url(hook.url), "was": hook.state},
        )
        enabled = await self.store.enable_hook(
            actor.tenant, hook_id, now=self.clock.now(), audit=audit
        )
        if enabled is None:
            raise NotFound(f"There is no event hook {hook_id} of yours: see herald hooks list.")
        return enabled

    async def events_after(
        self, actor_id: ActorRef, cursor: str | None = None, limit: int = PAGE_DEFAULT
    ) -> EventPage:
        """The actor's events after ``cursor`` (None: from the oldest kept), at most
        ``limit`` (1 to :data:`PAGE_MAX`): the tenant's for an admin, their own
        schedules' otherwise."""
        actor = await self.actor(actor_id)
        if not 1 <= limit <= PAGE_MAX:
            raise InvalidInput(f"A page holds 1 to {PAGE_MAX} events.")
        after = decode_cursor(cursor) if cursor else None
        scope = EventScope(actor.tenant, owner=None if actor.is_admin else actor.id)
        events, position = await self.store.events_page(scope, after, limit=limit)
        return EventPage(events, encode_cursor(position))
