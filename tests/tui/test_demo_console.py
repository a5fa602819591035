"""`make demo` opens the console beside a running dispatcher: its first screen says
where the demo's deliveries go and which keys show them."""

from __future__ import annotations

from bot.cli.demo import CONSOLE_GREETING, DEMO_LOG
from core.cases import Herald
from core.settings import Settings
from tests.tui.conftest import ADMIN, notes, run, settle
from tui.app import make_app


async def test_the_demo_console_says_where_deliveries_go(
    settings: Settings, herald: Herald
) -> None:
    app = make_app(settings, herald, ADMIN, refresh_interval=3600, greeting=CONSOLE_GREETING)
    async with run(app) as pilot:
        await settle(pilot)
        [said] = [n for n in notes(app) if n.startswith("Herald demo: ")]
    assert DEMO_LOG in said and "4 for the delivery log" in said and "q to quit" in said
    # the keys it names are the console's own
    keys = {b.key: b.description for b in app.BINDINGS if hasattr(b, "key")}
    assert (keys["4"], keys["5"], keys["q"]) == ("Delivery log", "Dead letters", "Quit")


async def test_the_console_greets_no_one_unless_asked(settings: Settings, herald: Herald) -> None:
    app = make_app(settings, herald, ADMIN, refresh_interval=3600)
    async with run(app) as pilot:
        await settle(pilot)
        assert not [n for n in notes(app) if n.startswith("Herald demo: ")]
