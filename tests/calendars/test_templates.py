"""Templates: documented fields only, checked at creation, rendered without attribute access."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from core import templates
from core.errors import InvalidInput

VALUES = {
    "event.summary": "Stand-up",
    "event.start": datetime(2026, 3, 9, 14, 0, tzinfo=UTC),
    "event.location": "Room 7",
    "date": date(2026, 3, 9),
    "schedule.id": 42,
}


def test_renders_the_documented_fields() -> None:
    text = (
        "{event.summary} at {event.start:%H:%M} in {event.location} on {date:%a} (#{schedule.id})"
    )
    assert templates.render(text, VALUES) == "Stand-up at 14:00 in Room 7 on Mon (#42)"


def test_literal_braces_and_missing_values() -> None:
    assert templates.render("{{x}} {event.location}!", {}) == "{x} !"


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("{event.__class__}", "does not know"),
        ("{event.start.tzinfo}", "does not know"),
        ("{0}", "does not know"),
        ("{}", "does not know"),
        ("{user}", "does not know"),
        ("{event.summary!r}", "conversions"),
        ("{event.start:{date}}", "nested"),
        ("{event.summary:>99999}", "no format"),
        ("{event.summary", "braces"),
        ("  ", "empty"),
    ],
)
def test_unknown_or_unsafe_templates_are_refused_at_creation(text: str, reason: str) -> None:
    with pytest.raises(InvalidInput, match=reason):
        templates.check(text)


def test_allowed_subset() -> None:
    with pytest.raises(InvalidInput, match="does not know"):
        templates.check("{event.summary}", allowed={"date", "schedule.id"})
    assert templates.check("{date} {schedule.id}", allowed={"date", "schedule.id"})
