"""The arithmetic of the cap on messages to one destination per hour
(core/cases/recipient_cap.py): which windows are full, and which occurrences of
existing rules fall near a request's sends."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from core import timeexpr
from core.cases.recipient_cap import Crowded, crowded_hour, rule_sends, sends_of, stretches
from core.errors import InvalidInput

T = datetime(2026, 3, 2, 14, 0, tzinfo=UTC)
MIN = timedelta(minutes=1)


def test_a_window_is_any_sixty_minutes_holding_the_new_send() -> None:
    three = [T, T + 20 * MIN, T + 40 * MIN]
    assert crowded_hour(three, [T + 59 * MIN], 3) == Crowded(T, 3, 1)
    assert crowded_hour(three, [T - 19 * MIN], 3) == Crowded(T - 19 * MIN, 3, 1)
    assert crowded_hour(three, [T + 60 * MIN], 3) is None  # [T, T + 1 h) ends before it
    assert crowded_hour(three, [T - 20 * MIN], 3) is None  # the hour from it holds T + 40 too
    assert crowded_hour(three, [T + 60 * MIN, T + 61 * MIN], 3) == Crowded(T + 20 * MIN, 2, 2)
    assert crowded_hour([], [T + n * MIN for n in range(4)], 3) == Crowded(T, 0, 4)
    assert crowded_hour([T] * 30, [T + 2 * 60 * MIN], 30) is None


@pytest.mark.parametrize(
    "when", ["every 15 minutes", "every day at 9:10", "every weekday at 14:00", "every 7 minutes"]
)
def test_the_occurrences_near_the_sends_are_every_one_there(when: str) -> None:
    now = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
    rule = timeexpr.parse_when(when, tz="Europe/Berlin", now=now).rule
    assert rule is not None
    new = sends_of(now + 3 * MIN, timeexpr.parse_when("every day at 9", tz="UTC", now=now).rule)
    assert len(new) == 7  # a week of a daily rule
    within = stretches(new)
    next_run = timeexpr.next_occurrence(rule, now)
    assert next_run is not None
    everything = timeexpr.occurrences(rule, count=5000, after=next_run)
    expected = [t for t in everything if any(lo < t < hi for lo, hi in within)]
    assert rule_sends([(rule, next_run)], within) == expected


def test_an_existing_rule_too_costly_to_expand_counts_nothing() -> None:
    """Another schedule's rule that the meter stops (weekly on Mondays, BYDAY=TU) does
    not refuse the request with that rule's "too costly" sentence."""
    costly = "DTSTART;TZID=UTC:20260302T000000\nRRULE:FREQ=HOURLY;INTERVAL=168;BYDAY=TU"
    with pytest.raises(InvalidInput, match="too costly to expand"):
        timeexpr.occurrences(costly, count=1, after=T)
    assert rule_sends([(costly, None)], stretches([T + 60 * MIN])) == []
