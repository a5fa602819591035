"""Zones as people name them (core.zones.resolve_zone): IANA names in any case, cities,
offsets, and abbreviations with their ambiguity spelled out."""

from __future__ import annotations

import pytest

from core.errors import InvalidInput
from core.timeexpr import zone
from core.zones import meanings, resolve_zone


@pytest.mark.parametrize(
    ("typed", "key"),
    [
        ("Europe/Berlin", "Europe/Berlin"),
        ("europe/berlin", "Europe/Berlin"),
        ("america/new_york", "America/New_York"),
        ("Berlin", "Europe/Berlin"),
        ("berlin", "Europe/Berlin"),
        ("new york", "America/New_York"),
        ("New_York", "America/New_York"),
        ("sao paulo", "America/Sao_Paulo"),
        ("São Paulo", "America/Sao_Paulo"),
        ("  tokyo ", "Asia/Tokyo"),
        ("Indianapolis", "America/Indiana/Indianapolis"),  # the current name, not the link
        ("buenos aires", "America/Argentina/Buenos_Aires"),
        ("Mumbai", "Asia/Kolkata"),  # a city the database files under another
        ("UTC", "UTC"),
        ("utc+2", "Etc/GMT-2"),  # Etc names count the other way round
        ("UTC−5", "Etc/GMT+5"),
        ("GMT-5", "Etc/GMT+5"),
        ("Etc/GMT+5", "Etc/GMT+5"),
        ("JST", "Asia/Tokyo"),  # one meaning: taken
        ("EST5EDT", "America/New_York"),
        ("US/Eastern", "US/Eastern"),
    ],
)
def test_names_people_type(typed: str, key: str) -> None:
    assert resolve_zone(typed).key == key


def test_est_is_ambiguous_and_says_how() -> None:
    with pytest.raises(InvalidInput) as caught:
        resolve_zone("est")
    assert str(caught.value) == (
        "EST is ambiguous: America/New_York (Eastern time, with daylight saving), "
        "or fixed UTC−5 (give 'Etc/GMT+5')?"
    )


@pytest.mark.parametrize(
    ("typed", "named"),
    [
        ("CST", ["America/Chicago", "Asia/Shanghai", "fixed UTC−6 (give 'Etc/GMT+6')"]),
        ("IST", ["Asia/Kolkata", "Europe/Dublin", "Asia/Jerusalem"]),
        ("GMT", ["Europe/London", "UTC (no summer time)"]),
        ("CET", ["Europe/Berlin", "fixed UTC+1 (give 'Etc/GMT-1')"]),
        ("MST", ["America/Denver", "America/Phoenix"]),
    ],
)
def test_other_ambiguous_abbreviations(typed: str, named: list[str]) -> None:
    """Even where the IANA database has a fixed zone of that name (EST, MST, CET, GMT):
    it no longer wins silently."""
    with pytest.raises(InvalidInput, match=f"^{typed} is ambiguous: ") as caught:
        resolve_zone(typed)
    assert all(name in str(caught.value) for name in named)


def test_an_unknown_zone_names_the_nearest_one() -> None:
    with pytest.raises(InvalidInput) as caught:
        resolve_zone("Berlim")
    assert str(caught.value) == (
        "Unknown time zone 'Berlim': did you mean Europe/Berlin? Otherwise name a city "
        "(Berlin, New York) or an IANA zone such as Europe/Berlin."
    )
    with pytest.raises(InvalidInput, match="did you mean America/New_York"):
        resolve_zone("new yrok")


@pytest.mark.parametrize("typed", ["Mars/Olympus", "localtime", "../etc/passwd", "x" * 300, ""])
def test_what_is_no_zone(typed: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        resolve_zone(typed)
    assert "did you mean" not in str(caught.value)


def test_an_offset_past_the_last_zone_is_refused() -> None:
    with pytest.raises(InvalidInput, match="offsets go from"):
        resolve_zone("UTC+15")


def test_meanings_list_every_zone_an_abbreviation_may_be() -> None:
    assert meanings("EST") == ["America/New_York", "Etc/GMT+5"]
    assert meanings("berlin") == ["Europe/Berlin"]
    assert meanings("nowhere at all") == []


def test_a_stored_zone_stays_readable() -> None:
    """A member's or schedule's zone stored before (even a fixed EST) still reads."""
    assert zone("EST").key == "EST"
