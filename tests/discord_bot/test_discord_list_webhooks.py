"""``/schedule list`` on Discord (issue 33): each row says the schedule's rule or time in
words, and a webhook's owner and the admins see its host, port and path (four hooks
looked alike as ``webhook:http://127.0.0.1/…``), its token still hidden."""

from __future__ import annotations

from collections.abc import Callable

from bot.discord_bot import DiscordAdapter
from core.cases import Herald
from tests.discord_bot.doubles import ADMIN, OWNER, Interaction, command, who

Make = Callable[..., Interaction]
DEPLOY = "webhook:http://127.0.0.1:8080/deploy?token=s3cret-t0ken"
ALERTS = "webhook:http://127.0.0.1:9090/alerts"


async def listed(adapter: DiscordAdapter, inter: Interaction, **options: object) -> str:
    await command(adapter, "list")._do_call(inter, options)  # type: ignore[arg-type]
    return str(inter.last.content)


async def test_the_owner_and_an_admin_see_which_webhook_is_which(
    adapter: DiscordAdapter, interaction: Make, herald: Herald
) -> None:
    await herald.create_schedule(who(OWNER), to=DEPLOY, when="every weekday at 9am", text="Up")
    await herald.create_schedule(who(OWNER), to=ALERTS, when="in 2 hours", text="Tea")
    own = await listed(adapter, interaction())
    everyone = await listed(adapter, interaction(ADMIN), everyone=True)
    for text in (own, everyone):
        assert "`webhook:http://127.0.0.1:8080/deploy?…`" in text
        assert "`webhook:http://127.0.0.1:9090/alerts`" in text
        assert "s3cret-t0ken" not in text
        assert "every weekday at 09:00" in text and "once, " in text
