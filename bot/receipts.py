"""``POST /receipts/<provider>``: delivery receipts providers post to ``herald run``'s
HTTP port (Twilio's status callbacks, SendGrid's and Mailgun's event webhooks).

Each callback is checked by its provider's signature scheme and read by
:mod:`core.receipts`, then taken by the store in one transaction
(:meth:`core.store.Store.take_callback`): the attempt moves to delivered, undelivered
or bounced, and a failure fails its job (the chain's next step, due now, or a dead
letter, handed to the dispatcher's outcome observer as the dispatcher's own dead
letters are: ``herald run``'s chat adapters post it to their alert channels).
Answers: 401 for an unsigned, forged, stale or replayed callback, and for every
callback of a provider whose secret is not set (nothing changes); 404 for a provider
Herald takes no receipts from; 400 for a signed callback Herald cannot read; 200
otherwise, also for a message Herald does not know (said in the answer: a 4xx or
5xx would only make the provider send it again and again)."""

from __future__ import annotations

import dataclasses
import logging
import time
from typing import TYPE_CHECKING

from aiohttp import web

from bot.http_guard import BodyRefused, HttpLimits, body_limit, read_body
from core.errors import DatabaseError
from core.receipts import (
    MAX_BODY,
    CallbackMalformed,
    CallbackRefused,
    NotConfigured,
    ReceiptKeys,
    provider_label,
    read_callback,
)

if TYPE_CHECKING:
    from core.cases import Herald
    from core.dispatcher import Dispatcher

log = logging.getLogger(__name__)

#: Seconds between two log lines about refused callbacks of one provider (a flood of
#: forged posts must not become a flood of log lines).
LOG_EVERY = 10.0
#: What a path under /receipts/ naming no provider may carry (it is never read).
_UNKNOWN_BODY = 64 * 1024


def add_receipts(
    app: web.Application, herald: Herald, dispatcher: Dispatcher, limits: HttpLimits
) -> None:
    """Serve ``POST /receipts/{provider}`` on ``app``: receipts are taken through
    ``herald``'s store at ``herald``'s clock, counted in ``dispatcher``'s metrics, a
    job failed onto its next step wakes ``dispatcher``, and a dead letter goes to
    ``dispatcher``'s outcome observer."""
    keys = ReceiptKeys.from_settings(herald.settings)
    refusals = _Refusals()
    for provider, size in MAX_BODY.items():
        body_limit(app, f"/receipts/{provider}", size)
    body_limit(app, "/receipts/", _UNKNOWN_BODY)

    async def receive(request: web.Request) -> web.Response:
        provider = request.match_info["provider"]
        if provider not in MAX_BODY:
            return _answer(404, f"Herald takes no delivery receipts from {provider[:40]!r}.")
        try:
            body = await read_body(
                request, dataclasses.replace(limits, max_body=MAX_BODY[provider])
            )
        except BodyRefused as exc:
            return exc.response
        now = herald.clock.now()
        try:
            callback = read_callback(
                provider,
                keys,
                body=body,
                headers=request.headers,
                query=request.raw_path.partition("?")[2],
                now=now,
            )
        except NotConfigured as exc:
            refusals.unconfigured(provider, exc)
            return _answer(401, f"{provider_label(provider)} receipts are not configured.")
        except CallbackRefused as exc:
            refusals.add(provider, str(exc))
            return _answer(401, "The callback's signature does not hold.")
        except CallbackMalformed as exc:
            log.warning(
                "delivery receipt unreadable", extra={"provider": provider, "reason": str(exc)}
            )
            return _answer(400, str(exc))
        try:
            taken = await herald.store.take_callback(
                provider, callback.digest, callback.reports, now=now
            )
        except DatabaseError as exc:
            log.warning(
                "delivery receipt not taken: database unavailable",
                extra={"provider": provider, "error": str(exc)},
            )
            return _answer(503, "The database is unavailable.", {"Retry-After": "5"})
        if taken is None:
            refusals.add(provider, "The same signed callback came again (a replay).")
            return _answer(401, "This callback was taken already.")
        metrics = dispatcher.metrics
        counts = {"applied": 0, "duplicate": 0, "unknown": 0}
        wake = False
        dead: list[int] = []
        for report, result in zip(callback.reports, taken, strict=True):
            counts[result.outcome] += 1
            metrics.receipts.labels(provider, report.status).inc()
            if result.job_state == "retrying":
                wake = True
                metrics.fallbacks.labels(result.channel or "unknown").inc()
            elif result.job_state == "dead" and result.job_id is not None:
                dead.append(result.job_id)
            log.info(
                "delivery receipt %s",
                result.outcome,
                extra={
                    "provider": provider,
                    "status": report.status,
                    "job_id": result.job_id,
                    "attempt": result.attempt_id,
                    "job_state": result.job_state,
                },
            )
        if wake:
            dispatcher.wake()
        if dead:
            await _announce(herald, dispatcher, provider, dead)
        answer: dict[str, object] = {"status": "ok", **counts, "ignored": callback.ignored}
        if counts["unknown"]:
            answer["note"] = (
                f"{counts['unknown']} of the messages reported are unknown to Herald "
                "(sent by another system, or older than its retention): nothing changed "
                "for them."
            )
        return web.json_response(answer)

    app.router.add_post("/receipts/{provider}", receive)


