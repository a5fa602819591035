"""``herald schedule``, ``list``, ``show`` and ``edit``: a schedule and its recipients.

bot/cli/commands.py's handlers run these over the use cases (``cli`` is its
:class:`~bot.cli.commands.Cli`). A schedule goes to one recipient or several, each a
destination or a chain tried in order (``--to A --then B``), each optionally read in
its own zone (``--their-time``): every reply says every destination, and the times
each person gets it.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from bot.cli import calendars as cli_calendars
from bot.cli.options import (
    one_line,
    priority_marked,
    recipients_arg,
    say_not_created,
    schedule_options,
    step_timeout_arg,
    template_data,
)
from bot.cli.until_done import ladder_arg, ladder_words
from core import calendars, db, reminders, routing, timeexpr, verbs, views
from core import until_done as ladders
from core.errors import InvalidInput
from core.models import Attempt, Job, Schedule, ScheduleState
from core.routing import Recipient
from core.send_check import send_warnings
from core.until_done import step_label

if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable

    from bot.cli.commands import Cli
    from core.cases import Herald

#: The least width of a list's TO column (bot/cli/options.py's table_lines).
TO_LEAST = 30


def recipient_words(r: Recipient, shown: Callable[[str], str]) -> str:
    """One recipient: its chain, its zone, and how long a step is tried."""
    text = routing.describe(r, shown)
    if r.timeout is not None and len(r.to) > 1:
        text += f" (each step at most {timeexpr.describe_duration(r.timeout)})"
    return text


def to_cell(s: Schedule, *, full: bool, least: int = TO_LEAST) -> str:
    """A list's TO: the first recipient, and how many more (``slack:C0123ABC +2``),
    cut to the column's ``least`` width so that the count always shows."""
    first, *more = views.recipients_of(s)
    words = routing.describe(first, lambda d: views.destination(d, full=full))
    if not more:
        return words
    suffix = f" +{len(more)}"
    return one_line(words, least - len(suffix)) + suffix


def read_back_recipients(cli: Cli, s: Schedule, label: str) -> None:
    """The recipients a create or an edit saved, and each person's time (with their
    time): ``to:   slack:C1, slack:@U1 or email:u1@example.com``."""
    cli.emit(f"{label}{views.recipients_text(s, full=True)}")
    times = views.recipient_times(s)
    if times:
        cli.emit(f"  their time: {times}")


def template_words(s: Schedule, *, full: bool = True) -> list[str]:
    """What ``herald show`` and a create's read-back say of a schedule's template:
    ``template: deploy v3``, its data, and each recipient's own (by first destination)."""
    used = views.template_of(s)
    if used is None:
        return []
    lines = [f"template: {used['name']} v{used['version']}"]
    if used["data"]:
        lines.append(f"data:     {_data_text(used['data'])}")
    firsts = {str(r.id): r.first for r in views.recipients_of(s)}
    for key, own in used["data_by_recipient"].items():
        where = views.destination(firsts.get(key, f"recipient {key}"), full=full)
        lines.append(f"data for {where}: {_data_text(own)}")
    return lines


def held_and_ladder(s: Schedule) -> list[str]:
    """What a create's or an edit's read-back says of a schedule waiting for an approver
    and of one sent until done."""
    lines = []
    if s.state == ScheduleState.AWAITING.value:
        lines.append(
            "awaiting approval: nothing is sent until an approver approves it "
            "(herald approvals list shows the request)"
        )
    if ladder := ladder_words(s.options):
        lines.append(f"sent {ladder}")
    return lines


def _data_text(data: dict[str, object]) -> str:
    return ", ".join(f"{name}={one_line(str(value), 60)}" for name, value in data.items())


def _text_or_template(a: argparse.Namespace) -> None:
    """``herald schedule`` sends --text or --template, one of them (core refuses both
    too; the CLI names its own options)."""
    if a.template is not None and a.text is not None:
        raise InvalidInput("Give --text or --template, not both: the template is the message.")
    if a.template is None and a.text is None:
        raise InvalidInput("Give the message with --text, or a template with --template NAME.")
    if a.template is None and (a.data or a.data_for):
        raise InvalidInput("--data fills in a template's variables: name it with --template.")


