"""Tenants: every verb of the use-case layer (what Slack, Discord, the CLI and the console
call) with actors of tenant A against objects of tenant B answers "not found" and
changes nothing; roles are per tenant; mentions are the author's; quotas refuse and
audit. On SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any

import pytest

from core.actors import Mentions, Principal
from core.cases import Herald, import_schedules
from core.channels.base import DeliveryResult
from core.clock import ManualClock
from core.dispatcher import Dispatcher, DispatcherConfig
from core.errors import HeraldError, NotFound, PermissionDenied
from core.settings import Settings, load_settings
from core.store import AttemptFilter, AuditFilter, DeadFilter, ScheduleFilter, ScheduleQuery, Store
from core.tenancy import MentionRefused, QuotaExceeded, neutralize_mentions
from tests.conftest import START
from tests.support.calendars import attach_skip_calendars
from tests.support.channels import RecordingChannel
from tests.support.store import audit_trail

A, B = "slack:TA", "slack:TB"
ANNA = Principal("slack:UANNA", A)  # a member of A
ADA = Principal("slack:UADA", A, platform_admin=True)  # an admin of A (workspace admin)
BEN = Principal("slack:UBEN", B)  # a member of B, who owns B's objects
BEA = Principal("slack:UBEA", B, platform_admin=True)  # an admin of B
ROOT = "local:root-admin"  # HERALD_ADMINS: Herald-wide


def tenant_settings(db_url: str, **extra: Any) -> Settings:
    values: dict[str, Any] = {
        "HERALD_DATABASE_URL": db_url,
        "HERALD_ADMINS": ROOT,
        "HERALD_DEFAULT_TZ": "UTC",
        "HERALD_SLACK_ADMINS_FROM_WORKSPACE": True,
        "_env_file": None,
        **extra,
    }
    return load_settings(**values)


@pytest.fixture
def settings(db_url: str) -> Settings:
    return tenant_settings(db_url)


@pytest.fixture
async def world(herald: Herald, clock: ManualClock) -> dict[str, int]:
    """Tenant B's objects: a recurring schedule, a paused one, a dead letter (with a
    retry request) and a feed; the admins of both tenants known to Herald."""
    for who in (ADA, BEA, ANNA, BEN):
        await herald.sync_member(who, display_name=who.id)
    weekly, _ = await herald.create_schedule(
        BEN, to="slack:C0BBBB", when="every monday at 9am", text="B's standup"
    )
    paused, _ = await herald.create_schedule(
        BEN, to="webhook:https://b.example/hook", when="every day at 10am", text="B's paused"
    )
    await herald.pause_schedule(BEN, paused.id)
    doomed, _ = await herald.create_schedule(
        BEN, to="webhook:https://b.example/dead", when="in 1 minute", text="B's doomed"
    )
    clock.advance(61)
    failing = RecordingChannel(lambda d: DeliveryResult.permanent("gone", 410), kind="webhook")
    await Dispatcher(
        herald.store, {"webhook": failing}, clock=clock, config=DispatcherConfig(max_attempts=1)
    ).drain()
    [letter] = await herald.dead_letters(BEA)
    await herald.retry_dead_letters(BEN, [letter.job_id])  # a request, for BEA to decide
    feed = await herald.add_feed(
        BEA, calendar="b.ics", body=_ICS, to="slack:C0BBBB", before="10m", tz="UTC"
    )
    return {
        "weekly": weekly.id or 0,
        "paused": paused.id or 0,
        "dead": letter.job_id,
        "dead_schedule": doomed.id or 0,
        "feed": feed.id or 0,
    }


_ICS = (
    "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//t//t//EN\r\nBEGIN:VEVENT\r\nUID:e1\r\n"
    "DTSTAMP:20260301T000000Z\r\nDTSTART:20260310T100000Z\r\nDTEND:20260310T110000Z\r\n"
    "SUMMARY:Review @everyone <!channel>\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
)


async def snapshot(herald: Herald) -> list[tuple[Any, ...]]:
    """Everything a use case could have changed (refusals add only ``.denied`` audit
    rows, which are checked on their own)."""
    out: list[tuple[Any, ...]] = []
    for s in await herald.store.list_schedules(ScheduleQuery()):
        assert s.id is not None
        jobs = await herald.store.schedule_jobs(s.id)
        trail = await audit_trail(herald.store, "schedule", str(s.id))
        kept = [row.action for row in trail if not row.action.endswith(".denied")]
        out.append((s.model_dump(), [j.model_dump() for j in jobs], kept))
    return out


Verb = Callable[[Herald, Principal | str, dict[str, int]], Awaitable[Any]]

#: Every verb that names an object, as Slack, Discord, the CLI and the console call it.
NAMED: dict[str, Verb] = {
    "show": lambda h, a, w: h.show_schedule(a, w["weekly"]),
    "edit": lambda h, a, w: h.edit_schedule(a, w["weekly"], text="hijacked"),
    "pause": lambda h, a, w: h.pause_schedule(a, w["weekly"]),
    "resume": lambda h, a, w: h.resume_schedule(a, w["paused"]),
    "skip": lambda h, a, w: h.skip_next(a, w["weekly"]),
    "cancel": lambda h, a, w: h.cancel_schedule(a, w["weekly"]),
    "timeline": lambda h, a, w: h.timeline(a, schedule_id=w["weekly"]),
    "timeline of a job": lambda h, a, w: h.timeline(a, job_id=w["dead"]),
    "dead letter": lambda h, a, w: h.dead_letter(a, w["dead"]),
    "retry": lambda h, a, w: h.retry_dead_letters(a, [w["dead"]]),
    "decide retry": lambda h, a, w: h.decide_dead_letters(a, [w["dead"]], "retry"),
    "decide discard": lambda h, a, w: h.decide_dead_letters(a, [w["dead"]], "discard"),
    "reject": lambda h, a, w: h.reject_dead_retry(a, [w["dead"]]),
    "discard": lambda h, a, w: h.discard_dead_letters(a, [w["dead"]]),
    "console retry": lambda h, a, w: h.dead_letter_action(a, "retry", ids=[w["dead"]]),
    "console approve": lambda h, a, w: h.dead_letter_action(a, "approve", ids=[w["dead"]]),
    "remove feed": lambda h, a, w: h.remove_feed(a, w["feed"]),
    "skip calendars": lambda h, a, w: attach_skip_calendars(
        h, a, w["weekly"], files={"h.ics": _ICS}
    ),
}


@pytest.mark.parametrize("who", [ANNA, ADA], ids=["member of A", "admin of A"])
async def test_an_object_of_another_tenant_is_not_found_and_nothing_changes(
    herald: Herald, world: dict[str, int], who: Principal
) -> None:
    """Every verb in NAMED, one after the other on the same world (one world per actor
    keeps the matrix fast): each is refused, and nothing of B changed."""
    before = await snapshot(herald)
    feeds = await herald.list_feeds(BEA)
    for verb, call in NAMED.items():
        with pytest.raises(HeraldError) as refused:
            await call(herald, who, world)
        error = refused.value
        if isinstance(error, PermissionDenied):
            # a member asking for an admin's verb is refused for their role, before any
            # object is looked at (so the refusal says nothing about B's objects)
            assert who is ANNA and "Only" in str(error), (verb, error)
            assert str(world["dead"]) not in str(error), (verb, error)
        else:
            assert isinstance(error, NotFound), (verb, error)
            assert "of yours" in str(error) or "that you can see" in str(error), (verb, error)
        assert await snapshot(herald) == before, verb
        assert await herald.list_feeds(BEA) == feeds, verb
        [letter] = await herald.dead_letters(BEA)
        assert letter.retry_requested_by == BEN.id, verb  # still dead, still asked for
    refusals = await herald.audit_log(ROOT, AuditFilter(tenant=A, actor=who.id))
    assert refusals and all(row.action.endswith(".denied") for row in refusals)
    assert not [r for r in await herald.audit_log(BEA, AuditFilter()) if r.actor == who.id]


async def test_exporting_another_tenants_member_exports_nothing_of_theirs(
    herald: Herald, world: dict[str, int]
) -> None:
    exported = (await herald.export_ics(ADA, "slack:UBEN")).decode()
    assert "B's standup" not in exported and "VEVENT" not in exported
    assert "B's standup" in (await herald.export_ics(BEN)).decode()


async def test_the_same_id_answers_as_a_missing_one(herald: Herald, world: dict[str, int]) -> None:
    """An id of another tenant reads exactly like an id that does not exist."""
    with pytest.raises(NotFound) as theirs:
        await herald.show_schedule(ADA, world["weekly"])
    with pytest.raises(NotFound) as missing:
        await herald.show_schedule(ADA, 99_999)
    assert str(theirs.value) == f"There is no schedule {world['weekly']} of yours."
    assert str(missing.value) == "There is no schedule 99999 of yours."


async def test_lists_and_pages_of_another_tenant_are_empty(
    herald: Herald, world: dict[str, int]
) -> None:
    """Admin of A: every list and console page shows nothing of B."""
    assert await herald.list_schedules(ADA, everyone=True) == []
    assert await herald.dead_letters(ADA) == []
    assert await herald.list_feeds(ADA) == []
    assert await herald.schedules_page(ADA, ScheduleFilter()) == []
    assert await herald.delivery_log(ADA, AttemptFilter()) == []
    assert await herald.dead_page(ADA, DeadFilter()) == []
    assert await herald.count_dead(ADA, DeadFilter()) == 0
    assert await herald.dead_groups(ADA, DeadFilter()) == []
    for view in ("due", "pending", "in_flight", "retrying"):
        assert await herald.queue_page(ADA, view) == []
    assert (await herald.calendars_page(ADA)).rows == []
    audit = await herald.audit_log(ADA, AuditFilter())
    assert all(row.tenant == A for row in audit)
    overview = await herald.overview(ADA)
    assert sum(overview.counts.values()) == 0 and overview.figures.dead == 0
    # and naming B's tenant in a filter is refused like a missing one
    with pytest.raises(NotFound):
        await herald.schedules_page(ADA, ScheduleFilter(tenant=B))
    with pytest.raises(NotFound):
        await herald.list_schedules(ADA, everyone=True, tenant=B)


async def test_bulk_actions_never_reach_another_tenant(
    herald: Herald, world: dict[str, int]
) -> None:
    before = await snapshot(herald)
    assert await herald.bulk_schedules(ADA, "cancel", ScheduleFilter()) == 0
    assert (
        await herald.bulk_schedules(ADA, "shift", ScheduleFilter(), shift=timedelta(hours=1)) == 0
    )
    assert (await herald.dead_letter_action(ADA, "discard", f=DeadFilter())) == ("discarded", 0)
    assert await snapshot(herald) == before


async def test_an_admin_of_b_is_an_admin_of_b_only(herald: Herald, world: dict[str, int]) -> None:
    in_b = await herald.actor(BEA)
    assert in_b.is_admin and not in_b.herald_wide
    # the same person acting from A (as Slack would send it) is a plain member there
    in_a = await herald.sync_member(Principal(BEA.id, A), platform_admin=False)
    assert not in_a.is_admin
    with pytest.raises(NotFound):
        await herald.show_schedule(Principal(BEA.id, A), world["weekly"])
    # and B's admin decides B's dead letters
    assert await herald.decide_dead_letters(BEA, [world["dead"]], "retry") == 1


async def test_roles_are_given_per_tenant(herald: Herald, world: dict[str, int]) -> None:
    await herald.set_role(ROOT, "slack:UANNA", "operator", tenant=A)
    assert (await herald.actor(ANNA)).sees_everything
    assert not (await herald.actor(Principal(ANNA.id, B))).sees_everything
    # an admin of B cannot give roles in A
    with pytest.raises(NotFound):
        await herald.set_role(BEA, "slack:UBEN", "admin", tenant=A)
    assert not (await herald.actor(Principal("slack:UBEN", A))).is_admin


async def test_herald_wide_actors_see_every_tenant_and_filter_by_it(
    herald: Herald, world: dict[str, int]
) -> None:
    await herald.create_schedule(ANNA, to="slack:C0AAAA", when="every friday at 4pm", text="A's")
    both = await herald.list_schedules(ROOT, everyone=True)
    assert {s.tenant for s in both} == {A, B}
    only_a = await herald.list_schedules(ROOT, everyone=True, tenant=A)
    assert [s.body for s in only_a] == ["A's"]
    page = await herald.schedules_page(ROOT, ScheduleFilter(tenant=B))
    assert {s.tenant for s in page} == {B}
    # a local operator is Herald-wide too; a local member is not
    await herald.set_role(ROOT, "local:olga", "operator")
    assert {s.tenant for s in await herald.list_schedules("local:olga", everyone=True)} == {A, B}
    assert await herald.list_schedules("local:alice", everyone=False) == []


async def test_rows_made_in_a_tenant_carry_it(herald: Herald, world: dict[str, int]) -> None:
    [letter] = await herald.dead_letters(BEA)
    assert letter.tenant == B
    schedule = (await herald.show_schedule(BEN, world["weekly"])).schedule
    assert schedule.tenant == B
    trail = await audit_trail(herald.store, "schedule", str(world["weekly"]))
    assert {row.tenant for row in trail} == {B}
    [feed] = await herald.list_feeds(BEA)
    assert feed.tenant == B


# --- mentions ------------------------------------------------------------------------


@pytest.mark.parametrize("mention", ["<!channel>", "<!here>", "<!everyone>", "<!subteam^S0123>"])
async def test_slack_broadcasts_are_refused_for_members(herald: Herald, mention: str) -> None:
    before = await snapshot(herald)
    with pytest.raises(MentionRefused, match="Only admins can notify a whole channel"):
        await herald.create_schedule(
            ANNA, to="slack:C0AAAA", when="tomorrow at 9am", text=f"{mention} lunch!"
        )
    with pytest.raises(MentionRefused):  # in blocks too
        await herald.create_schedule(
            ANNA,
            to="slack:C0AAAA",
            when="tomorrow at 9am",
            text="lunch",
            options={"blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": mention}}]},
        )
    assert await snapshot(herald) == before
    denied = await herald.audit_log(ROOT, AuditFilter(action="schedule.create.denied"))
    assert len(denied) == 2 and all(row.tenant == A for row in denied)
    made, _ = await herald.create_schedule(
        ADA, to="slack:C0AAAA", when="tomorrow at 9am", text=f"{mention} lunch!"
    )
    assert made.id is not None  # an admin may


async def test_a_tenant_may_let_its_members_broadcast(db_url: str, store: Store) -> None:
    herald = Herald(store, tenant_settings(db_url, HERALD_BROADCAST_TENANTS=A), ManualClock(START))
    made, _ = await herald.create_schedule(
        ANNA, to="slack:C0AAAA", when="in 1 hour", text="<!here>"
    )
    assert made.id is not None
    with pytest.raises(MentionRefused):
        await herald.create_schedule(BEN, to="slack:C0BBBB", when="in 1 hour", text="<!here>")


async def test_an_edit_is_checked_like_a_create(herald: Herald) -> None:
    made, _ = await herald.create_schedule(ANNA, to="slack:C0AAAA", when="in 1 hour", text="hello")
    with pytest.raises(MentionRefused):
        await herald.edit_schedule(ANNA, made.id, text="<!channel> hello")
    assert (await herald.show_schedule(ANNA, made.id)).schedule.body == "hello"


async def test_discord_messages_notify_whom_the_author_could(herald: Herald) -> None:
    guild = "discord:700"
    member = Principal("discord:1", guild, mentions=Mentions(roles=frozenset({"55"})))
    text = "@everyone <@&55> <@&66> <@123> ship it"
    plain, _ = await herald.create_schedule(
        member, to="discord:700000000000000900", when="in 1 hour", text=text
    )
    assert plain.options["allowed_mentions"] == {"parse": ["users"], "roles": ["55"]}
    boss = Principal("discord:2", guild, mentions=Mentions(everyone=True))
    loud, _ = await herald.create_schedule(
        boss, to="discord:700000000000000900", when="in 1 hour", text=text
    )
    assert loud.options["allowed_mentions"] == {"parse": ["users", "roles", "everyone"]}
    # nobody may set allowed_mentions themselves
    with pytest.raises(HeraldError, match="Unknown option 'allowed_mentions'"):
        await herald.create_schedule(
            member,
            to="discord:700000000000000900",
            when="in 1 hour",
            text=text,
            options={"allowed_mentions": {"parse": ["everyone"]}},
        )


def test_a_calendars_texts_mention_nobody() -> None:
    shown = neutralize_mentions("Review @everyone <!channel> <@&55> <!subteam^S1|team>")
    assert shown is not None
    assert "@everyone" not in shown and "<!channel>" not in shown and "<@&55>" not in shown
    assert "&lt;!channel&gt;" in shown and "&lt;!subteam^S1|team&gt;" in shown


async def test_feed_reminders_do_not_broadcast_what_a_calendar_says(
    herald: Herald, world: dict[str, int]
) -> None:
    reminders = await herald.list_schedules(BEA, everyone=True, state="active")
    [reminder] = [s for s in reminders if s.expression.startswith("feed")]
    assert "<!channel>" not in reminder.body and "@everyone" not in reminder.body


async def test_herald_buttons_cannot_be_planted_in_user_blocks(herald: Herald) -> None:
    planted = [
        {
            "type": "actions",
            "elements": [
                {"type": "button", "action_id": "herald_cancel", "value": "1", "text": {}}
            ],
        }
    ]
    with pytest.raises(HeraldError, match="Herald's own action or block ids"):
        await herald.create_schedule(
            ADA, to="slack:C0AAAA", when="in 1 hour", text="x", options={"blocks": planted}
        )


# --- quotas ----------------------------------------------------------------------------


async def test_live_schedules_per_member_and_per_tenant(db_url: str, store: Store) -> None:
    settings = tenant_settings(
        db_url, HERALD_QUOTA_SCHEDULES_PER_MEMBER=3, HERALD_QUOTA_SCHEDULES_PER_TENANT=4
    )
    herald = Herald(store, settings, ManualClock(START))
    for n in range(3):
        await herald.create_schedule(ANNA, to="log:", when="in 1 hour", text=f"a{n}")
    before = await snapshot(herald)
    with pytest.raises(QuotaExceeded, match="at most 3"):
        await herald.create_schedule(ANNA, to="log:", when="in 1 hour", text="one too many")
    assert await snapshot(herald) == before
    await herald.create_schedule(ADA, to="log:", when="in 1 hour", text="the fourth")
    with pytest.raises(QuotaExceeded, match="This workspace .* at most 4"):
        await herald.create_schedule(ADA, to="log:", when="in 1 hour", text="the fifth")
    # other tenants have their own quota; cancelled schedules do not count
    await herald.create_schedule(BEN, to="log:", when="in 1 hour", text="B's")
    [first, *_] = await herald.list_schedules(ANNA)
    await herald.cancel_schedule(ANNA, first.id)
    await herald.create_schedule(ANNA, to="log:", when="in 1 hour", text="room again")
    denied = await herald.audit_log(ROOT, AuditFilter(action="schedule.create.denied"))
    assert [row.actor for row in denied] == [ADA.id, ANNA.id]


async def test_each_recipient_counts_against_the_quota(db_url: str, store: Store) -> None:
    herald = Herald(
        store, tenant_settings(db_url, HERALD_QUOTA_SCHEDULES_PER_MEMBER=3), ManualClock(START)
    )
    both = ["webhook:https://example.com/a", "webhook:https://example.com/b"]
    made = await herald.create_schedule(ANNA, to=both, when="in 1 hour", text="two")
    before = await snapshot(herald)
    with pytest.raises(QuotaExceeded, match="at most 3 .*once per recipient.*would add 2"):
        await herald.create_schedule(ANNA, to=both, when="in 1 hour", text="two more")
    with pytest.raises(QuotaExceeded, match="at most 3"):  # an edit adding two, likewise
        await herald.edit_schedule(
            ANNA, made[0].id, add=["webhook:https://example.com/c", "webhook:https://example.com/d"]
        )
    assert await snapshot(herald) == before
    await herald.create_schedule(ANNA, to="log:", when="in 1 hour", text="the third")


async def test_imports_count_against_the_quota(db_url: str, store: Store) -> None:
    settings = tenant_settings(
        db_url, HERALD_QUOTA_SCHEDULES_PER_MEMBER=5, HERALD_QUOTA_EXEMPT_TENANTS=""
    )
    herald = Herald(store, settings, ManualClock(START))
    lines = [f'{{"to": "log:", "when": "in 1 hour", "text": "m{n}"}}' for n in range(6)]
    with pytest.raises(QuotaExceeded, match="at most 5"):
        await import_schedules(herald, "local:alice", lines)
    assert await herald.list_schedules("local:alice") == []
    report = await import_schedules(herald, "local:alice", lines[:5])
    assert report.imported == 5


async def test_the_terminal_is_exempt_by_default(db_url: str, store: Store) -> None:
    herald = Herald(
        store, tenant_settings(db_url, HERALD_QUOTA_SCHEDULES_PER_MEMBER=1), ManualClock(START)
    )
    for n in range(3):
        await herald.create_schedule("local:alice", to="log:", when="in 1 hour", text=f"{n}")


async def test_the_shortest_interval_into_a_shared_channel(herald: Herald) -> None:
    before = await snapshot(herald)
    with pytest.raises(QuotaExceeded, match="repeats every 5 minutes.*every 15 minutes"):
        await herald.create_schedule(ANNA, to="slack:C0AAAA", when="every 5 minutes", text="spam")
    with pytest.raises(QuotaExceeded):  # the rule's real gaps count, not its FREQ
        await herald.create_schedule(
            ANNA,
            to="discord:700000000000000900",
            when="RRULE:FREQ=HOURLY;BYMINUTE=0,10,20",
            text="spam",
        )
    assert await snapshot(herald) == before
    await herald.create_schedule(ANNA, to="slack:C0AAAA", when="every 15 minutes", text="ok")
    await herald.create_schedule(  # (30 an hour: HERALD_RECIPIENT_HOURLY_CAP's most)
        ANNA,
        to="webhook:https://a.example/x",
        when="every 2 minutes",
        text="a webhook is no shared channel",
    )
    await herald.create_schedule(ADA, to="slack:C0AAAA", when="every minute", text="admins may")
    made, _ = await herald.create_schedule(ANNA, to="slack:C0AAAA", when="every hour", text="x")
    with pytest.raises(QuotaExceeded):
        await herald.edit_schedule(ANNA, made.id, when="every 2 minutes")


async def test_commands_per_minute(db_url: str, store: Store) -> None:
    clock = ManualClock(START)
    herald = Herald(store, tenant_settings(db_url, HERALD_QUOTA_COMMANDS_PER_MINUTE=3), clock)
    for _ in range(3):
        await herald.count_command(ANNA)
    with pytest.raises(QuotaExceeded, match="more than 3 commands in a minute"):
        await herald.count_command(ANNA)
    with pytest.raises(QuotaExceeded):
        await herald.count_command(ANNA)
    await herald.count_command(BEN)  # someone else's minute
    clock.advance(60)
    await herald.count_command(ANNA)
    denied = await herald.audit_log(ROOT, AuditFilter(action="command.denied"))
    assert len(denied) == 1  # audited once a minute, however often refused
