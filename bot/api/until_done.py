"""The API of messages sent until done (core.until_done): ``POST /v1/jobs/{job_id}/done``
marks an occurrence's message done, ``GET /v1/awaiting-done`` lists those nobody marked
done yet with the time people took over the last week.

Their models and handlers live here, their routes in :data:`ROUTES`, which
bot/api/routes.py adds to the table. The use cases (``Herald.mark_done``,
``awaiting_done``, ``ack_figures``) check who may and audit: through the API, as from
the CLI, only the message's author, operators and admins mark it done (in chat, anyone
who sees it presses its button); another tenant's message is 404.
"""

from __future__ import annotations

from pydantic import AwareDatetime, Field

from bot.api.model_base import In, Out, example
from bot.api.requests import Call, Reply, Route

_DONE_EXAMPLE = {
    "job_id": 12,
    "schedule_id": 42,
    "by": "local:ada",
    "at": "2026-03-02T08:20:00Z",
    "already": False,
    "stopped": 3,
    "destination": "slack:C0ONCALL",
    "waited_s": 1200.0,
}
_AWAITING_EXAMPLE = {
    "job_id": 12,
    "schedule_id": 42,
    "tenant": "local",
    "owner": "local:ada",
    "destination": "slack:C0ONCALL",
    "text": "Check the backups",
    "delivered_at": "2026-03-02T08:00:01Z",
    "nags_sent": 1,
    "steps_waiting": 4,
}


class DoneOut(Out):
    model_config = example(_DONE_EXAMPLE)

    job_id: int = Field(description="The occurrence's message.")
    schedule_id: int
    by: str = Field(description="Who marked it done (already: whoever did it first).")
    at: AwareDatetime = Field(description="When (already: when it was first done).")
    already: bool = Field(description="Someone had marked it done before: nothing changed.")
    stopped: int = Field(description="Its nags and escalations still waiting, now cancelled.")
    destination: str = Field(description="Where the message went.")
    waited_s: float | None = Field(
        description="Seconds from its delivery to this Done (null: done again, or while "
        "it was being sent)."
    )


class AwaitingOut(Out):
    model_config = example(_AWAITING_EXAMPLE)

    job_id: int = Field(description="The message's job: POST /v1/jobs/{job_id}/done.")
    schedule_id: int
    tenant: str
    owner: str
    destination: str
    text: str
    delivered_at: AwareDatetime | None
    nags_sent: int = Field(description="Nags and escalations sent so far.")
    steps_waiting: int = Field(description="Nags and escalations still to come.")


class AckOut(Out):
    count: int = Field(description="Messages marked done over the last 7 days.")
    p50_s: float | None = Field(description="Median seconds from delivery to Done.")
    p95_s: float | None = Field(description="95th percentile of the same.")


class AwaitingList(Out):
    model_config = example(
        {
            "items": [_AWAITING_EXAMPLE],
            "ack": {"count": 34, "p50_s": 720.0, "p95_s": 5400.0},
        }
    )

    items: list[AwaitingOut] = Field(description="Oldest first.")
    ack: AckOut = Field(description="How long people took to press Done (the tenant's).")


class AwaitingQuery(In):
    model_config = example({"limit": 50})

    limit: int = Field(default=200, ge=1, le=200)


async def mark_done(call: Call) -> Reply:
    done = await call.herald.mark_done(call.principal, call.path_int("job_id"))
    return Reply(
        DoneOut(
            job_id=done.job_id,
            schedule_id=done.schedule_id,
            by=done.by,
            at=done.at,
            already=done.already,
            stopped=done.stopped,
            destination=done.destination,
            waited_s=done.waited,
        )
    )


async def awaiting_done(call: Call) -> Reply:
    q: AwaitingQuery = call.query
    rows = await call.herald.awaiting_done(call.principal, limit=q.limit)
    figures = await call.herald.ack_figures(call.principal)
    items = [
        AwaitingOut(
            job_id=w.job_id,
            schedule_id=w.schedule_id,
            tenant=w.tenant,
            owner=w.owner,
            destination=w.destination,
            text=w.body,
            delivered_at=w.delivered_at,
            nags_sent=w.nags_sent,
            steps_waiting=w.steps_waiting,
        )
        for w in rows
    ]
    ack = AckOut(count=figures.count, p50_s=figures.p50, p95_s=figures.p95)
    return Reply(AwaitingList(items=items, ack=ack))


#: The routes of messages sent until done (bot/api/routes.py adds them).
ROUTES: tuple[Route, ...] = (
    Route(
        "POST",
        "/jobs/{job_id}/done",
        "markDone",
        "Mark a message sent until done as done: its nags and escalations stop",
        "write",
        mark_done,
        DoneOut,
        problems=(404, 422),
        tag="until done",
        description="For the message's author, operators and admins (in chat, anyone who "
        "sees the message presses its Done button). The message is edited to say who did "
        "it. Done again answers 200 with already true and who did it first. A message not "
        "sent until done is 422; another workspace's is 404.",
    ),
    Route(
        "GET",
        "/awaiting-done",
        "listAwaitingDone",
        "Messages sent until done that nobody marked done yet, and the time to Done",
        "read",
        awaiting_done,
        AwaitingList,
        query=AwaitingQuery,
        problems=(422,),
        tag="until done",
        description="A member's own; operators' and admins' the workspace's. ack: p50 and "
        "p95 seconds from delivery to Done over the last 7 days.",
    ),
)
