"""The API's handlers: each reads a :class:`~bot.api.requests.Call` (the member a token
acts for, the query and body as the route's models read them), calls the ``core`` use
case the CLI calls, and answers a :class:`~bot.api.requests.Reply` of the route's
answer model. A use case's refusal is left to rise: :func:`bot.api.problems.from_error`
makes it a problem."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime
from typing import Any

from bot.api import models as m
from bot.api.problems import ApiProblem
from bot.api.requests import PREFIX, Call, Handler, Reply
from core import until_done, verbs, views
from core.actors import Actor
from core.cases import To, canonical, import_schedules, wanted_of
from core.errors import Conflict, InvalidInput
from core.models import Job, Schedule
from core.store import DeadFilter
from core.verbs import Verb, perform


def _schedule(
    s: Schedule, jobs: list[Job] | None = None, *, author: str | None = None
) -> m.ScheduleOut:
    """A schedule as answers carry it; with its ``jobs`` at hand, how several
    recipients fared (views.fared); the notes and warnings of the change that returned
    it (none for one read back); ``author``: in a channel's agenda."""
    fared = None if jobs is None else views.fared(s, jobs)
    return m.ScheduleOut.model_validate(
        {
            **views.schedule_dict(s),
            "fared": fared,
            "recipient_times": views.recipient_times(s),
            "until_done": _ladder(s),
            "author": author,
            "notes": views.save_notes(s),
            "warnings": [w.as_dict() for w in views.warnings_of(s)],
        }
    )


def _ladder(s: Schedule) -> m.UntilDoneOut | None:
    """A schedule's ladder as answers carry it (None: sent plainly)."""
    rule = until_done.of_options(s.options)
    if rule is None:
        return None
    return m.UntilDoneOut.model_validate({**rule.to_json(), "words": until_done.describe(rule)})


def _to(value: str | list[str | m.FirstOf]) -> To:
    """A request's recipients as the use cases take them (a chain as ``{"first_of"}``)."""
    if isinstance(value, str):
        return value
    return [item if isinstance(item, str) else {"first_of": item.first_of} for item in value]


async def _same_recipients(call: Call, schedule: Schedule, to: To) -> bool:
    """Whether ``to`` names ``schedule``'s recipients (an idempotent create repeated):
    channels written by name looked up, each destination as Herald stores it."""
    actor = await call.herald.actor(call.principal)
    try:
        named = await call.herald.named_recipients(actor, wanted_of(to))
        asked = [w.to for w in canonical(named)]
    except InvalidInput:
        return False
    return asked == [r.to for r in views.recipients_of(schedule)]


def _same_message(schedule: Schedule, body: m.ScheduleCreate) -> bool:
    """Whether a create repeated with its key asks for the message ``schedule`` sends:
    its text, or the same template (its data as saved may read differently: "1.4" is
    kept as 1.4)."""
    used = views.template_of(schedule)
    if body.template is None:
        return used is None and schedule.body == body.text
    if used is None or used["name"] != body.template:
        return False
    if not _same_data(body.data or {}, used["data"]):
        return False
    ids = {r.first: str(r.id) for r in views.recipients_of(schedule)}
    given = {ids.get(k, k): v for k, v in (body.data_by_recipient or {}).items()}
    stored = used["data_by_recipient"]
    return given.keys() == stored.keys() and all(_same_data(v, stored[k]) for k, v in given.items())


def _same_data(given: Mapping[str, Any], stored: Mapping[str, Any]) -> bool:
    """Whether data as a request gives them are those saved (a number given as text,
    "1.4", is saved as 1.4)."""
    if given.keys() != stored.keys():
        return False
    for name, value in given.items():
        kept = stored[name]
        if value == kept:
            continue
        if isinstance(kept, int | float) and not isinstance(kept, bool):
            try:
                if float(value) == float(kept):
                    continue
            except (TypeError, ValueError):
                pass
        return False
    return True


def _etag(s: Schedule) -> dict[str, str]:
    return {"ETag": f'"{s.version}"'}


_BAD_CURSOR = "That cursor is not one this API gave: pass next_cursor as it came."


