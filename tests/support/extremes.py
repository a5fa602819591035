"""Extreme inputs for the payload contract tests: the longest texts Herald stores,
the largest ids, unicode that grows when escaped, many schedules, long names."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from core.cases import Herald, ScheduleDetail
from core.models import Feed, Job, Schedule
from core.store import AttemptRecord, ClaimedJob, DeadLetter, Verdict

BIG = 2**63 - 1  # the largest id a BIGINT holds
_T = datetime(2026, 3, 2, 12, tzinfo=UTC)
#: Slack's escaped form grows 4-5 times (&amp;), emoji are several code points each.
BODY = ("&lt;@U123&gt; &amp; 👩‍👩‍👧‍👦 Ünïcødé — " * 200)[:4000]
ERROR = ("Provider said <b>no</b> & “refused” 🚫 " * 80)[:2000]
ZONE = "America/Argentina/ComodRivadavia"
OWNER = "slack:U" + "9" * 190
DESTINATIONS = (
    "slack:C0123ABC/1700000000.000100",
    "discord:" + "9" * 20,
    "webhook:https://" + ("sub." * 60) + "example.com/" + "p" * 1500,
    "discord-webhook:https://discord.com/api/webhooks/" + "9" * 20 + "/" + "t" * 100,
    "email:" + "a" * 200 + "@" + "b" * 200 + ".example.com",
    "log:",
)
HOLIDAYS = "\r\n".join(
    [
        "BEGIN:VCALENDAR",
        "VERSION:2.0",
        "PRODID:-//herald tests//EN",
        *[
            line
            for day in range(3, 28)
            for line in (
                "BEGIN:VEVENT",
                f"UID:day{day}@tests",
                f"DTSTART;VALUE=DATE:202603{day:02d}",
                f"SUMMARY:{'Fête nationale & <jour> férié 🎉 ' * 6}",
                "END:VEVENT",
            )
        ],
        "END:VCALENDAR",
        "",
    ]
)


async def extreme_schedules(herald: Herald, actor: str = "local:alice") -> list[Schedule]:
    """Real schedules (with skip calendars whose events have long names), then copies
    at the extremes: the largest ids and versions, long owners, every destination
    kind, paused, a long zone and expression."""
    base, _ = await herald.create_schedule(
        actor,
        to="log:",
        when="every day at 9am",
        text=BODY,
        tz=ZONE,
        skip_files={"holidays.ics": HOLIDAYS},
    )
    once, _ = await herald.create_schedule(actor, to="log:", when="in 2 hours", text="é" * 4000)
    out = [base, once]
    for n, to in enumerate(DESTINATIONS):
        out.append(
            base.model_copy(
                update={
                    "id": BIG - n,
                    "version": 2**31 - 1,
                    "owner": OWNER,
                    "destination": to,
                    "expression": "every day at 9am " + "ünïcode " * 120,
                }
            )
        )
    out.append(base.model_copy(update={"id": BIG, "state": "paused"}))
    return out


def detail_of(schedule: Schedule) -> ScheduleDetail:
    """The schedule with many finished jobs, each with a long error."""
    start = schedule.starts_at
    jobs = [
        Job(
            id=BIG - n,
            schedule_id=schedule.id or 0,
            occurrence_at=start - timedelta(days=n),
            due_at=start - timedelta(days=n),
            state=("dead", "delivered", "retrying", "skipped")[n % 4],
            attempts=2**31 - 1,
            idempotency_key=f"k{n}",
            destination=schedule.destination,
            body=schedule.body,
            last_error=ERROR,
            finished_at=start - timedelta(days=n),
        )
        for n in range(12)
    ]
    return ScheduleDetail(schedule, jobs, [])


def dead_letters(count: int = 40) -> list[DeadLetter]:
    return [
        DeadLetter(
            job_id=BIG - n,
            schedule_id=BIG - n,
            owner=OWNER,
            destination=DESTINATIONS[n % len(DESTINATIONS)],
            body=BODY,
            attempts=2**31 - 1,
            last_error=ERROR,
            occurrence_at=_T,
            finished_at=_T,
            retry_requested_by=None,
            retry_requested_at=None,
        )
        for n in range(count)
    ]


def finished(n: int = 0) -> Verdict:
    job = ClaimedJob(
        id=BIG - n,
        schedule_id=BIG - n,
        occurrence_at=_T,
        due_at=_T,
        attempts=2**31 - 1,
        idempotency_key=f"key-{n}",
        destination=DESTINATIONS[n % len(DESTINATIONS)],
        body=BODY,
        rrule=None,
        max_lateness_s=None,
        options={},
    )
    attempt = AttemptRecord(_T, _T, "dead", 500, ERROR)
    return Verdict(job, "dead", attempt=attempt, error=ERROR)


def feeds(count: int = 30) -> list[Feed]:
    return [
        Feed(
            id=BIG - n,
            calendar_id=BIG - n,
            owner=OWNER,
            destination=DESTINATIONS[n % len(DESTINATIONS)],
            before_s=366 * 86400,
            template="{event.summary} " + "ü&<>" * 990,
            timezone=ZONE,
        )
        for n in range(count)
    ]
