"""The dispatcher's event-hook room: keeps the outcome policy's ``listening`` fresh and
pushes the outbox (the ``event`` table) to each event hook, signed as Standard
Webhooks say (core.events).

Every :data:`PUSH_SECONDS` the pusher reads the hooks due (a read), and for each with
events after its cursor it claims the hook with a lease (``HERALD_LEASE_SECONDS``),
POSTs up to
:data:`BATCH` events a wave of :data:`WAVE` at a time, and moves the cursor through
the last event of the unbroken run of successes (2xx), or past the events the hook
does not hear too when it took all it was sent. At the first failure the
cursor stays at the failing event and the hook backs off (exponential with jitter, up
to :data:`BACKOFF_CAP`); a hook failing for ``hook_disable_after`` seconds, or
answering 410 Gone, is disabled and its owner told (core.store.events). Every event
keeps its ``webhook-id`` on every redelivery, so a receiver drops what it has seen.

Pushes never hold up a message: they have their own HTTP pool (at most
:data:`IN_FLIGHT` requests of a process at once, short timeouts) behind the same
network guard as the webhook channel, and they run beside the loop, not in it.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from core.channels.base import Channel
from core.clock import Clock
from core.dispatcher.alarms import Periodic
from core.dispatcher.config import DispatcherConfig, backoff_delay
from core.events import OutcomePolicy, body_of, headers, message_id
from core.http_client import HTTPClient, TimedOut, Timeout, Unreachable
from core.metrics import Metrics
from core.models import Event, EventHook
from core.netguard import Guard, Refused
from core.store import DispatchStore

log = logging.getLogger("core.dispatcher")

#: How often the hooks' event types are read into the outcome policy.
REFRESH_SECONDS = 2.0
#: How often hooks with events waiting are pushed.
PUSH_SECONDS = 1.0
#: Events read per hook per push, and POSTed at once for one hook.
BATCH = 100
WAVE = 8
#: Batches one push sends a hook at most (the next push goes on).
ROUNDS = 10
#: Requests to hooks in flight per process at most.
IN_FLIGHT = 8
#: Seconds a POST may take, and its connection.
TIMEOUT = Timeout(10.0, 3.0)
#: Seconds between tries of a failing hook: the first, and at most.
BACKOFF_BASE = 2.0
BACKOFF_CAP = 3600.0
#: Characters of a receiver's answer kept as the hook's last error.
ERROR_CHARS = 200


@dataclass(frozen=True, slots=True)
class Sent:
    """What one POST of an event came to: ok, or why not (and whether it is for good)."""

    ok: bool
    error: str = ""
    gone: bool = False


def guard_of(channels: Mapping[str, Channel]) -> Guard:
    """The network guard the webhook channel sends through (``HERALD_WEBHOOK_ALLOW_PRIVATE``
    and all), else the default one that refuses internal addresses."""
    http = getattr(channels.get("webhook"), "http", None)
    return http.guard if isinstance(http, HTTPClient) else Guard()


class HookPusher:
    """Pushes events to event hooks (see the module), through a pool of its own behind
    the webhook channel's network guard (``http`` replaces it: tests)."""

    def __init__(
        self,
        store: DispatchStore,
        clock: Clock,
        config: DispatcherConfig,
        policy: OutcomePolicy,
        metrics: Metrics,
        worker_id: str,
        channels: Mapping[str, Channel],
        *,
        http: HTTPClient | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.store = store
        self.clock = clock
        self.config = config
        self.policy = policy
        self.metrics = metrics
        self.worker_id = worker_id
        self.http = http or HTTPClient(guard=guard_of(channels), connections=IN_FLIGHT)
        self.rng = rng or random.Random()
        self._slots: asyncio.Semaphore | None = None

    def periodic(self) -> dict[str, Periodic]:
        """The pusher's jobs for the service's alarm clock."""
        return {
            "hooks-refresh": (self.refresh, REFRESH_SECONDS),
            "hooks-push": (self.push, PUSH_SECONDS),
        }

    async def refresh(self) -> None:
        """Read which event types each tenant's active hooks hear into the policy the
        outcomes are recorded with."""
        self.policy.listening = await self.store.listening()

    async def push(self) -> int:
        """Push every due hook that has events waiting, hooks side by side, a batch
        after another while a hook took a whole one (up to :data:`ROUNDS`); how many
        events were delivered."""
        now = self.clock.now()
        due = await self.store.due_hooks(now=now)
        waiting = [hook for hook in due if await self.store.events_waiting(hook)]
        total = 0
        for _ in range(ROUNDS):
            if not waiting:
                break
            done = await asyncio.gather(*(self._push_hook(hook) for hook in waiting))
            total += sum(done)
            waiting = [hook for hook, n in zip(waiting, done, strict=True) if n == BATCH]
        return total

    async def close(self) -> None:
        await self.http.close()

    async def _push_hook(self, seen: EventHook) -> int:
        """Claim one hook, POST its events from its cursor, and record how far it got."""
        now = self.clock.now()
        # a hook is leased as jobs are (HERALD_LEASE_SECONDS), and no wave starts past
        # half of it: a crashed pusher's hook is pushed again soon by another
        lease = self.config.lease_seconds
        lease_until, budget = now + timedelta(seconds=lease), time.monotonic() + lease / 2
        hook = await self.store.claim_hook(
            seen.id or 0, worker=self.worker_id, now=now, lease_until=lease_until
        )
        if hook is None:
            return 0  # another dispatcher's now, or no longer due
        if hook.tenant_wide and not await self._still_admin(hook):
            # an admin's hook hears the workspace while its owner is an admin: one no
            # longer an admin hears their own schedules only, as a member's hook does
            hook.tenant_wide = False
        events, read_through = await self.store.hook_batch(hook, limit=BATCH)
        through: tuple[int, int] | None = None
        delivered = 0
        failed: Sent | None = None
        for start in range(0, len(events), WAVE):
            if start and time.monotonic() > budget:
                break
            wave = events[start : start + WAVE]
            results = await asyncio.gather(*(self._post(hook, event) for event in wave))
            for event, sent in zip(wave, results, strict=True):
                if not sent.ok:
                    failed = sent
                    break
                through, delivered = (event.tx, event.id or 0), delivered + 1
            if failed is not None:
                break
        if failed is None and delivered == len(events):
            through = read_through  # past the events it does not hear, too
        self.metrics.event_pushes.labels("delivered").inc(delivered)
        now = self.clock.now()
        failure = None
        if failed is not None:
            self.metrics.event_pushes.labels("failed").inc()
            delay = backoff_delay(hook.tries + 1, BACKOFF_BASE, BACKOFF_CAP, self.rng)
            failure = (failed.error, now + timedelta(seconds=delay))
        after = await self.store.hook_pushed(
            hook.id or 0,
            worker=self.worker_id,
            now=now,
            through=through,
            delivered=delivered,
            failure=failure,
        )
        if failed is not None and after is not None:
            await self._maybe_disable(after, failed, now)
        return delivered

    async def _still_admin(self, hook: EventHook) -> bool:
        """Whether a hook's owner is an admin of its tenant now (``HERALD_ADMINS``, their
        role, or the platform's say, as the members table has it)."""
        if hook.owner in self.config.admins:
            return True
        people = await self.store.people_now({hook.tenant: [hook.owner]})
        person = people.get((hook.tenant, hook.owner))
        return person is not None and person.admin

    async def _maybe_disable(self, hook: EventHook, failed: Sent, now: datetime) -> None:
        since = hook.failing_since or now
        limit = self.config.hook_disable_after
        if failed.gone:
            reason = "its URL answered 410 Gone"
        elif (now - since).total_seconds() >= limit:
            reason = f"it failed for {_duration(limit)} ({failed.error})"
        else:
            return
        if await self.store.disable_hook(hook.id or 0, now=now, reason=reason):
            log.warning(
                "event hook disabled",
                extra={"hook": hook.id, "tenant": hook.tenant, "reason": reason},
            )

    async def _post(self, hook: EventHook, event: Event) -> Sent:
        """POST one event, signed; never raises for what the receiver does."""
        if self._slots is None:
            self._slots = asyncio.Semaphore(IN_FLIGHT)
        body = body_of(event.type, event.at, event.data)
        async with self._slots:
            # signed once it may go: a wait for a slot must not age its timestamp past
            # a receiver's tolerance (Standard Webhooks' verifiers allow 5 minutes)
            signed = headers(hook.secret, message_id(event.id or 0), int(time.time()), body)
            try:
                answer = await self.http.request(
                    "POST",
                    hook.url,
                    guarded=True,
                    timeouts=TIMEOUT,
                    headers=signed,
                    content=body.encode(),
                )
            except Refused as exc:
                return Sent(False, str(exc))
            except (TimedOut, Unreachable) as exc:
                return Sent(False, f"could not reach the hook: {exc}")
        if 200 <= answer.status < 300:
            return Sent(True)
        said = f"it answered {answer.status} {answer.reason}".rstrip()
        return Sent(False, said[:ERROR_CHARS], gone=answer.status == 410)


def _duration(seconds: float) -> str:
    if seconds >= 3600:
        return f"{seconds / 3600:g} h"
    return f"{seconds:g} s"