def _cursor(value: dict[str, Any]) -> str:
    raw = json.dumps(value, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _read_cursor(cursor: str | None) -> dict[str, Any] | None:
    if cursor is None:
        return None
    try:
        data = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (ValueError, binascii.Error):
        data = None
    if not isinstance(data, dict):
        raise ApiProblem(400, _BAD_CURSOR)
    return data


async def create_schedule(call: Call) -> Reply:
    body: m.ScheduleCreate = call.body
    header_key = call.request.headers.get("Idempotency-Key")
    if header_key is not None and body.key is not None and header_key != body.key:
        raise ApiProblem(422, "The Idempotency-Key header and the key field differ: send one.")
    key = header_key if header_key is not None else body.key
    to = _to(body.to)
    query: m.ScheduleCreateQuery | None = call.query
    strict = query is not None and query.strict
    schedule, created = await call.herald.create_schedule(
        call.principal,
        to=to,
        when=body.when,
        text=body.text,
        tz=body.tz,
        key=key,
        max_lateness=body.max_lateness,
        options=body.options,
        skip=body.skip,
        skip_files=body.skip_files or None,
        their_time=body.time_of == "recipient",
        step_timeout=body.step_timeout,
        priority=body.priority,
        auto_pause=body.auto_pause,
        template=body.template,
        data=body.data,
        data_by_recipient=body.data_by_recipient,
        until_done=None if body.until_done is None else body.until_done.spec(),
        private=body.private,
        # a duplicate refused is a 409 problem naming them (bot.api.problems)
        duplicates="refuse" if strict else "warn",
    )
    headers = {**_etag(schedule), "Location": f"{PREFIX}/schedules/{schedule.id}"}
    if created:
        return Reply(_schedule(schedule), 201, headers)
    if not _same_message(schedule, body) or not await _same_recipients(
        call, schedule, _to(body.to)
    ):
        raise ApiProblem(
            422,
            f"The idempotency key {key!r} was used for a different schedule ({schedule.id}); "
            "use a new key for a new request.",
            slug="idempotency-key-reused",
        )
    return Reply(_schedule(schedule), 200, {**headers, "Idempotent-Replayed": "true"})


async def list_schedules(call: Call) -> Reply:
    q: m.ScheduleListQuery = call.query
    if q.to is not None and await _agenda_wanted(call, q, q.to):
        return await _agenda(call, q, q.to)
    cursor = _read_cursor(q.cursor)
    before = cursor.get("before") if cursor else None
    if cursor is not None and not (type(before) is int and 0 < before < 2**31):  # not True
        raise ApiProblem(400, _BAD_CURSOR)
    rows = await call.herald.list_schedules(
        call.principal,
        everyone=q.all,
        state=q.state,
        destination=q.to,
        text=q.search,
        tenant=q.tenant,
        limit=q.limit + 1,
        newest_first=True,
        before_id=before,
    )
    page, more = rows[: q.limit], len(rows) > q.limit
    after = _cursor({"before": page[-1].id}) if more and page else None
    return Reply(m.SchedulePage(items=[_schedule(s) for s in page], next_cursor=after))


async def _agenda_wanted(call: Call, q: m.ScheduleListQuery, to: str) -> bool:
    """Whether the list filtered by ``to`` is its channel's agenda: no other filter,
    and core says so (:meth:`core.cases.Herald.lists_agenda`)."""
    if (q.state, q.search, q.tenant) != (None, None, None):
        return False
    return await call.herald.lists_agenda(call.principal, to)


#: How far a channel's agenda is paged (its schedules soonest first).
AGENDA_MOST = 10_000


async def _agenda(call: Call, q: m.ScheduleListQuery, to: str) -> Reply:
    """A channel's agenda (core's ``agenda``: who may see it, private ones left out,
    audited), paged by its place in the agenda."""
    cursor = _read_cursor(q.cursor)
    start = cursor.get("from") if cursor else 0
    if cursor is not None and not (type(start) is int and 0 < start < AGENDA_MOST):
        raise ApiProblem(400, _BAD_CURSOR)
    assert isinstance(start, int)
    entries = await call.herald.agenda(call.principal, to, limit=start + q.limit + 1)
    page, end = entries[start : start + q.limit], start + q.limit
    after = _cursor({"from": end}) if len(entries) > end and end < AGENDA_MOST else None
    items = [_schedule(e.schedule, author=e.author) for e in page]
    return Reply(m.SchedulePage(items=items, next_cursor=after))


async def agenda_calendar(call: Call) -> Reply:
    """A channel's agenda as an iCalendar file (``herald export ics --to``)."""
    q: m.AgendaQuery = call.query
    data = await call.herald.agenda_ics(call.principal, q.to)
    return Reply(None, raw=data)


async def get_schedule(call: Call) -> Reply:
    detail = await call.herald.show_schedule(call.principal, call.path_int("schedule_id"))
    return Reply(_schedule(detail.schedule, detail.jobs), headers=_etag(detail.schedule))


async def schedule_jobs(call: Call) -> Reply:
    query: m.ScheduleJobsQuery = call.query
    detail = await call.herald.show_schedule(
        call.principal, call.path_int("schedule_id"), archived=query.archived
    )
    data = views.detail_dict(detail)
    out = m.ScheduleJobs(
        schedule_id=data["id"],
        fared=views.fared(detail.schedule, detail.jobs),
        jobs=[m.JobOut.model_validate(j) for j in data["jobs"]],
        attempts=[m.AttemptOut.model_validate(a) for a in data["attempts"]],
    )
    return Reply(out)


async def edit_schedule(call: Call) -> Reply:
    body: m.ScheduleEdit = call.body
    schedule = await _versioned(
        call,
        lambda version: call.herald.edit_schedule(
            call.principal,
            call.path_int("schedule_id"),
            when=body.when,
            text=body.text,
            to=None if body.to is None else _to(body.to),
            tz=body.tz,
            expected_version=version,
            add=() if body.add is None else _to(body.add),
            remove=body.remove or (),
            priority=body.priority,
            auto_pause=body.auto_pause,
            template=body.template,
            data=body.data,
            data_by_recipient=body.data_by_recipient,
            until_done=_ladder_change(body.until_done),
            private=body.private,
        ),
    )
    return Reply(_schedule(schedule), headers=_etag(schedule))


def _ladder_change(given: m.UntilDoneIn | bool | None) -> dict[str, Any] | bool | None:
    """An edit's until_done as the use case takes it: a ladder, False, or None."""
    return given.spec() if isinstance(given, m.UntilDoneIn) else given


async def _versioned(call: Call, change: Callable[[int | None], Awaitable[Schedule]]) -> Schedule:
    """Run ``change`` at the version If-Match names: a stale one is 412, not 409."""
    version = call.if_match()
    try:
        return await change(version)
    except Conflict as exc:
        if version is not None and "version" in str(exc):
            raise ApiProblem(412, str(exc)) from None
        raise


def state_change(verb: Verb) -> Handler:
    """The route of a verb of :data:`core.verbs.STATE_VERBS` (pause, resume, skip,
    cancel): the same table the CLI, Slack, Discord and the console read."""

    async def change(call: Call) -> Reply:
        schedule_id = call.path_int("schedule_id")
        schedule = await _versioned(
            call,
            lambda version: perform(
                call.herald, verb, call.principal, schedule_id, expected_version=version
            ),
        )
        return Reply(_schedule(schedule), headers=_etag(schedule))

    change.__name__ = f"{verb.name}_schedule"
    return change


async def preview_when(call: Call) -> Reply:
    """The use case every surface's preview is (the zone, default time and skip
    calendars ``POST /schedules`` would use for this member)."""
    q: m.WhenQuery = call.query
    shown = await call.herald.preview_when(call.principal, q.when, tz=q.tz, count=q.count)
    reading, default = shown.reading, shown.reading.default_time
    out = m.WhenOut(
        expression=reading.expression,
        timezone=shown.zone,
        zone_source=shown.source.value,
        recurring=reading.recurring,
        rule=reading.rule,
        description=reading.description,
        default_time=None if default is None else f"{default:%H:%M}",
        occurrences=shown.occurrences,
        skip_calendars=shown.calendars,
        skipped=[m.WhenSkipped(at=at, event=name) for at, name in shown.skipped],
    )
    return Reply(out)


def _dead(letter: Any) -> m.DeadLetterOut:
    return m.DeadLetterOut.model_validate(views.dead_letter_dict(letter))


async def list_dead(call: Call) -> Reply:
    q: m.DeadListQuery = call.query
    cursor = _read_cursor(q.cursor)
    before: tuple[datetime, int] | None = None
    if cursor is not None:
        try:
            before = datetime.fromisoformat(cursor["at"]), int(cursor["job"])
            if before[0].utcoffset() is None or not 0 < before[1] < 2**63:
                raise ValueError(cursor)
        except (KeyError, TypeError, ValueError):
            raise ApiProblem(400, _BAD_CURSOR) from None
    f = DeadFilter(tenant=q.tenant, destination=q.to, requested=q.requested)
    rows = await call.herald.dead_page(call.principal, f, before=before, limit=q.limit + 1)
    page, more = rows[: q.limit], len(rows) > q.limit
    after = None
    if more and page and page[-1].finished_at is not None:
        after = _cursor({"at": page[-1].finished_at.isoformat(), "job": page[-1].job_id})
    return Reply(m.DeadLetterPage(items=[_dead(d) for d in page], next_cursor=after))


async def get_dead(call: Call) -> Reply:
    letters = await call.herald.dead_letter(call.principal, call.path_int("job_id"))
    return Reply(_dead(letters[0]))


async def retry_dead(call: Call) -> Reply:
    """Retry (an admin) or ask for one: core/verbs.py's retry."""
    job_id = call.path_int("job_id")
    result, count = await perform(call.herald, "retry", call.principal, [job_id])
    return Reply(m.DeadDecisionOut(job_id=job_id, result=result, count=count))


async def _decide(call: Call, decision: str) -> Reply:
    """An admin's decision (core/verbs.py's DECISIONS: retry, discard), as an alert's
    button takes it: anyone else is refused for their role (403, which says nothing of
    the letter), an admin is answered 404 for a letter they cannot see."""
    job_id = call.path_int("job_id")
    count = await call.herald.decide_dead_letters(call.principal, [job_id], decision)
    return Reply(m.DeadDecisionOut(job_id=job_id, result=verbs.verb(decision).past, count=count))


async def approve_dead(call: Call) -> Reply:
    return await _decide(call, "retry")


async def reject_dead(call: Call) -> Reply:
    """Turn a retry request down, with a reason: core/verbs.py's reject, on the dead
    letter's request (the dead-letter desk, as the CLI's ``herald dead reject``)."""
    job_id = call.path_int("job_id")
    body: m.RejectRetry | None = call.body
    reason = None if body is None else body.reason
    chosen = verbs.verb("reject")
    count = await call.herald.on_dead_letters(chosen, call.principal, [job_id], reason=reason)
    return Reply(m.DeadDecisionOut(job_id=job_id, result=verbs.verb("reject").past, count=count))


async def discard_dead(call: Call) -> Reply:
    return await _decide(call, "discard")


async def import_lines(call: Call) -> Reply:
    """A bulk import: core/cases/importer.py bounds it (lines, bytes, the token's lines a
    minute) and checks it in slices, so the loop keeps serving meanwhile."""
    q: m.ImportQuery = call.query
    text: str = call.body
    report = await import_schedules(
        call.herald, call.principal, text, skip_invalid=q.skip_invalid, priority=q.priority
    )
    out = m.ImportOut(
        imported=report.imported,
        skipped_existing=report.skipped_existing,
        skipped_duplicate=report.skipped_duplicate,
        invalid=[m.InvalidLine(line=n, reason=why) for n, why in report.invalid],
        invalid_count=report.invalid_count,
        ids=report.ids,
        duplicates=[
            m.DuplicateLine(line=n, message=said, schedule_id=sid)
            for n, said, sid in report.duplicates
        ],
        duplicate_count=report.duplicate_count,
    )
    return Reply(out, 201 if report.imported else 200)


async def me(call: Call) -> Reply:
    actor: Actor = await call.herald.actor(call.principal)
    return Reply(
        m.Me(
            member=actor.id,
            tenant=actor.tenant,
            role=actor.role.value,
            scope=call.token.scope,
            token=call.token.id,
            expires_at=call.token.expires_at,
        )
    )
