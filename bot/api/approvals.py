"""The API of approvals (core.approvals): ``GET /v1/approvals`` lists requests (a
member's message held before it is sent, a dead letter's retry), ``POST
/v1/approvals/{approval_id}/approve`` and ``/reject`` decide one.

Their models and handlers live here, their routes in :data:`ROUTES`, which
bot/api/routes.py adds to the table. The decisions are core/verbs.py's ``approve`` and
``reject`` (the CLI's ``herald approvals``, the console's and chat's buttons): the use
case checks who decides (the workspace's approvers; admins for a retry), refuses
anyone their own request, and audits. A write token of an admin acts as an operator:
an admin decides with an admin-scoped token.
"""

from __future__ import annotations

from typing import Literal

from pydantic import AwareDatetime, Field

from bot.api.model_base import In, Out, example
from bot.api.problems import ApiProblem
from bot.api.requests import Call, Handler, Reply, Route
from core import verbs
from core.models import REJECT_REASON_CHARS, ApprovalState
from core.store import ApprovalRow

_EXAMPLE = {
    "id": 5,
    "tenant": "slack:T0123",
    "kind": "send",
    "state": "pending",
    "requested_by": "slack:U0ANN",
    "requested_at": "2026-03-01T10:00:00Z",
    "why": "it goes to slack:C0NEWS, an announcement channel",
    "decided_by": None,
    "decided_at": None,
    "reason": None,
    "expires_at": "2026-03-02T08:00:00Z",
    "schedule_id": 42,
    "schedule_version": 1,
    "job_id": None,
    "text": "The office is closed on Friday.",
    "destination": "slack:C0NEWS",
    "expression": "tomorrow at 9am",
    "owner": "slack:U0ANN",
    "schedule_state": "awaiting",
}
#: The largest id the approval table holds (an INTEGER column).
MAX_APPROVAL_ID = 2**31 - 1
#: What ``state`` takes: a request's state, or all of them.
StateFilter = Literal["pending", "approved", "rejected", "expired", "withdrawn", "all"]


class ApprovalOut(Out):
    model_config = example(_EXAMPLE)

    id: int
    tenant: str
    kind: Literal["send", "retry"] = Field(
        description="send: a member's message held before it is sent; retry: a dead letter's retry."
    )
    state: str = Field(description="pending, approved, rejected, expired or withdrawn.")
    requested_by: str
    requested_at: AwareDatetime
    why: str = Field(description="Why it waits for an approver, in words.")
    decided_by: str | None
    decided_at: AwareDatetime | None
    reason: str | None = Field(description="A rejection's reason (told to the author).")
    expires_at: AwareDatetime | None = Field(
        description="A held message's due time: undecided by then, a one-off expires and a "
        "recurring one waits for its next occurrence."
    )
    schedule_id: int | None
    schedule_version: int | None = Field(description="The version of the schedule asked for.")
    job_id: int | None = Field(description="A retry's dead letter.")
    text: str | None = Field(description="The message, as it would be sent.")
    destination: str | None
    expression: str | None = Field(description="When, as its author wrote it.")
    owner: str | None
    schedule_state: str | None


class ApprovalList(Out):
    model_config = example({"items": [_EXAMPLE]})

    items: list[ApprovalOut] = Field(description="Oldest first.")


class ApprovalQuery(In):
    model_config = example({"state": "pending", "kind": "send"})

    state: StateFilter = Field(default="pending", description="Which requests; all: any state.")
    kind: Literal["send", "retry"] | None = Field(default=None, description="Only one kind.")
    limit: int = Field(default=200, ge=1, le=200)


class RejectIn(In):
    model_config = example({"reason": "Post it in #general instead, please."})

    reason: str | None = Field(
        default=None, max_length=REJECT_REASON_CHARS, description="Told to the author."
    )