async def cmd_schedule(cli: Cli, herald: Herald) -> None:
    a = cli.args
    _text_or_template(a)
    data, data_by_recipient = template_data(a)
    urls, files = await cli_calendars.skip_sources(cli)
    schedule, created = await herald.create_schedule(
        cli.actor,
        to=recipients_arg(a.to),
        when=a.when,
        text=a.text or "",
        template=a.template,
        data=data,
        data_by_recipient=data_by_recipient,
        tz=a.tz,
        key=a.key,
        max_lateness=a.max_lateness,
        options=schedule_options(a),
        skip=urls,
        skip_files=files,
        their_time=a.their_time,
        step_timeout=step_timeout_arg(a.step_timeout),
        priority=a.priority,
        auto_pause=a.auto_pause,
        until_done=ladder_arg(a) or None,
        private=a.private,
        # --strict: a duplicate is refused (core's Duplicated, one sentence naming them)
        duplicates="refuse" if a.strict else "warn",
    )
    say_warnings(schedule)
    if a.json:
        cli.emit_json(
            {**views.schedule_dict(schedule), "created": created, **warnings_json(schedule)}
        )
        return
    if not created:
        say_not_created(schedule.id, a.key)
    if a.quiet:
        cli.emit(str(schedule.id))
        return
    zone = schedule.timezone
    cli.emit(f"Schedule {schedule.id}: {views.read_back(schedule)}, in {zone}.")
    for line in held_and_ladder(schedule):
        cli.emit(f"  {line}")
    if schedule.priority != "normal":
        cli.emit(f"  priority: {schedule.priority}")
    if schedule.rrule is not None and not schedule.auto_pause:
        cli.emit("  auto-pause: off")
    read_back_recipients(cli, schedule, "  to:   ")
    for line in template_words(schedule):
        cli.emit(f"  {line}")
    if schedule.options.get(reminders.ASKED_BY):  # someone else's reminder
        cli.emit(f"  (a direct message; it says {cli.actor.id} asked)")
    upcoming, _ = calendars.schedule_upcoming(schedule, 3)
    for i, t in enumerate(upcoming):
        label = "  next: " if i == 0 else " " * 8
        exact = views.iso(t.replace(microsecond=0))
        cli.emit(f"{label}{views.local(t, zone)} {zone}   ({exact})")
    said: set[str] = set()
    for destination in schedule.destinations:
        warnings = await send_warnings(
            herald.store, cli.settings, destination, now=herald.clock.now()
        )
        for warning in (w for w in warnings if w not in said):
            said.add(warning)
            print(f"warning: {warning}", file=sys.stderr)  # noqa: T201 - CLI output


def say_warnings(schedule: Schedule) -> None:
    """On stderr, ``warning: …`` for each warning of the save that returned
    ``schedule`` (a duplicate, a crowded destination): it was saved all the same."""
    for warning in views.warnings_of(schedule):
        print(f"warning: {warning.plain}", file=sys.stderr)  # noqa: T201 - CLI output


def warnings_json(schedule: Schedule) -> dict[str, list[dict[str, object]]]:
    """``{"warnings": [...]}`` for --json, as the API answers them (none: nothing)."""
    found = views.warnings_of(schedule)
    return {"warnings": [w.as_dict() for w in found]} if found else {}


def _when_column(schedule: Schedule, words: dict[tuple[str, str], str]) -> str:
    """:func:`core.views.when_column`, a rule's words (a pure function of the rule and
    its zone) read once for every row that repeats them: a list of a thousand schedules
    made from a few rules parses each rule once."""
    if schedule.rrule is None:
        return views.when_column(schedule)
    key = (schedule.rrule, schedule.timezone)
    found = words.get(key)
    if found is None:
        found = words[key] = views.when_column(schedule)
    return found


async def _agenda_wanted(cli: Cli, herald: Herald) -> bool:
    """Whether ``herald list --to`` is its channel's agenda: no other filter, and core
    says so (:meth:`core.cases.Herald.lists_agenda`)."""
    a = cli.args
    if (a.state, a.search, a.tenant) != (None, None, None):
        return False
    return await herald.lists_agenda(cli.actor, a.to)


async def cmd_agenda(cli: Cli, herald: Herald, to: str) -> None:
    """``herald list --to CHANNEL``: what is scheduled into a Slack or Discord channel,
    everyone's not marked private, if the member can see it (core's ``agenda``)."""
    a = cli.args
    if a.limit < 1:
        raise InvalidInput("The limit must be at least 1.")
    entries = await herald.agenda(cli.actor, to, limit=a.limit)
    if a.json:
        cli.emit_json(
            [
                {**views.schedule_dict(e.schedule), "author": e.author, "when": e.when}
                for e in entries
            ]
        )
        return
    if not entries:
        cli.emit(f"Nothing is scheduled into {to}.")
        return
    words: dict[tuple[str, str], str] = {}
    table = [
        [
            str(e.schedule.id),
            priority_marked(
                _state_column(e.schedule, cli.settings.auto_pause_after), e.schedule.priority
            ),
            one_line(e.author, 30),
            _when_column(e.schedule, words)
            + ("; until done" if ladders.OPTION in e.schedule.options else ""),
            views.local_short(e.next_at, e.schedule.timezone),
            one_line(views.shown_text(e.schedule), 200),
        ]
        for e in entries
    ]
    header = ["ID", "STATE", "AUTHOR", "WHEN", "NEXT", "TEXT"]
    cli.table(header, table, least=[99, 99, 12, 22, 16, 6])
    if len(entries) >= a.limit:
        cli.emit(f"The first {len(entries):,} shown; use --limit to see more.")


