"""The dispatcher's reading of a recipient's preferences (core.dispatcher.recipients):
the pure verdict of one job (:func:`judged`) and the batch's read (one query, none for
a batch of channels once the tenant's defaults are known). The whole path, on both
databases, is tests/integration/test_quiet_hours.py."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any, cast

import pytest

from core.clock import ManualClock
from core.dispatcher.config import DispatcherConfig
from core.dispatcher.recipients import FRESH_SECONDS, Recipients, judged
from core.preferences import TENANT_DEFAULT, Preferences, QuietHours
from core.store import ClaimedJob, DispatchStore, HandBack, PersonNow, Settled, Verdict

BOB, ALICE = "slack:U0BOB", "slack:U0ALICE"
NOBODY = PersonNow(None)


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def job(
    due: str,
    destination: str = "slack:@U0BOB",
    *,
    rrule: str | None = None,
    priority: int = 1,
    owner: str = ALICE,
) -> ClaimedJob:
    return ClaimedJob(
        id=7,
        schedule_id=3,
        occurrence_at=utc(due),
        due_at=utc(due),
        attempts=1,
        idempotency_key="k",
        destination=destination,
        body="Stand-up",
        rrule=rrule,
        max_lateness_s=None,
        options={},
        tenant="slack:T1",
        owner=owner,
        priority=priority,
    )


def bob(zone: str | None = "Europe/Berlin", **prefs: Any) -> PersonNow:
    return PersonNow(Preferences(**prefs), zone=zone, name="Bob")


NIGHT = QuietHours.parse("22:00-08:00")


def test_quiet_hours_across_midnight_hold_until_the_morning() -> None:
    # 23:30 in Berlin (winter): held until 08:00 the next day, said with its date
    j = job("2026-01-14 22:30")
    held = judged(j, BOB, bob(quiet=NIGHT), NOBODY, NOBODY, utc("2026-01-14 22:29"))
    assert isinstance(held, HandBack)
    assert held.retry_at == utc("2026-01-15 07:00") and held.state == "pending"
    assert held.error == "Held until Thu 15 Jan 08:00 Europe/Berlin (Bob's quiet hours)."
    assert held.refund_attempt  # no try counted
    # 06:30 in Berlin: the same morning, said by the hour alone
    early = judged(
        job("2026-01-15 05:30"), BOB, bob(quiet=NIGHT), NOBODY, NOBODY, utc("2026-01-15 05:30")
    )
    assert isinstance(early, HandBack)
    assert early.error == "Held until 08:00 Europe/Berlin (Bob's quiet hours)."
    # 08:00 sharp is no longer quiet
    j = job("2026-01-15 07:00")
    assert judged(j, BOB, bob(quiet=NIGHT), NOBODY, NOBODY, utc("2026-01-15 07:00")) is j


@pytest.mark.parametrize(
    ("due", "zone", "opens"),
    [
        # Berlin springs forward at 02:00 on 29 March: 08:00 CEST = 06:00Z
        ("2026-03-29 00:30", "Europe/Berlin", "2026-03-29 06:00"),
        # and falls back on 25 October: 08:00 CET = 07:00Z
        ("2026-10-25 00:30", "Europe/Berlin", "2026-10-25 07:00"),
        # Los Angeles springs forward on 8 March: 08:00 PDT = 15:00Z
        ("2026-03-08 09:30", "America/Los_Angeles", "2026-03-08 15:00"),
        # and falls back on 1 November: 08:00 PST = 16:00Z
        ("2026-11-01 08:30", "America/Los_Angeles", "2026-11-01 16:00"),
    ],
)
def test_the_window_opens_at_eight_on_the_wall_clock_across_dst(
    due: str, zone: str, opens: str
) -> None:
    held = judged(job(due), BOB, bob(zone, quiet=NIGHT), NOBODY, NOBODY, utc(due))
    assert isinstance(held, HandBack) and held.retry_at == utc(opens)


def test_the_tenants_window_and_zone_when_the_member_has_none() -> None:
    defaults = PersonNow(Preferences(quiet=NIGHT), zone="America/Los_Angeles")
    person = PersonNow(None, zone=None, name="")  # no zone, no preferences of their own
    held = judged(job("2026-01-15 07:00"), BOB, person, NOBODY, defaults, utc("2026-01-15 07:00"))
    assert isinstance(held, HandBack) and held.retry_at == utc("2026-01-15 16:00")
    assert held.error is not None and held.error.endswith(f"({BOB}'s quiet hours).")
    # an unknown zone reads as UTC, never as an error
    odd = PersonNow(Preferences(quiet=NIGHT), zone="Mars/Olympus", name="Bob")
    held = judged(job("2026-01-15 07:00"), BOB, odd, NOBODY, NOBODY, utc("2026-01-15 07:00"))
    assert isinstance(held, HandBack) and held.retry_at == utc("2026-01-15 08:00")


def test_urgent_is_not_held() -> None:
    j = job("2026-01-14 22:30", priority=0)
    assert judged(j, BOB, bob(quiet=NIGHT), NOBODY, NOBODY, utc("2026-01-14 22:30")) is j


def test_a_room_is_held_by_the_tenants_window_only() -> None:
    hook = job("2026-01-14 23:00", "webhook:https://hooks.example.com/x")
    defaults = PersonNow(Preferences(quiet=NIGHT, hold_channels=True))
    held = judged(hook, None, None, NOBODY, defaults, utc("2026-01-14 23:00"))
    assert isinstance(held, HandBack)
    assert held.error == "Held until Thu 15 Jan 08:00 UTC (the team's quiet hours)."


@pytest.mark.parametrize(
    ("prefs", "author", "sentence"),
    [
        ({"blocked": (ALICE,)}, NOBODY, "Bob does not accept reminders from you"),
        ({"accept_from": "admins"}, NOBODY, "Bob accepts reminders only from admins"),
        (
            {"accept_from": "self"},
            PersonNow(None, admin=True),
            "Bob accepts reminders only from themselves",
        ),
    ],
)
def test_a_refusal_now_skips_with_the_reason(
    prefs: dict[str, Any], author: PersonNow, sentence: str
) -> None:
    j = job("2026-03-02 13:00", rrule="DTSTART:20260302T130000Z\nRRULE:FREQ=DAILY")
    skipped = judged(j, BOB, bob(**prefs), author, NOBODY, utc("2026-03-02 13:00"))
    assert isinstance(skipped, Verdict) and skipped.state == "skipped"
    assert skipped.error == (
        f"Not sent: {sentence} (their preferences changed after this was scheduled)."
    )
    assert skipped.attempt is None and skipped.refund_attempt
    assert skipped.next_run == utc("2026-03-03 13:00")  # a recurring schedule goes on


def test_admins_and_oneself_are_accepted() -> None:
    admins_only = bob(accept_from="admins")
    j = job("2026-03-02 13:00")
    now = utc("2026-03-02 13:00")
    assert judged(j, BOB, admins_only, PersonNow(None, admin=True), NOBODY, now) is j
    mine = job("2026-03-02 13:00", owner=BOB)
    assert judged(mine, BOB, bob(accept_from="self"), NOBODY, NOBODY, now) is mine


def test_a_preferred_place_takes_the_delivery() -> None:
    j = job("2026-03-02 13:00")
    now = utc("2026-03-02 13:00")
    placed = judged(j, BOB, bob(place="email:bob@example.com"), NOBODY, NOBODY, now)
    assert isinstance(placed, ClaimedJob) and placed is not j
    assert placed.destination == "email:bob@example.com" and placed.id == j.id
    # a place that is not a person's destination (or no longer reads) is ignored
    for odd in ("webhook:https://hooks.example.com/x", "nonsense", "slack:C0ROOM"):
        assert judged(j, BOB, bob(place=odd), NOBODY, NOBODY, now) is j


class CountingStore:
    """The one store method the room calls, counting its queries."""

    def __init__(self, people: Mapping[tuple[str, str], PersonNow]) -> None:
        self.people = dict(people)
        self.asked: list[dict[str, set[str]]] = []

    async def people_now(
        self, wanted: Mapping[str, Iterable[str]]
    ) -> dict[tuple[str, str], PersonNow]:
        self.asked.append({t: set(ids) for t, ids in wanted.items()})
        return {
            (t, m): p
            for t, ids in wanted.items()
            for m in (*ids, TENANT_DEFAULT)
            if (p := self.people.get((t, m))) is not None
        }


async def test_one_query_per_batch_and_none_for_channels_once_known() -> None:
    clock = ManualClock(utc("2026-01-14 22:30"))
    store = CountingStore({("slack:T1", BOB): bob(quiet=NIGHT, place="email:bob@example.com")})
    recorded: list[Settled] = []
    room = Recipients(cast(DispatchStore, store), clock, DispatcherConfig(), recorded.extend)
    hooks = [job("2026-01-14 22:30", f"webhook:https://hooks.example.com/{n}") for n in range(50)]
    assert await room.screen(hooks) == hooks
    assert store.asked == [{"slack:T1": {TENANT_DEFAULT}}]  # the tenant's defaults, once
    assert await room.screen(hooks) == hooks
    assert len(store.asked) == 1  # known: nothing more for a batch of channels
    # a person: one query for them and the author (the defaults are still known)
    kept = await room.screen([job("2026-01-14 22:30"), *hooks[:2]])
    assert store.asked[1] == {"slack:T1": {BOB, ALICE}}
    assert kept == hooks[:2] and len(recorded) == 1  # Bob's held (recorded by the room)
    # stale after FRESH_SECONDS: read again
    clock.advance(FRESH_SECONDS + 1)
    await room.screen(hooks[:1])
    assert len(store.asked) == 3


async def test_a_placed_job_is_recorded_as_claimed() -> None:
    clock = ManualClock(utc("2026-03-02 13:00"))
    store = CountingStore({("slack:T1", BOB): bob(place="email:bob@example.com")})
    room = Recipients(cast(DispatchStore, store), clock, DispatcherConfig(), lambda _: None)
    claimed = job("2026-03-02 13:00")
    [placed] = await room.screen([claimed])
    assert placed.destination == "email:bob@example.com"
    verdict = Verdict(placed, "delivered")
    [recorded] = room.restored([verdict])
    assert recorded.job is claimed  # the next occurrence keeps its own destination
    assert list(room.restored([verdict])) == [verdict]  # once
