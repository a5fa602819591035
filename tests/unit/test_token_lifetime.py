"""A token's lifetime is read by the one duration grammar, within 1 hour and 10 years."""

from __future__ import annotations

from datetime import timedelta

import pytest

from core.cases.tokens import parse_expiry
from core.errors import InvalidInput


@pytest.mark.parametrize(
    ("text", "life"),
    [
        ("90d", timedelta(days=90)),
        ("12h", timedelta(hours=12)),
        ("2w", timedelta(weeks=2)),
        ("2 weeks", timedelta(weeks=2)),
        ("1 hour", timedelta(hours=1)),
        ("3650 days", timedelta(days=3650)),
    ],
)
def test_lifetimes_people_write(text: str, life: timedelta) -> None:
    assert parse_expiry(text) == life


def test_never_is_no_expiry() -> None:
    assert parse_expiry("never") is None
    assert parse_expiry(" Never ") is None


@pytest.mark.parametrize("text", ["soon", "", "90", "-2h"])
def test_what_is_not_a_lifetime(text: str) -> None:
    with pytest.raises(InvalidInput):
        parse_expiry(text)


@pytest.mark.parametrize("text", ["30 minutes", "3651 days", "-2h"])
def test_lifetimes_out_of_range_say_so(text: str) -> None:
    with pytest.raises(InvalidInput, match="between 1 hour and 10 years|not a token lifetime"):
        parse_expiry(text)