async def cmd_list(cli: Cli, herald: Herald) -> None:
    a = cli.args
    if a.to is not None and await _agenda_wanted(cli, herald):
        await cmd_agenda(cli, herald, a.to)
        return
    filters = dict(everyone=a.all, state=a.state, destination=a.to, text=a.search)
    rows = await herald.list_schedules(cli.actor, **filters, tenant=a.tenant, limit=a.limit)
    more = ""
    if len(rows) >= a.limit:  # cut at the limit: say how many there are
        total = await herald.count_schedules(cli.actor, **filters, tenant=a.tenant)
        if total > len(rows):
            more = f"{len(rows):,} of {total:,} shown; use --limit {total} to see them all."
    if a.json:
        cli.emit_json([views.schedule_dict(s) for s in rows])
        if more:
            print(more, file=sys.stderr)  # noqa: T201 - CLI output
        return
    if not rows:  # say which database: another one may hold the schedules sought
        cli.emit(f"No schedules in {db.location(cli.settings.database_url)}.")
        return
    viewer = await herald.actor(cli.actor)
    tenants = {s.tenant for s in rows} != {"local"}  # a column once rows come from more
    words: dict[tuple[str, str], str] = {}  # a rule read once for all rows that share it
    header = ["ID", "STATE", "WHEN", "NEXT", "TO", "TEXT"]
    least = [99, 99, 22, 16, TO_LEAST, 6]  # a cut keeps ids, states, next dates and times
    if tenants:
        header, least = ["TENANT", *header], [10, 99, 99, 14, 16, 24, 6]
    to_least = least[-2]
    table = [
        [
            *([s.tenant] if tenants else []),
            str(s.id),
            priority_marked(_state_column(s, cli.settings.auto_pause_after), s.priority),
            _when_column(s, words) + ("; until done" if ladders.OPTION in s.options else ""),
            views.local_short(s.next_run_at, s.timezone),
            to_cell(s, full=views.sees_destination(viewer, s.owner), least=to_least),
            one_line(views.shown_text(s), 200),
        ]
        for s in rows
    ]
    cli.table(header, table, least=least)
    if more:
        cli.emit(more)


def _state_column(s: Schedule, after: int) -> str:
    """A list's state: ``paused (failing)`` when the system paused it."""
    return "paused (failing)" if views.paused_by_system(s, after) else s.shown_state


def show_schedule(cli: Cli, s: Schedule, *, full: bool = True) -> None:
    """A schedule's fields, each recipient on its own line when there are several."""

    def shown(d: str) -> str:
        return views.destination(d, full=full)

    cli.emit(f"Schedule {s.id} ({s.shown_state}, version {s.version})")
    recipients = views.recipients_of(s)
    if len(recipients) == 1:
        cli.emit(f"  to:      {recipient_words(recipients[0], shown)}")
    else:
        cli.emit(f"  to:      {len(recipients)} recipients")
        for i, r in enumerate(recipients, 1):
            cli.emit(f"    {i}. {recipient_words(r, shown)}")
    cli.emit(f"  when:    {s.expression}  [{views.describe(s)}]")
    cli.emit(f"  next:    {views.local(s.next_run_at, s.timezone)} {s.timezone}")
    times = views.recipient_times(s)
    if times:
        cli.emit(f"  their time: {times}")
    cli.emit(f"  priority: {s.priority}")
    cli.emit(f"  owner:   {s.owner}")
    if s.tenant != "local":
        cli.emit(f"  tenant:  {s.tenant}")
    if ladder := ladder_words(s.options):
        cli.emit(f"  sent:    {ladder}")
    if s.skip_calendars:
        ids = ", ".join(str(i) for i in s.skip_calendars)
        cli.emit(f"  skips:   the event dates of calendar {ids}")
    for line in template_words(s, full=full):
        cli.emit(f"  {line}")
    if views.template_of(s) is None:
        cli.emit(f"  text:    {s.body}")
    else:  # the template's source, and the next message as it will be sent
        cli.emit(f"  template text: {s.body}")
        cli.emit(f"  next message:  {views.filled_text(s) or '(filled in when sent)'}")


