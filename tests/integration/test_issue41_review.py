"""Review of issue 41's core (the channel's view): defects found, each a test that
failed before its fix, on SQLite and PostgreSQL."""

from __future__ import annotations

import time

from core import duplicates
from core.actors import Principal
from core.cases import Herald
from core.views import warnings_of

A = "slack:TA"
ANNA = Principal("slack:UANNA", A)
BOB = Principal("slack:UBOB", A)
GENERAL = "slack:C0GENERAL"


def test_normalising_a_hostile_text_is_linear() -> None:
    # every save into a channel normalises the texts of the schedules already there:
    # 2,000 "<@" (a 4,000-character message) took 0.5 s each, on the event loop
    for text in ("<@" * 2000, "<#" * 2000, "<@U1|" * 800, "<!" + "a|" * 1999):
        began = time.perf_counter()
        duplicates.normalise(text)
        assert time.perf_counter() - began < 0.05, text[:10]


async def test_a_save_next_to_a_hostile_text_is_quick(herald: Herald) -> None:
    for _ in range(3):
        await herald.create_schedule(
            BOB, to=GENERAL, when="tomorrow at 9am", text="<@" * 2000, duplicates="ignore"
        )
    began = time.perf_counter()
    s, _ = await herald.create_schedule(
        BOB, to=GENERAL, when="tomorrow at 9am", text="<@" * 2000, seen_in=GENERAL
    )
    assert time.perf_counter() - began < 1.0
    assert [w.kind for w in warnings_of(s)] == ["duplicate"] * 3
