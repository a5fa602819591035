"""Characterisation of a recurrence's interval ("every 2 hours", "each other week on
monday", "every 90 minutes between 9 and 17", "hourly") and of the words for it: every
phrase of every_intervals.json was read so by the time expressions before their
intervals went through the one duration grammar (core/timeexpr/durations.py), and is
read so still. The file holds what was accepted (the rule, and its description) among
counts (none, digits, words, "other", signs, zero, too many) times every unit spelling
(and "half an hour", "quarter hour"), alone and with starts, times, days, bounds and
windows; what was refused is left out (it may be read now).

Made by reading each phrase with ``timeexpr.parse_when(phrase, tz="Europe/Berlin",
now=NOW)`` and keeping ``[when.rule, when.description]``.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from core import reminders, timeexpr

NOW = datetime(2026, 3, 4, 10, 17, 30, tzinfo=UTC)  # a Wednesday
READ: dict[str, list[str]] = json.loads(
    (Path(__file__).parent / "every_intervals.json").read_text(encoding="utf-8")
)


def test_the_table_covers_every_kind_of_interval() -> None:
    rules = "\n".join(rule for rule, _ in READ.values())
    for freq in ("MINUTELY", "HOURLY", "DAILY", "WEEKLY", "MONTHLY", "YEARLY"):
        assert f"FREQ={freq}" in rules
    assert len(READ) > 400


@pytest.mark.parametrize("phrase", sorted(READ))
def test_an_interval_read_before_is_read_the_same(phrase: str) -> None:
    when = timeexpr.parse_when(phrase, tz="Europe/Berlin", now=NOW)
    assert [when.rule, when.description] == READ[phrase]


def test_the_snooze_choices_say_and_take_what_they_did() -> None:
    assert reminders.SNOOZES == {
        "15m": ("Snooze 15 min", timeexpr.parse_duration("15 minutes")),
        "1h": ("Snooze 1 h", timeexpr.parse_duration("1 hour")),
        "tomorrow": ("Tomorrow 9:00", None),
    }
