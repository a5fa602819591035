"""core.routing and the reading of a request's recipients (core.cases.recipients): pure
functions, no I/O."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from core import routing
from core.actors import Actor
from core.cases.recipients import check_count, member_of, wanted_of
from core.dispatcher.fallback import fall_back, step_deadline
from core.errors import InvalidInput
from core.models import Role
from core.routing import Recipient, Wanted
from core.store import ClaimedJob


def step_timed_out(job: ClaimedJob, now: datetime) -> bool:
    """Whether the job's step has been tried as long as its recipient allows."""
    deadline = step_deadline(job)
    return deadline is not None and now >= deadline


NOON = datetime(2026, 3, 2, 12, tzinfo=UTC)


def test_a_row_older_than_routing_reads_as_its_destination() -> None:
    assert routing.from_json([], "slack:C1") == [Recipient(0, ("slack:C1",))]
    assert routing.from_json(None, "slack:C1") == [Recipient(0, ("slack:C1",))]
    stored = [{"id": 0, "to": ["slack:C1"]}, {"id": 4, "to": ["a", "b"], "zone": "UTC"}]
    assert routing.from_json(stored, "slack:C1") == [
        Recipient(0, ("slack:C1",)),
        Recipient(4, ("a", "b"), "UTC"),
    ]
    assert routing.to_json(routing.from_json(stored)) == stored


def test_only_a_plain_recipient_has_no_route() -> None:
    assert Recipient(0, ("slack:C1",)).route() is None
    chain = Recipient(2, ("slack:@U1", "email:a@example.com"), timeout=600)
    assert routing.parse_route(chain.route() or "") == chain
    assert json.loads(Recipient(1, ("email:a@example.com",), "Asia/Kolkata").route() or "") == {
        "id": 1,
        "to": ["email:a@example.com"],
        "zone": "Asia/Kolkata",
    }


def test_numbers_are_kept_for_kept_recipients_and_never_reused() -> None:
    first = routing.numbered([Wanted(("a",)), Wanted(("b",)), Wanted(("c",))])
    assert [r.id for r in first] == [0, 1, 2]
    # b removed, d added: a and c keep theirs, d gets one never used before
    edited = routing.numbered([Wanted(("a",)), Wanted(("c",)), Wanted(("d",))], kept=first)
    assert [(r.to, r.id) for r in edited] == [(("a",), 0), (("c",), 2), (("d",), 3)]
    # a recipient that changes its chain or zone is a new one
    again = routing.numbered([Wanted(("a",), zone="UTC"), Wanted(("c",))], kept=edited)
    assert [r.id for r in again] == [4, 2]
    # recipient 0 is always the first (its jobs may leave their destination to the
    # schedule's): one that moved is numbered anew
    moved = routing.numbered([Wanted(("c",)), Wanted(("a",))], kept=edited)
    assert [(r.to, r.id) for r in moved] == [(("c",), 2), (("a",), 4)]


def test_a_chains_steps_and_keys() -> None:
    chain = Recipient(0, ("slack:@U1", "email:a@example.com", "webhook:https://x.example"))
    assert routing.next_step(chain, 0) == "email:a@example.com"
    assert routing.next_step(chain, 2) is None
    assert routing.next_step(None, 0) is None
    assert [routing.step_key("k", n) for n in range(3)] == ["k", "k.1", "k.2"]
    assert routing.first_step("slack:@U1", chain) is None  # the schedule's own
    assert routing.first_step("slack:C9", Recipient(1, ("slack:C9",))) == "slack:C9"


def test_a_recipient_in_words() -> None:
    chain = Recipient(0, ("slack:@U1", "email:a@example.com"), "Europe/Berlin")
    assert routing.describe(chain) == "slack:@U1 or email:a@example.com (Europe/Berlin time)"
    assert routing.describe(chain, str.upper).startswith("SLACK:@U1 or EMAIL")


@pytest.mark.parametrize(
    ("to", "refusal"),
    [
        ([], "Say where to send it: at least one destination."),
        ([{"first_of": []}], "A chain (first_of) needs at least one destination."),
        ([{"first_of": "slack:C1"}], "A chain (first_of) is a list of destinations."),
        ([{"then": ["slack:C1"]}], 'A recipient is a destination ("slack:C0123") or a chain'),
        (["slack:C1", {"first_of": ["slack:C1"]}], "slack:C1 is named twice"),
        (
            [{"first_of": [f"slack:C{n}" for n in range(6)]}],
            "at most 5 destinations; this one has 6",
        ),
    ],
)
def test_a_request_that_names_no_usable_recipients_is_refused_with_a_sentence(
    to: list[object], refusal: str
) -> None:
    with pytest.raises(InvalidInput) as refused:
        wanted_of(to)  # type: ignore[arg-type]
    assert str(refused.value).startswith(refusal) or refusal in str(refused.value)


