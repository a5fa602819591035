"""Issue 41's review, Discord: one member's requests waiting for Create anyway cannot
push everyone else's out of the store that keeps them."""

from __future__ import annotations

from typing import Any

from bot.discord_bot.duplicates import Requests


def test_one_member_cannot_push_out_everyone_else_s_requests() -> None:
    kept = Requests(kept=50)

    async def again(_: Any) -> Any:
        return None

    theirs = kept.keep((1, 10), again)
    flood = [kept.keep((1, 20), again) for _ in range(200)]
    found = kept.take(theirs)
    assert found is not None and found.owner == (1, 10)
    latest = kept.take(flood[-1])
    assert latest is not None and latest.owner == (1, 20)  # the member's latest still waits
    assert kept.find(flood[0]) is None  # their oldest went first


def test_an_agenda_longer_than_core_reads_does_not_claim_a_count() -> None:
    from types import SimpleNamespace

    from bot.discord_bot import render

    entries = [
        SimpleNamespace(
            schedule=SimpleNamespace(
                id=n, private=False, owner="discord:1", body="hi", options={}, starts_at=None
            ),
            author="Ann",
            when="tomorrow at 09:00 (UTC)",
            next_at=None,
        )
        for n in range(render.AGENDA_COUNTED + 1)  # core was asked for one more than counted
    ]
    text = render.agenda(entries, 10**18)  # type: ignore[arg-type]  # rows as read
    assert len(text) <= 2000
    assert f"({render.AGENDA_COUNTED + 1})" not in text and f"({render.AGENDA_COUNTED})" not in text
    assert f"(more than {render.AGENDA_COUNTED})" in text
    assert text.splitlines()[-1].startswith("… and more than ")