async def cmd_show(cli: Cli, herald: Herald) -> None:
    detail = await herald.show_schedule(cli.actor, cli.args.id, archived=cli.args.archived)
    s = detail.schedule
    fared = views.fared(s, detail.jobs)
    if cli.args.json:
        cli.emit_json({**views.detail_dict(detail), "fared": fared})
        return
    viewer = await herald.actor(cli.actor)
    full = views.sees_destination(viewer, s.owner)
    show_schedule(cli, s, full=full)
    if fared:
        cli.emit(f"  fared:   {fared}")
    for words in views.failing_words(s, cli.settings.auto_pause_after):
        cli.emit(f"  {words}")
    failure = views.last_failure([*detail.jobs, *detail.archived_jobs], s.timezone)
    if failure:
        cli.emit(f"  {failure}")
    several = len(s.destinations) > 1  # say where each job and try went
    jobs = {job.id: job for job in [*detail.jobs, *detail.archived_jobs]}
    archived = "  archived"
    cli.emit("  jobs:")
    for job, mark in [
        *((j, "") for j in _in_order(detail.jobs)),
        *((j, archived) for j in detail.archived_jobs),
    ]:
        err = f"  {views.error_text(job.last_error)}" if job.last_error else ""
        to = f"  to {_job_to(s, job, full)}" if several or job.ladder else ""
        step = step_label(job.ladder)
        step = f"  ({step})" if step else ""
        if job.done_by:
            step += f"  done by {job.done_by} at {views.iso(job.done_at)}"
        cli.emit(
            f"    {job.id:>6}  {job.state:<9}  due {views.iso(job.due_at)}  "
            f"attempts {job.attempts}{step}{to}{err}{mark}"
        )
    tried = [
        *((a, "") for a in detail.attempts),
        *((a, archived) for a in detail.archived_attempts),
    ]
    if tried:
        # a provider's hand-off and receipt in the schedule's zone, as "next:" is
        providers = any(at.provider for at, _ in tried)
        cli.emit(f"  attempts (providers' times in {s.timezone}):" if providers else "  attempts:")
        for at, mark in tried:
            code = f" {at.status_code}" if at.status_code is not None else ""
            handed = views.handoff(at, s.timezone)
            how = f"  {handed}" if handed else ""
            late = views.delay(at)
            how += f"  {late}" if late else ""
            to = f"  to {_attempt_to(s, at, jobs.get(at.job_id), full)}" if several else ""
            sent = f'  sent "{one_line(at.body, 60)}"' if at.body else ""
            cli.emit(
                f"    {views.iso(at.started_at)}  job {at.job_id}  {at.outcome}{code}{how}"
                f"{to}{sent}{mark}"
            )


def _in_order(jobs: list[Job]) -> list[Job]:
    """A schedule's jobs, latest occurrence first (as the store reads them), and within
    an occurrence each recipient's message, then its ladder's steps as they come due."""
    ordered = sorted(jobs, key=lambda j: (j.recipient, bool(j.ladder), j.due_at, j.id or 0))
    return sorted(ordered, key=lambda j: j.occurrence_at or j.due_at, reverse=True)


def _job_to(s: Schedule, job: Job, full: bool) -> str:
    step = f" (step {job.step + 1})" if job.step else ""
    return views.destination(job.destination or s.destination, full=full) + step


def _attempt_to(s: Schedule, at: Attempt, job: Job | None, full: bool) -> str:
    went = at.destination or (job.destination if job is not None else None) or s.destination
    return views.destination(went, full=full)


async def cmd_edit(cli: Cli, herald: Herald) -> None:
    a = cli.args
    data, data_by_recipient = template_data(a)
    schedule = await herald.edit_schedule(
        cli.actor,
        a.id,
        when=a.when,
        text=a.text,
        template=a.template,
        data=data,
        data_by_recipient=data_by_recipient,
        to=recipients_arg(a.to) if a.to else None,
        add=recipients_arg(a.add_to),
        remove=list(a.remove_to),
        tz=a.tz,
        priority=a.priority,
        auto_pause=a.auto_pause,
        until_done=ladder_arg(a),
        private=a.private,
        expected_version=a.version,
    )
    say_warnings(schedule)
    cli.changed(schedule, verbs.verb("edit").past)
    if not a.json:
        for line in held_and_ladder(schedule):
            cli.emit(f"  {line}")
        read_back_recipients(cli, schedule, "  to: ")
        for line in template_words(schedule):
            cli.emit(f"  {line}")