def test_a_request_read_as_recipients() -> None:
    assert wanted_of("slack:C1") == [Wanted(("slack:C1",))]
    got = wanted_of(
        ["slack:C1", {"first_of": ["slack:@U1", "email:a@example.com"]}],
        their_time=True,
        step_timeout=600,
    )
    assert [(w.to, w.timeout, w.their_time) for w in got] == [
        (("slack:C1",), None, True),  # one destination: no next step to time out to
        (("slack:@U1", "email:a@example.com"), 600, True),
    ]
    with pytest.raises(InvalidInput, match="between 1 minute and 7 days"):
        wanted_of("slack:C1", step_timeout=59)


def test_members_may_name_fifty_recipients_admins_five_hundred() -> None:
    member = Actor("local:a", Role.MEMBER, None)
    admin = Actor("local:root", Role.ADMIN, None, herald_wide=True)
    fifty = [Wanted((f"slack:C{n}",)) for n in range(50)]
    check_count(member, fifty)
    with pytest.raises(InvalidInput, match="at most 50 recipients; this one names 51"):
        check_count(member, [*fifty, Wanted(("slack:C99",))])
    check_count(admin, fifty * 10)
    with pytest.raises(InvalidInput, match="at most 500 recipients"):
        check_count(admin, [*fifty * 10, Wanted(("slack:C99",))])


def test_whose_zone_a_person_destination_names() -> None:
    assert member_of("slack:@U0123ABC") == "slack:U0123ABC"
    assert member_of("email:a@example.com") == "email:a@example.com"
    assert member_of("slack:C0123ABC") is None


def claimed(route: Recipient | None, step: int = 0, **kw: object) -> ClaimedJob:
    values: dict[str, object] = {
        "id": 7,
        "schedule_id": 3,
        "occurrence_at": NOON,
        "due_at": NOON,
        "attempts": 1,
        "idempotency_key": "k",
        "destination": route.to[step] if route else "slack:C1",
        "body": "x",
        "rrule": None,
        "max_lateness_s": None,
        "timezone": "Europe/Berlin",
        "options": {},
        "route": route.route() if route else None,
        "step": step,
        **kw,
    }
    return ClaimedJob(**values)  # type: ignore[arg-type]


def test_a_step_that_failed_for_good_falls_back_unless_it_is_the_last() -> None:
    chain = Recipient(0, ("slack:@U1", "email:a@example.com"))
    moved = fall_back(claimed(chain), None, "user_disabled.", NOON)
    assert moved is not None and moved.next_step == "email:a@example.com"
    assert moved.retry_at == NOON
    assert moved.error == "user_disabled. Falling back to email:a@example.com (step 2)."
    assert fall_back(claimed(chain, step=1), None, "550", NOON) is None
    assert fall_back(claimed(None), None, "gone", NOON) is None


def test_a_steps_time_limit_counts_from_when_it_began() -> None:
    chain = Recipient(0, ("webhook:https://x.example", "email:a@example.com"), timeout=600)
    # the first step: from the occurrence's due time, however often due_at moved since
    retried = claimed(chain, due_at=NOON + timedelta(seconds=590))
    assert not step_timed_out(retried, NOON + timedelta(seconds=599))
    assert step_timed_out(retried, NOON + timedelta(seconds=600))
    # a later step, or a retried chain: from when it was entered
    later = claimed(chain, step=0, step_since=NOON + timedelta(hours=1))
    assert not step_timed_out(later, NOON + timedelta(hours=1, seconds=599))
    assert not step_timed_out(claimed(chain, step=1), NOON + timedelta(days=1))  # the last
    assert step_deadline(retried) == NOON + timedelta(seconds=600)
    assert step_deadline(later) == NOON + timedelta(hours=1, seconds=600)
    plain = claimed(Recipient(0, ("webhook:https://x.example",), timeout=600))
    assert not step_timed_out(plain, NOON + timedelta(days=1))