async def _announce(
    herald: Herald, dispatcher: Dispatcher, provider: str, job_ids: list[int]
) -> None:
    """Hand the dead letters a receipt made to the dispatcher's outcome observer, as
    the dispatcher hands its own (in ``herald run``, the chat adapters' alert channels
    hear of them), and log each as the dispatcher logs a dead job. The receipt is taken
    already: a failure here is logged, never the provider's answer (a retried callback
    would be a replay, refused)."""
    try:
        settled = await herald.store.settled_dead(job_ids)
    except DatabaseError as exc:
        log.warning(
            "dead letters of a delivery receipt not announced: database unavailable",
            extra={"provider": provider, "job_ids": job_ids, "error": str(exc)},
        )
        return
    for item in settled:
        job = item.job
        log.warning(
            "job dead",
            extra={
                "event": "job.dead",
                "job_id": job.id,
                "schedule_id": job.schedule_id,
                "destination": job.destination.partition(":")[0],
                "attempt": job.attempts,
                "provider": provider,
                "error": item.error,
            },
        )
        if dispatcher.observer is None:
            continue
        try:
            dispatcher.observer(item)
        except Exception:  # an observer's bug must not fail a receipt already taken
            log.exception(
                "outcome observer failed on a receipt's dead letter", extra={"job_id": job.id}
            )


def _answer(status: int, sentence: str, headers: dict[str, str] | None = None) -> web.Response:
    return web.json_response({"error": sentence}, status=status, headers=headers)


class _Refusals:
    """Logs refused callbacks: an unset secret once per provider, others at most once
    every :data:`LOG_EVERY` seconds per provider, with how many since."""

    def __init__(self) -> None:
        self._unconfigured: set[str] = set()
        self._last: dict[str, float] = {}
        self._since: dict[str, int] = {}

    def unconfigured(self, provider: str, exc: NotConfigured) -> None:
        if provider in self._unconfigured:
            return
        self._unconfigured.add(provider)
        log.warning(
            "delivery receipts of %s refused: %s",
            provider_label(provider),
            exc,
            extra={"provider": provider, "setting": exc.setting},
        )

    def add(self, provider: str, reason: str) -> None:
        self._since[provider] = self._since.get(provider, 0) + 1
        now = time.monotonic()
        if now - self._last.get(provider, -LOG_EVERY) < LOG_EVERY:
            return
        self._last[provider] = now
        log.warning(
            "delivery receipt refused: %s",
            reason,
            extra={"provider": provider, "refused": self._since.pop(provider)},
        )
