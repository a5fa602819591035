"""Autocomplete for `when`, `id` and `timezone`, through the commands' own handlers."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bot.discord_bot import DiscordAdapter, choices
from core.cases import Herald
from tests.discord_bot.doubles import CHANNEL, OWNER, STRANGER, Interaction, command, who

Make = Callable[..., Interaction]


async def complete(
    adapter: DiscordAdapter, make: Make, name: str, option: str, user: int = OWNER, **ns: Any
) -> list[tuple[str, Any]]:
    """Ask the command for choices as the tree does when Discord sends a focused option."""
    inter = make(user, namespace=ns)
    await command(adapter, name)._invoke_autocomplete(inter, option, inter.namespace)  # type: ignore[arg-type]
    return inter.response.choices


async def test_when_shows_the_reading_in_the_members_zone(
    adapter: DiscordAdapter, interaction: Make, herald: Herald
) -> None:
    await herald.set_timezone(who(OWNER), "Europe/Berlin")

    choices = await complete(adapter, interaction, "create", "when", when="every weekday at 9am")

    assert choices == [
        (
            "every weekday at 09:00 (Europe/Berlin) — next Tue 3 Mar 2026 09:00",
            "every weekday at 9am",
        )
    ]


async def test_when_follows_the_timezone_option(adapter: DiscordAdapter, interaction: Make) -> None:
    [(name, value)] = await complete(
        adapter, interaction, "create", "when", when="tomorrow at 9am", timezone="Asia/Tokyo"
    )

    assert name == "once, Tue 3 Mar 2026 09:00 (Asia/Tokyo)" and value == "tomorrow at 9am"


async def test_when_reads_an_edit_in_the_schedules_zone(
    adapter: DiscordAdapter, interaction: Make, herald: Herald
) -> None:
    await herald.create_schedule(
        who(OWNER), to=f"discord:{CHANNEL}", when="in 1 hour", text="x", tz="America/Lima"
    )

    [(name, _)] = await complete(
        adapter, interaction, "edit", "when", when="every day at 8am", id="1"
    )

    assert "(America/Lima)" in name


async def test_when_says_what_it_cannot_read_and_offers_examples(
    adapter: DiscordAdapter, interaction: Make
) -> None:
    [(name, value)] = await complete(adapter, interaction, "create", "when", when="whenever")
    assert name.startswith('Not understood: Could not read "whenever"') and value == "whenever"

    examples = await complete(adapter, interaction, "create", "when", when="")
    assert ("every weekday at 09:00", "every weekday at 09:00") in examples

    assert await complete(adapter, interaction, "create", "when", when="x" * 150) == []


async def test_id_lists_only_the_members_open_schedules(
    adapter: DiscordAdapter, interaction: Make, herald: Herald
) -> None:
    me = who(OWNER)
    for when, text in [("every day at 9am", "Standup"), ("tomorrow at 8am", "Deploy")]:
        await herald.create_schedule(me, to=f"discord:{CHANNEL}", when=when, text=text)
    await herald.create_schedule(who(STRANGER), to="log:", when="in 1 hour", text="Theirs")
    await herald.create_schedule(me, to="log:", when="in 2 hours", text="Gone")
    await herald.cancel_schedule(me, 4)

    assert await complete(adapter, interaction, "cancel", "id", id="") == [
        ("#2 · next Tue 3 Mar 2026 08:00 · Deploy", "2"),
        ("#1 · next Tue 3 Mar 2026 09:00 · Standup", "1"),
    ]
    assert await complete(adapter, interaction, "show", "id", id="stand") == [
        ("#1 · next Tue 3 Mar 2026 09:00 · Standup", "1")
    ]
    assert await complete(adapter, interaction, "show", "id", id="#2") == [
        ("#2 · next Tue 3 Mar 2026 08:00 · Deploy", "2")
    ]
    assert await complete(adapter, interaction, "show", "id", STRANGER, id="") == [
        ("#3 · next Mon 2 Mar 2026 13:00 · Theirs", "3")
    ]


async def test_timezone_offers_at_most_25_iana_names(
    adapter: DiscordAdapter, interaction: Make
) -> None:
    assert await complete(adapter, interaction, "timezone", "zone", zone="berlin") == [
        ("Europe/Berlin", "Europe/Berlin")
    ]
    new_york = await complete(adapter, interaction, "create", "timezone", timezone="new york")
    assert new_york[0] == ("America/New_York", "America/New_York")
    assert len(await complete(adapter, interaction, "timezone", "zone", zone="a")) == 25
    assert len(await complete(adapter, interaction, "timezone", "zone", zone="")) == 16


def test_zone_choices_prefer_names_and_cities_that_start_with_the_text() -> None:
    assert choices.zone_choices("europe/l")[:3] == [
        "Europe/Lisbon",
        "Europe/Ljubljana",
        "Europe/London",
    ]
    assert choices.zone_choices("tokyo") == ["Asia/Tokyo"]
    assert choices.zone_choices("nowhere-at-all") == []


async def test_every_example_offered_is_one_herald_reads(herald: Herald) -> None:
    for example in choices.EXAMPLES:
        assert herald.read_when(example, "UTC").first > herald.clock.now()


async def test_when_reads_back_a_default_time_and_suggests_for_a_typo(
    adapter: DiscordAdapter, interaction: Make
) -> None:
    [(name, _)] = await complete(adapter, interaction, "create", "when", when="every monday")
    assert name.startswith("every Monday at 09:00 (UTC) — add 'at …' to change it")
    [(name, value)] = await complete(adapter, interaction, "create", "when", when="tomorow at 9")
    assert "Did you mean 'tomorrow at 9'?" in name and value == "tomorow at 9"


def test_zone_choices_offer_each_meaning_of_an_abbreviation_first() -> None:
    assert choices.zone_choices("EST")[:2] == ["America/New_York", "Etc/GMT+5"]
    assert choices.zone_choices("new york")[0] == "America/New_York"
    assert choices.zone_choices("mumbai") == ["Asia/Kolkata"]
