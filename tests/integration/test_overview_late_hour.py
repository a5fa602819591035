"""The overview's last hour of tries, as its use case reads them for the console's
plot: each tenant's own (a Herald-wide actor's every tenant's), read only when asked,
capped at the newest LATE_TRIES; and the dispatchers' every-tenant lateness for
Herald-wide actors only. On SQLite and PostgreSQL (the minute is formatted by each)."""

from __future__ import annotations

from datetime import timedelta

from core.actors import Principal
from core.cases import Herald
from core.cases.console import LATE_TRIES, late_hour
from core.clock import ManualClock
from tests.support.late_tries import NOW, at, tries
from tests.tui.conftest import ADMIN, MEMBER


async def test_a_tenants_member_sees_their_tenants_tries_only(
    herald: Herald, clock: ManualClock
) -> None:
    """As the overview's figures: a member of a workspace sees its tries, a Herald-wide
    admin every tenant's."""
    anna = Principal("slack:UANNA", "slack:TA")
    await tries(herald, clock, "12:10", [0.1, 0.2, 0.3, 2.0])  # the local tenant's
    await tries(herald, clock, "12:20", [30.0, 40.0], author=anna)
    clock.set(at(NOW, 30))
    theirs = (await herald.overview(anna, with_late_hour=True)).late_hour
    assert [(s.tries, s.p50, s.p99) for s in theirs.slots] == [(2, 30.0, 40.0)]
    ours = (await herald.overview(MEMBER, with_late_hour=True)).late_hour
    assert [(s.tries, s.p50, s.p99) for s in ours.slots] == [(4, 0.2, 2.0)]
    everyone = (await herald.overview(ADMIN, with_late_hour=True)).late_hour
    assert [s.tries for s in everyone.slots] == [4, 2] and everyone.capped_at is None
    assert (await herald.overview(ADMIN)).late_hour.slots == []  # read only when asked


def test_past_its_cap_the_hour_says_it_read_the_newest_tries_only() -> None:
    minutes = [at("12:06") + timedelta(minutes=i) for i in range(60)]
    newest_first = [("2026-03-02 13:05", 250)] * LATE_TRIES
    hour = late_hour(minutes, newest_first)
    assert hour.capped_at == LATE_TRIES and hour.tries == LATE_TRIES
    assert [(s.minute, s.p50, s.p99) for s in hour.slots] == [(at("13:05"), 0.25, 0.25)]
    assert late_hour(minutes, newest_first[:-1]).capped_at is None


async def test_every_tenants_lateness_is_for_herald_wide_actors_only(herald: Herald) -> None:
    """The dispatchers' lateness counts are every tenant's together: a tenant's member
    is not shown them (their own tenant's lateness is the plot's); an admin is."""
    assert (await herald.overview(MEMBER)).lateness == []
    assert [f.window for f in (await herald.overview(ADMIN)).lateness] == ["last hour", "last day"]