class DecisionOut(Out):
    model_config = example(
        {"approval_id": 5, "result": "approved", "count": 1, "sends": 1, "retries": 0}
    )

    approval_id: int
    result: Literal["approved", "rejected"]
    count: int = Field(description="How many requests were decided.")
    sends: int = Field(description="Held messages decided (approved: sent at their time).")
    retries: int = Field(description="Dead-letter retries decided (approved: retried now).")


def _out(row: ApprovalRow) -> ApprovalOut:
    return ApprovalOut(
        id=row.id,
        tenant=row.tenant,
        kind=row.kind,  # the table holds only these two
        state=row.state,
        requested_by=row.requested_by,
        requested_at=row.requested_at,
        why=row.why,
        decided_by=row.decided_by,
        decided_at=row.decided_at,
        reason=row.reason,
        expires_at=row.expires_at,
        schedule_id=row.schedule_id,
        schedule_version=row.schedule_version,
        job_id=row.job_id,
        text=row.body,
        destination=row.destination,
        expression=row.expression,
        owner=row.owner,
        schedule_state=row.schedule_state,
    )


async def list_approvals(call: Call) -> Reply:
    q: ApprovalQuery = call.query
    rows = await call.herald.approvals(
        call.principal, state=None if q.state == "all" else q.state, kind=q.kind, limit=q.limit
    )
    return Reply(ApprovalList(items=[_out(r) for r in rows]))


def _decide(name: str) -> Handler:
    chosen = verbs.verb(name)

    async def decide(call: Call) -> Reply:
        approval_id = call.path_int("approval_id")
        if approval_id > MAX_APPROVAL_ID:  # past the table's integer: no such request
            raise ApiProblem(404, f"There is no request {approval_id} in your workspace.")
        options: dict[str, str | None] = {}
        if "reason" in chosen.options:
            body: RejectIn | None = call.body
            options["reason"] = None if body is None else body.reason
        decided = await verbs.perform(call.herald, chosen, call.principal, [approval_id], **options)
        return Reply(
            DecisionOut(
                approval_id=approval_id,
                result=chosen.past,  # approved, rejected
                count=decided.count,
                sends=decided.sends,
                retries=decided.retries,
            )
        )

    decide.__name__ = f"{name}_approval"
    return decide


_APPROVE, _REJECT = verbs.verb("approve"), verbs.verb("reject")
_STATES = ", ".join(s.value for s in ApprovalState)

#: The routes of approvals (bot/api/routes.py adds them).
ROUTES: tuple[Route, ...] = (
    Route(
        "GET",
        "/approvals",
        "listApprovals",
        "Requests a second person decides: held messages and dead-letter retries",
        "read",
        list_approvals,
        ApprovalList,
        query=ApprovalQuery,
        problems=(422,),
        tag="approvals",
        description="Approvers (the workspace's admins and HERALD_APPROVERS) and operators "
        f"see the workspace's, members their own. state: {_STATES} or all.",
    ),
    Route(
        "POST",
        "/approvals/{approval_id}/approve",
        "approveRequest",
        _APPROVE.help[0].upper() + _APPROVE.help[1:],
        "write",
        _decide("approve"),
        DecisionOut,
        problems=(404, 409, 422),
        tag="approvals",
        description="A held message is sent from its next due time on (its author is "
        "told); a dead letter is retried now (admins). Nobody approves their own request "
        "(403); one decided already is 422; one whose schedule changed since it was asked, "
        "or that someone decided first, 409.",
    ),
    Route(
        "POST",
        "/approvals/{approval_id}/reject",
        "rejectRequest",
        _REJECT.help[0].upper() + _REJECT.help[1:],
        "write",
        _decide("reject"),
        DecisionOut,
        body=RejectIn,
        body_optional=True,
        problems=(404, 409, 422),
        tag="approvals",
        description="A held message's schedule is cancelled, nothing sent; a dead letter "
        "stays dead. The reason is told to the author.",
    ),
)
