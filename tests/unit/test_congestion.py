"""core.congestion: how late a message waits behind what is already planned into its
destination (the rate slots' GCRA arithmetic, checked against hand-computed cases and
against core.ratelimit.allocate itself), urgent messages passing, a day by minute, the
words, and spreading a crowded minute."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest

from core import congestion
from core.congestion import Minute, Planned, by_minute, forecast, lateness
from core.ratelimit import UNLIMITED, RateLimit, allocate, spacing, tolerance

NINE = datetime(2026, 3, 3, 9, 0, tzinfo=UTC)
#: Slack's limit (core.channels.slack): 1 a second, bursts of 3; a slot every 1.07 s
#: (1 s and room for a late send, core.ratelimit.spacing), 2.14 s of tolerance.
SLACK = RateLimit(rate=1.0, burst=3.0)
#: 10 a second, bursts of 10: a slot every 0.107 s, 0.963 s of tolerance.
TEN = RateLimit(rate=10.0, burst=10.0)
#: 30 a minute, no burst: a slot every 2.07 s, no tolerance.
THIRTY_A_MINUTE = RateLimit(rate=0.5, burst=1.0)
NORMAL, URGENT, BULK = 1, 0, 2


def at(seconds: float) -> datetime:
    return NINE + timedelta(seconds=seconds)


def crowd(n: int, seconds: float = 0.0, rank: int = NORMAL) -> list[Planned]:
    return [(at(seconds), rank)] * n


def test_the_limits_used_here_are_what_the_hand_computations_assume() -> None:
    assert spacing(SLACK) == timedelta(seconds=1.07)
    assert tolerance(SLACK) == timedelta(seconds=2.14)
    assert spacing(TEN) == timedelta(seconds=0.107)
    assert tolerance(TEN) == timedelta(seconds=0.963)
    assert spacing(THIRTY_A_MINUTE) == timedelta(seconds=2.07)
    assert tolerance(THIRTY_A_MINUTE) == timedelta(0)


@pytest.mark.parametrize(
    ("planned", "limit", "late"),
    [
        ([], SLACK, 0.0),  # alone: sent when due
        (crowd(2), SLACK, 0.0),  # the third of a burst of 3
        (crowd(3), SLACK, 1.07),  # the fourth waits a slot
        (crowd(10), SLACK, 8.56),  # 10 × 1.07 − 2.14
        (crowd(300), SLACK, 318.86),  # 300 × 1.07 − 2.14: the "≈ 5 min"
        (crowd(100), TEN, 9.737),  # 100 × 0.107 − 0.963
        (crowd(5), THIRTY_A_MINUTE, 10.35),  # 5 × 2.07, no burst
        # a backlog from before: 5 due 10 s earlier are sent by then (their bucket's
        # tat 10 − 5 × 1.07 = 4.65 s before): nothing left to wait for
        (crowd(5, -10), SLACK, 0.0),
        # 20 due 10 s earlier: tat 21.4 − 10 = 11.4 s after, less the tolerance
        (crowd(20, -10), SLACK, 9.26),
        # due later than the new one: not ahead of it
        (crowd(50, 1), SLACK, 0.0),
    ],
)
def test_lateness_by_hand(planned: list[Planned], limit: RateLimit, late: float) -> None:
    assert lateness(planned, NINE, NORMAL, limit) == pytest.approx(late, abs=1e-6)


def test_an_unlimited_destination_never_waits() -> None:
    assert lateness(crowd(10_000), NINE, NORMAL, UNLIMITED) == 0.0
    assert by_minute(crowd(10_000), UNLIMITED, NINE, 60) == []


def test_a_slot_is_never_before_its_due_time() -> None:
    # 3 due together use the burst; one due 0.5 s later has the bucket's next slot
    # (1.07 − 2.14 + 1.07 × 2 < 0.5 s after): it is sent when due, not before
    assert lateness(crowd(3), at(0.5), NORMAL, SLACK) == pytest.approx(0.57)
    assert lateness(crowd(2), at(0.5), NORMAL, SLACK) == 0.0


def test_urgent_passes_every_other_rank() -> None:
    normal = crowd(300)
    assert lateness(normal, NINE, URGENT, SLACK) == 0.0
    # only urgent ones count ahead of an urgent one: two use the burst, a third waits
    assert lateness(normal + crowd(2, rank=URGENT), NINE, URGENT, SLACK) == 0.0
    assert lateness(normal + crowd(3, rank=URGENT), NINE, URGENT, SLACK) == pytest.approx(1.07)


def test_among_those_due_together_a_rank_goes_after_the_higher_ones() -> None:
    # a normal one waits behind urgent and normal ones due with it, not bulk ones
    assert lateness(crowd(10, rank=URGENT), NINE, NORMAL, SLACK) == pytest.approx(8.56)
    assert lateness(crowd(10, rank=BULK), NINE, NORMAL, SLACK) == 0.0
    # bulk ones due earlier were sent earlier: they count
    assert lateness(crowd(20, -10, rank=BULK), NINE, NORMAL, SLACK) == pytest.approx(9.26)
    # a bulk one waits behind everything due with it
    everyone = crowd(4, rank=URGENT) + crowd(3) + crowd(3, rank=BULK)
    assert lateness(everyone, NINE, BULK, SLACK) == pytest.approx(8.56)


def test_sending_order_is_due_time_then_rank() -> None:
    planned = [(at(1), URGENT), (at(0), BULK), (at(0), URGENT), (at(0), NORMAL)]
    assert congestion.sending_order(planned) == [
        (at(0), URGENT),
        (at(0), NORMAL),
        (at(0), BULK),
        (at(1), URGENT),
    ]


@pytest.mark.parametrize("seed", range(20))
def test_lateness_is_what_the_rate_slots_hand_out(seed: int) -> None:
    """The forecast replays core.ratelimit.allocate: the same bucket, given each job
    in sending order when it falls due, hands the new one the slot forecast."""
    rng = random.Random(seed)
    limit = rng.choice([SLACK, TEN, THIRTY_A_MINUTE, RateLimit(5.0, 5.0)])
    planned = [(at(rng.uniform(-120, 0)), rng.choice([URGENT, NORMAL, BULK])) for _ in range(80)]
    planned += crowd(rng.randrange(0, 40))
    order = [p[0] for p in congestion.sending_order([*planned, (NINE, BULK)])]
    tat = None
    slot = NINE
    for due in order:
        [slot], tat = allocate(tat, due, 1, limit, window=1e9)
    assert lateness(planned, NINE, BULK, limit) == pytest.approx(
        (slot - NINE).total_seconds(), abs=1e-6
    )


def test_forecast_counts_the_hour_before_and_the_minute_around() -> None:
    planned = [
        (at(-3601), NORMAL),  # before the hour looked at
        (at(-3000), NORMAL),
        (at(-59), NORMAL),  # within a minute of 09:00
        *crowd(299),
        (at(1), NORMAL),  # after it: not ahead of it, not read
    ]
    f = forecast("slack:C0GENERAL", planned, NINE, NORMAL, SLACK)
    assert (f.due_together, f.crowd) == (301, 302)
    assert f.late == pytest.approx(lateness(planned[1:-1], NINE, NORMAL, SLACK))
    # the one at 08:59:01 was sent by 09:00 (the bucket full again): 299 ahead
    assert f.late == pytest.approx(299 * 1.07 - 2.14)
    assert f.worth_saying
    quiet = forecast("slack:C0GENERAL", crowd(29), NINE, NORMAL, SLACK)
    assert quiet.late == pytest.approx(27 * 1.07) and quiet.late < congestion.SAY_AFTER
    assert not quiet.worth_saying


@pytest.mark.parametrize(
    ("kind", "limit", "said"),
    [
        ("slack", SLACK, "Slack sends about 1 a second there"),
        ("discord", RateLimit(1.0, 5.0), "Discord sends about 1 a second there"),
        ("webhook", TEN, "the webhook takes about 10 a second there"),
        ("email", THIRTY_A_MINUTE, "email sends about 30 a minute there"),
        ("ntfy", RateLimit(1 / 60, 1.0), "ntfy takes about 1 a minute there"),
        ("sms", RateLimit(10 / 3600, 1.0), "SMS sends about 10 an hour there"),
        ("pager", RateLimit(2.0, 1.0), "pager takes about 2 a second there"),
    ],
)
def test_rate_words(kind: str, limit: RateLimit, said: str) -> None:
    assert congestion.rate_words(kind, limit) == said


@pytest.mark.parametrize(
    ("seconds", "said"),
    [
        (0, "≈ 0 s"),
        (40.4, "≈ 40 s"),
        (59.4, "≈ 59 s"),
        (59.6, "≈ 1 min"),
        (318.86, "≈ 5 min"),
        (3599, "≈ 1 h"),
        (3600, "≈ 1 h"),
        (3900, "≈ 1 h 5 min"),
        (7 * 3600 + 59 * 60, "≈ 7 h 59 min"),
    ],
)
def test_duration_words(seconds: float, said: str) -> None:
    assert congestion.duration_words(seconds) == said


def test_words_of_a_crowded_minute_and_of_a_busy_hour() -> None:
    f = forecast("slack:C0GENERAL", crowd(300), NINE, NORMAL, SLACK)
    assert congestion.words(f, "#general", "09:00") == (
        "301 messages are due into #general at 09:00; Slack sends about 1 a second "
        "there: this one ≈ 5 min late"
    )
    # nothing else in its minute: the hour's crowd is said
    spread = [(at(-60 * i - 61), NORMAL) for i in range(40)] + crowd(60, -1800)
    g = forecast("slack:C0GENERAL", spread, NINE, NORMAL, SLACK)
    assert g.due_together == 1
    assert congestion.words(g, "#general", "09:00").startswith(
        "101 messages are due into #general in the hour up to 09:00; Slack sends"
    )
    alone = forecast("webhook:https://h.example/x", [], NINE, NORMAL, TEN)
    assert congestion.words(alone, "h.example", "09:00") == (
        "1 message is due into h.example in the hour up to 09:00; the webhook takes "
        "about 10 a second there: this one ≈ 0 s late"
    )


def test_by_minute_by_hand() -> None:
    # 5 at 09:00:00 (3 at once, then 1.07 and 2.14 late) and 3 at 09:01:30 (the bucket
    # is full again by then): each minute's count and its last message's lateness
    planned = crowd(3, 90) + crowd(5)
    minutes = by_minute(planned, SLACK, NINE, 60)
    assert [(m.at, m.due, m.late) for m in minutes] == [
        (NINE, 5, pytest.approx(2.14)),
        (at(60), 3, 0.0),
    ]


def test_by_minute_carries_a_backlog_from_before_its_start() -> None:
    # 10 due at 08:59:55: the 8th to 10th are still being sent at 09:00 (the 10th 7.49 s
    # late); one due at 09:00 waits behind them (3.56 s late): the minute at 09:00
    # counts one due and its worst lateness is the backlog's
    planned = [*crowd(10, -5), (NINE, NORMAL)]
    [minute] = by_minute(planned, SLACK, NINE, 60)
    assert minute.at == NINE and minute.due == 1
    assert minute.late == pytest.approx(7.49)
    assert lateness(crowd(10, -5), NINE, NORMAL, SLACK) == pytest.approx(3.56)


def test_by_minute_leaves_out_quiet_minutes_and_what_is_after_its_end() -> None:
    planned = crowd(1, 0) + crowd(2, 600) + crowd(50, 3600)
    minutes = by_minute(planned, SLACK, NINE, 60)
    assert [(m.at, m.due, m.late) for m in minutes] == [(NINE, 1, 0.0), (at(600), 2, 0.0)]
    assert by_minute([], SLACK, NINE, 60) == []
    # a backlog sent before the start is no minute of the day
    assert by_minute(crowd(3, -120), SLACK, NINE, 60) == []


def test_crowded_minutes() -> None:
    minutes = [Minute(NINE, 10, 8.56), Minute(at(60), 40, 30.0), Minute(at(120), 300, 318.86)]
    assert congestion.crowded(minutes) == minutes[1:]
    assert congestion.crowded(minutes, over=5) == minutes


def test_spread_offsets_put_each_a_slot_after_the_one_before() -> None:
    assert congestion.spread_offsets(4, SLACK) == [0.0, 1.07, 2.14, 3.21]
    assert congestion.spread_offsets(3, TEN) == [0.0, 0.107, 0.214]
    assert congestion.spread_offsets(3, UNLIMITED) == [0.0, 0.0, 0.0]
    assert congestion.spread_offsets(0, SLACK) == []
    # spread, a crowd is sent when due: each one's lateness is none
    offsets = congestion.spread_offsets(300, SLACK)
    spread = [(at(o), NORMAL) for o in offsets]
    assert all(lateness(spread[:i], spread[i][0], NORMAL, SLACK) == 0.0 for i in range(len(spread)))


def test_a_lower_ranked_backlog_holds_a_message_only_as_far_as_its_claims() -> None:
    # 300 bulk messages (an import) due a minute before: a normal one waits behind the
    # few a claim holds (what Slack takes in the 10 s horizon: 9), not behind all 300
    late = lateness(crowd(300, -60, rank=BULK), NINE, NORMAL, SLACK, now=at(-60))
    assert 0 < late < congestion.SAY_AFTER
    assert late == pytest.approx(9 * 1.07, abs=1.1)
    # the same backlog of normal ones: it waits behind every one of them
    fifo = lateness(crowd(300, -60), NINE, NORMAL, SLACK, now=at(-60))
    assert fifo == pytest.approx((300 - 3) * 1.07 - 60, abs=1.1)


def test_a_higher_ranked_message_falling_due_while_one_waits_goes_first() -> None:
    waiting = crowd(30)  # 30 normal ones at 09:00: the new one is the 31st
    alone = lateness(waiting, NINE, NORMAL, SLACK)
    urgent_later = waiting + crowd(5, 5, rank=URGENT)
    assert lateness(urgent_later, NINE, NORMAL, SLACK) == pytest.approx(alone + 5 * 1.07)
