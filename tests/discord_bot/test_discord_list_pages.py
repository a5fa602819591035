"""/schedule list pages with Previous and Next, for the member who asked, in their
server only; clicks dispatched the way discord.py dispatches them."""

from __future__ import annotations

from collections.abc import Callable

from bot.discord_bot import DiscordAdapter, render
from core.cases import Herald
from tests.discord_bot.doubles import (
    GUILD,
    OWNER,
    STRANGER,
    Guild,
    Interaction,
    click,
    command,
    message_with,
    who,
)

Make = Callable[..., Interaction]


async def many(herald: Herald, count: int) -> None:
    for n in range(count):
        await herald.create_schedule(
            who(OWNER), to="discord:700000000000000010", when="every day at 9", text=f"n{n}"
        )


async def listed(adapter: DiscordAdapter, make: Make) -> Interaction:
    inter = make()
    await command(adapter, "list")._do_call(inter, {})  # type: ignore[arg-type]
    return inter


def ids_in(text: str | None) -> list[str]:
    return [row.split("**")[1] for row in str(text).splitlines() if row.startswith("**#")]


async def test_a_long_list_pages_with_next_and_previous(
    adapter: DiscordAdapter, interaction: Make, herald: Herald
) -> None:
    await many(herald, render.PAGE * 2 + 1)
    first = await listed(adapter, interaction)
    assert "Page 1 of 3" in str(first.last.content) and "more:" not in str(first.last.content)
    assert len(ids_in(first.last.content)) == render.PAGE
    nxt = f"herald:list:next:{GUILD}:{OWNER}:0::1"
    assert first.last.custom_ids == [nxt]

    second = interaction(message=message_with(adapter.client, first.last.view))
    await click(adapter.client, second, nxt)
    assert "Page 2 of 3" in str(second.last.content) and second.last.kind == "edit"
    assert second.last.custom_ids == [
        f"herald:list:previous:{GUILD}:{OWNER}:0::0",
        f"herald:list:next:{GUILD}:{OWNER}:0::2",
    ]
    third = interaction(message=message_with(adapter.client, second.last.view))
    await click(adapter.client, third, f"herald:list:next:{GUILD}:{OWNER}:0::2")
    assert "Page 3 of 3" in str(third.last.content)
    seen = ids_in(first.last.content) + ids_in(second.last.content) + ids_in(third.last.content)
    assert len(set(seen)) == render.PAGE * 2 + 1


async def test_a_short_list_has_no_page_buttons(
    adapter: DiscordAdapter, interaction: Make, herald: Herald
) -> None:
    await many(herald, 2)
    inter = await listed(adapter, interaction)
    assert inter.last.view is None and "Page" not in str(inter.last.content)


async def test_someone_elses_page_button_is_refused_to_them_alone(
    adapter: DiscordAdapter, interaction: Make, herald: Herald
) -> None:
    await many(herald, render.PAGE + 1)
    first = await listed(adapter, interaction)
    message = message_with(adapter.client, first.last.view)
    inter = interaction(STRANGER, message=message)
    await click(adapter.client, inter, f"herald:list:next:{GUILD}:{OWNER}:0::1")
    assert [(a.kind, a.ephemeral) for a in inter.log] == [("defer", False), ("followup", True)]
    assert "someone else's list" in str(inter.last.content)


async def test_a_page_button_from_another_server_is_refused(
    adapter: DiscordAdapter, interaction: Make, herald: Herald
) -> None:
    await many(herald, render.PAGE + 1)
    first = await listed(adapter, interaction)
    message = message_with(adapter.client, first.last.view)
    inter = interaction(message=message, guild=Guild(GUILD + 1))
    await click(adapter.client, inter, f"herald:list:next:{GUILD}:{OWNER}:0::1")
    assert "someone else's list" in str(inter.last.content)
    assert "n1" not in str(inter.last.content)
