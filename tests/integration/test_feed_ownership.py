"""A feed's reminders are its own (issue 32, finding 2): they are found by their link to
the feed, its owner and its tenant, never by the ``feed:<id>:<event>`` key, which no
request may give. On SQLite and PostgreSQL."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
import sqlalchemy as sa

from core import calendars, db
from core.actors import Principal
from core.cases import Herald, ImportRejected, import_schedules
from core.errors import InvalidInput
from core.models import Schedule
from core.settings import Settings, load_settings
from core.store import AuditEntry, ScheduleQuery
from tests.fakes.ics import ICSServer
from tests.support.calendars import ics  # noqa: F401 - the fixture

A, B = "slack:TA", "slack:TB"
ADA = Principal("slack:UADA", A, platform_admin=True)  # an admin of A: the feed's owner
ANNA = Principal("slack:UANNA", A)  # a member of A
BEN = Principal("slack:UBEN", B)  # a member of B

EMPTY = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//t//t//EN\r\nEND:VCALENDAR\r\n"
BOARD = EMPTY.replace(
    "END:VCALENDAR",
    "BEGIN:VEVENT\r\nUID:board-42@a.example\r\nDTSTAMP:20260301T000000Z\r\n"
    "DTSTART:20260310T100000Z\r\nDTEND:20260310T110000Z\r\nSUMMARY:Board call\r\n"
    "DESCRIPTION:Dial-in +1 555 0100 PIN 424242\r\nEND:VEVENT\r\nEND:VCALENDAR",
)


@pytest.fixture
def settings(db_url: str) -> Settings:
    return load_settings(
        HERALD_DATABASE_URL=db_url,
        HERALD_DEFAULT_TZ="UTC",
        HERALD_SLACK_ADMINS_FROM_WORKSPACE=True,
        HERALD_WEBHOOK_ALLOW_PRIVATE="true",  # the .ics server is on 127.0.0.1
        _env_file=None,
    )


def feed_key(feed_id: int, calendar: str) -> str:
    """The key Herald gives the reminder of ``calendar``'s one event, as anyone who
    was sent the invitation can work it out."""
    start = datetime(2026, 3, 1, tzinfo=UTC)
    [event] = calendars.instances(
        calendars.parse(calendar), start, start + timedelta(days=60), ZoneInfo("UTC")
    )
    return f"feed:{feed_id}:{hashlib.sha256(event.key.encode()).hexdigest()[:32]}"


async def planted(herald: Herald, who: Principal, key: str, to: str) -> Schedule:
    """A schedule of ``who`` keyed ``key``, written as the code before this change let
    any member write it (the use case now refuses such a key)."""
    now = herald.clock.now()
    at = now + timedelta(days=2)
    schedule = Schedule(
        owner=who.id,
        tenant=who.tenant,
        destination=to,
        body=f"{who.id}'s own",
        expression="in 2 days",
        timezone="UTC",
        starts_at=at,
        next_run_at=at,
        idempotency_key=key,
        created_at=now,
        updated_at=now,
    )
    stored, created = await herald.store.create_schedule(
        schedule, first_run=at, now=now, audit=AuditEntry(who.id, "schedule.create", "schedule")
    )
    assert created
    return stored


async def test_a_key_of_the_feed_shape_is_refused_everywhere_a_member_gives_one(
    herald: Herald,
) -> None:
    for who in (ADA, ANNA, BEN):
        await herald.sync_member(who, display_name=who.id)
    for key in ("feed:1:0123456789abcdef0123456789abcdef", "FEED:7:x", "feed:"):
        with pytest.raises(InvalidInput, match="beginning with 'feed:' are Herald's own"):
            await herald.create_schedule(
                BEN, to="slack:C0BBBB", when="in 1 hour", text="mine", key=key
            )
    line = json.dumps({"to": "slack:C0BBBB", "when": "in 1 hour", "text": "x", "key": "feed:1:a"})
    with pytest.raises(ImportRejected, match="line 1: Idempotency keys beginning with"):
        await import_schedules(herald, BEN, [line])
    assert await herald.store.list_schedules(ScheduleQuery()) == []
    # a key that merely mentions feeds is the member's to use
    made, created = await herald.create_schedule(
        BEN, to="slack:C0BBBB", when="in 1 hour", text="mine", key="my-feed:1"
    )
    assert created and made.idempotency_key == "my-feed:1"


async def test_a_schedule_keyed_like_a_reminder_is_not_the_feeds(
    herald: Herald,
    ics: ICSServer,  # noqa: F811 - the fixture
) -> None:
    """Tenant B's member (and a member of A) hold schedules keyed as A's feed will key
    its reminder, made before the event was in the calendar. A's refresh still makes
    A's own reminder (with the dial-in) and sends nobody else's schedule A's text; and
    removing the feed cancels A's reminder only."""
    for who in (ADA, ANNA, BEN):
        await herald.sync_member(who, display_name=who.id)
    url = ics.publish("/board.ics", EMPTY)
    feed = await herald.add_feed(
        ADA,
        calendar=url,
        to="slack:C0AAAA",
        before="10m",
        tz="UTC",
        template="{event.summary}: {event.description}",
    )
    assert feed.id is not None and await herald.store.feed_reminders(feed.id) == []
    key = feed_key(feed.id, BOARD)
    bens = await planted(herald, BEN, key, "slack:@UBEN")
    annas = await planted(herald, ANNA, key, "slack:@UANNA")

    ics.publish("/board.ics", BOARD)
    report = await herald.refresh_calendars()
    assert report.reminders == {"created": 1, "moved": 0, "cancelled": 0}
    [reminder] = await herald.store.feed_reminders(feed.id)
    assert (reminder.tenant, reminder.owner, reminder.destination) == (A, ADA.id, "slack:C0AAAA")
    assert reminder.body == "Board call: Dial-in +1 555 0100 PIN 424242"
    assert reminder.starts_at == datetime(2026, 3, 10, 9, 50, tzinfo=UTC)
    assert reminder.idempotency_key == key and reminder.feed_id == feed.id
    for theirs in (bens, annas):
        assert theirs.id is not None
        now = await herald.store.get_schedule(theirs.id)
        assert now is not None
        assert (now.body, now.state, now.starts_at) == (
            theirs.body,
            "active",
            theirs.starts_at,
        ), f"{theirs.owner}'s schedule was changed by A's feed"
        assert now.feed_id is None

    # the invitation changes its PIN: A's reminder says so, nobody else's schedule does
    ics.publish("/board.ics", BOARD.replace("PIN 424242", "PIN 777000"))
    report = await herald.refresh_calendars()
    assert report.reminders == {"created": 0, "moved": 1, "cancelled": 0}
    [changed] = await herald.store.feed_reminders(feed.id)
    assert changed.id == reminder.id and changed.body.endswith("PIN 777000")
    for theirs in (bens, annas):
        now = await herald.store.get_schedule(theirs.id or 0)
        assert now is not None and now.body == theirs.body

    assert await herald.remove_feed(ADA, feed.id) == 1
    for s in (reminder, bens, annas):
        assert s.id is not None
        now = await herald.store.get_schedule(s.id)
        assert now is not None
        assert now.state == ("cancelled" if s.id == reminder.id else "active"), s.owner
    assert [j.state for j in await herald.store.schedule_jobs(bens.id or 0)] == ["pending"]


