"""Audit rows name the surface an action came through, as its entry point said: a
principal carries it into every use case, refusals and bulk changes included."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from bot.cli import main
from core import db
from core.actors import Principal, Surface
from core.cases import Herald
from core.errors import PermissionDenied
from core.settings import Settings
from core.store import AuditFilter, ScheduleFilter
from tests.support.store import audit_trail

ALICE, BOB, ADMIN = "local:alice", "local:bob", "local:root-admin"


def via(actor: str, surface: Surface) -> Principal:
    return Principal(actor, surface=surface)


async def surfaces(herald: Herald, **f: str) -> list[tuple[str, str | None]]:
    rows = await herald.store.audit_page(AuditFilter(**f))
    return [(r.action, r.surface) for r in reversed(rows)]


@pytest.mark.parametrize("surface", list(Surface))
async def test_a_change_is_audited_with_the_surface_it_came_through(
    herald: Herald, surface: Surface
) -> None:
    s, _ = await herald.create_schedule(
        via(ALICE, surface), to="log:", when="in 1 hour", text="x", tz="UTC"
    )
    assert s.id is not None
    await herald.pause_schedule(via(ALICE, surface), s.id)
    [created, paused] = await audit_trail(herald.store, "schedule", str(s.id))
    assert (created.surface, paused.surface) == (surface.value, surface.value)
    assert "via" not in paused.details


async def test_a_refusal_and_a_bulk_change_name_theirs(herald: Herald) -> None:
    s, _ = await herald.create_schedule(ALICE, to="log:", when="in 1 hour", text="x", tz="UTC")
    assert s.id is not None
    with pytest.raises(PermissionDenied):  # another member's: refused for the role
        await herald.cancel_schedule(via(BOB, Surface.SLACK), s.id)
    paused = await herald.bulk_schedules(
        via(ADMIN, Surface.CONSOLE), "pause", ScheduleFilter(ids=(s.id,))
    )
    assert paused == 1
    assert await surfaces(herald) == [
        ("schedule.create", None),  # a bare member id says no surface
        ("schedule.change.denied", "slack"),
        ("schedule.pause", "console"),
    ]
    assert await surfaces(herald, surface="console") == [("schedule.pause", "console")]


async def test_a_resolved_actor_keeps_its_surface(herald: Herald) -> None:
    actor = await herald.actor(via(ALICE, Surface.DISCORD))
    assert actor.surface is Surface.DISCORD and actor.principal.surface is Surface.DISCORD
    await herald.set_timezone(actor, "Europe/Berlin")
    assert await surfaces(herald) == [("member.timezone", "discord")]


def test_the_cli_says_cli(db_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    from core.settings import load_settings

    if db.backend(db_url) == "postgresql":
        db.upgrade(db_url)
    settings: Settings = load_settings(HERALD_DATABASE_URL=db_url, USER="alice", _env_file=None)
    argv = ["schedule", "--to", "log:", "--when", "in 1 hour", "--text", "hi"]
    assert main(argv, settings=settings) == 0
    capsys.readouterr()
    engine = db.make_sync_engine(db_url)
    try:
        with engine.connect() as conn:
            rows = conn.execute(sa.text("SELECT actor, action, surface FROM audit")).all()
    finally:
        engine.dispose()
    assert [tuple(r) for r in rows] == [(ALICE, "schedule.create", "cli")]
