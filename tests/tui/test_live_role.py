"""Roles change at once for every running process (issue 33): the console read its
member's role once at start, so a member made admin while it ran kept the admin's keys
greyed out, and the subtitle said "member", until a restart. Its live refresh reads the
role again."""

from __future__ import annotations

from typing import Any

from textual.widgets._footer import FooterKey

from core import verbs
from core.cases import Herald
from core.clock import ManualClock
from tests.tui.conftest import ADMIN, MEMBER, deliver, run, screen_text, settle

APPROVE = "act('approve')"
#: Why a member may not decide requests (the verb's sentence, core/verbs.py).
NOT_ADMIN = verbs.verb("approve").refused


def approve_greyed(app: Any) -> bool:
    """Whether the footer shows the Dead letters' approve key greyed out."""
    [key] = [k for k in app.screen.query(FooterKey) if k.action == APPROVE]
    return key.has_class("-disabled")


async def test_a_member_made_admin_gets_the_admins_keys_on_the_next_refresh(
    console: Any, herald: Herald, clock: ManualClock
) -> None:
    await herald.create_schedule(
        MEMBER, to="webhook:https://hooks.example.com/gone", when="in 1 minute", text="x"
    )
    clock.advance(61)
    assert await deliver(herald, clock, fail=True, error="HTTP 410 Gone") == 1
    app = console(MEMBER, mode="dead")
    async with run(app, size=(80, 24)) as pilot:
        await settle(pilot)
        before = screen_text(app)
        assert "local:bob · member" in before and NOT_ADMIN in app.screen.role_note()
        assert approve_greyed(app)

        await herald.set_role(ADMIN, MEMBER, "admin")  # in another process, say
        app.screen._tick()  # the live refresh (the test drives its timer)
        await settle(pilot)

        after = screen_text(app)
        assert "local:bob · admin" in after and NOT_ADMIN not in app.screen.role_note()
        assert "You are local:bob (admin)." in after
        assert not approve_greyed(app)
        assert app.screen.check_action("act", ("approve",)) is True