def test_0012_links_the_reminders_of_the_feeds_owner_only(db_url: str) -> None:
    """Existing reminders are linked to their feed from their keys; a schedule of
    anyone else (another tenant, another member) keyed that way is not. Down and up
    again keeps every row."""
    db.upgrade(db_url, "0011")
    engine = db.make_sync_engine(db_url)
    at = "2026-03-02 12:00:00"
    schedule = (
        "INSERT INTO schedule (id, tenant, owner, destination, body, expression, timezone,"
        " starts_at, state, idempotency_key, version, created_at, updated_at)"
        " VALUES (:id, :tenant, :owner, 'log:', 'x', 'x', 'UTC', :at, 'active', :key, 1,"
        " :at, :at)"
    )
    rows = {
        1: (A, ADA.id, "feed:5:aaaa"),  # the feed's reminder
        2: (B, ADA.id, "feed:5:aaaa"),  # the same id in another tenant
        3: (B, BEN.id, "feed:5:aaaa"),  # planted in tenant B
        4: (A, ANNA.id, "feed:5:aaaa"),  # planted by another member of A
        5: (A, ADA.id, "feed:55:aaaa"),  # another feed's prefix
        6: (A, ADA.id, "deploy-1"),
        7: (A, ADA.id, None),
    }
    try:
        with engine.begin() as conn:
            conn.execute(
                sa.text(
                    "INSERT INTO calendar (id, tenant, owner, source, name, body, failures,"
                    " created_at, updated_at) VALUES (1, :t, :o, 'file:c', '', '', 0, :at, :at)"
                ),
                {"t": A, "o": ADA.id, "at": at},
            )
            conn.execute(
                sa.text(
                    "INSERT INTO feed (id, calendar_id, tenant, owner, destination, before_s,"
                    " template, timezone, state, created_at, updated_at)"
                    " VALUES (5, 1, :t, :o, 'log:', 600, 'x', 'UTC', 'active', :at, :at)"
                ),
                {"t": A, "o": ADA.id, "at": at},
            )
            for id_, (tenant, owner, key) in rows.items():
                values = {"id": id_, "tenant": tenant, "owner": owner, "key": key, "at": at}
                conn.execute(sa.text(schedule), values)
        db.upgrade(db_url, "0012")
        with engine.connect() as conn:
            linked = dict(conn.execute(sa.text("SELECT id, feed_id FROM schedule")).all())
        db.downgrade(db_url, "0011")
        with engine.connect() as conn:
            kept = dict(conn.execute(sa.text("SELECT id, idempotency_key FROM schedule")).all())
        db.upgrade(db_url)
    finally:
        engine.dispose()
    assert linked == {1: 5, 2: None, 3: None, 4: None, 5: None, 6: None, 7: None}
    assert kept == {id_: key for id_, (_, _, key) in rows.items()}
