"""``<when> except <words> from <url>``: the pure split every surface uses before it
reads the time (core.calendars.split_skip_phrase)."""

from __future__ import annotations

import pytest

from core.calendars import split_skip_phrase
from core.errors import InvalidInput

H = "https://example.org/holidays.ics"
T = "https://example.org/team-days-off.ics"


@pytest.mark.parametrize(
    ("text", "when", "urls"),
    [
        ("every weekday at 9am", "every weekday at 9am", []),
        ("every day at 9 from march 1", "every day at 9 from march 1", []),
        (f"every weekday at 9am except holidays from {H}", "every weekday at 9am", [H]),
        (f"every weekday at 9am, except holidays from {H}", "every weekday at 9am", [H]),
        (f"every weekday at 9am EXCEPT Holidays FROM {H}", "every weekday at 9am", [H]),
        (f"every weekday at 9am except holidays from {H} and {T}", "every weekday at 9am", [H, T]),
        (f"every weekday at 9am except days off from {H}, {T}", "every weekday at 9am", [H, T]),
        (f"every weekday at 9am except from {H} from {T} & {H}", "every weekday at 9am", [H, T]),
        (
            "every monday at 10:00 until june 30 except holidays from webcal://example.org/h",
            "every monday at 10:00 until june 30",
            ["webcal://example.org/h"],
        ),
        (f"tomorrow at 9 except holidays from {H}", "tomorrow at 9", [H]),
    ],
)
def test_the_phrase_is_split_into_when_and_urls(text: str, when: str, urls: list[str]) -> None:
    assert split_skip_phrase(text) == (when, urls)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("every weekday at 9am except holidays", "needs the calendar to read the dates from"),
        ("every weekday at 9am except holidays from holidays.ics", "https:// URL"),
        (f"every weekday at 9am except holidays {H}", 'Put "from" before'),
        (f"except holidays from {H}", 'Say when before "except"'),
        (f"every day except weekends except holidays from {H}", 'say "except" once'),
        (f"every weekday at 9am except holidays from {H} until june 30", 'Could not read "until"'),
    ],
)
def test_what_cannot_be_read_is_refused_with_an_example(text: str, says: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        split_skip_phrase(text)
    assert says in str(caught.value)
    assert "except holidays from https://" in str(caught.value)
