"""Issue 41's review, Discord: one member's requests waiting for Create anyway cannot
push everyone else's out of the store that keeps them."""

from __future__ import annotations

from typing import Any

from bot.discord_bot.duplicates import Requests


def test_one_member_cannot_push_out_everyone_else_s_requests() -> None:
    kept = Requests(kept=50)

    async def again(_: Any) -> Any:
        return None

    theirs = kept.keep(1, 10, again)
    flood = [kept.keep(1, 20, again) for _ in range(200)]
    found = kept.take(theirs)
    assert found is not None and found.user == 10
    latest = kept.take(flood[-1])
    assert latest is not None and latest.user == 20  # the member's latest still waits
    assert kept.find(flood[0]) is None  # their oldest went first
