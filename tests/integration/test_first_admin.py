"""A fresh database's first admin (issue 33): nobody holds a role yet, and the person at
the terminal becomes its admin in one step (``herald admin init``), once, audited; roles
are read from the database at every action; a refusal for a role says so. On SQLite and
PostgreSQL, without HERALD_ADMINS (a fresh install has none)."""

from __future__ import annotations

import asyncio

import pytest

from bot.cli import main
from core import db
from core.actors import Principal, Surface
from core.cases import Herald
from core.clock import ManualClock
from core.errors import NotFound, PermissionDenied
from core.settings import Settings, load_settings
from core.store import AuditFilter, Store
from tests.conftest import START
from tests.tui.conftest import deliver

ALICE = Principal("local:alice", surface=Surface.CLI)  # at the terminal
BOB = "local:bob"
SLACK_ADMIN = Principal("slack:UADM", "slack:TA", platform_admin=True)


@pytest.fixture
def fresh(db_url: str) -> Settings:
    """A fresh install's settings: no HERALD_ADMINS, the terminal's user is alice."""
    return load_settings(
        HERALD_DATABASE_URL=db_url, HERALD_DEFAULT_TZ="UTC", USER="alice", _env_file=None
    )


@pytest.fixture
def herald(store: Store, fresh: Settings, clock: ManualClock) -> Herald:
    return Herald(store, fresh, clock)


async def test_on_a_fresh_database_the_terminal_becomes_the_first_admin_once(
    herald: Herald,
) -> None:
    assert herald.settings.admins == frozenset()
    with pytest.raises(PermissionDenied) as refused:
        await herald.set_role(ALICE, BOB, "operator")
    assert str(refused.value) == (
        "Only an admin can change roles. There is none yet: become the first with "
        "`herald admin init`."
    )
    assert await herald.admins_for(ALICE) == []

    assert await herald.init_admin(ALICE) == "local:alice"
    me = await herald.actor(ALICE)
    assert me.is_admin and me.herald_wide  # an admin of local acts across tenants
    await herald.set_role(ALICE, BOB, "operator")  # and gives roles at once
    assert (await herald.actor(BOB)).role.value == "operator"
    assert await herald.admins_for(BOB) == ["local:alice"]

    # once there is an admin, nobody else becomes one this way, and the refusal says why
    with pytest.raises(PermissionDenied) as again:
        await herald.init_admin(BOB)
    assert str(again.value) == (
        "This database has an admin already (local:alice): ask one to make local:bob an "
        "admin (herald member role local:bob admin)."
    )
    with pytest.raises(PermissionDenied, match="local:alice is an admin already"):
        await herald.init_admin(ALICE)
    assert (await herald.actor(BOB)).role.value == "operator"  # unchanged

    rows = await herald.audit_log(ALICE, AuditFilter(action="member.first_admin"))
    assert [(r.action, r.actor, r.object_id, r.surface) for r in reversed(rows)] == [
        ("member.first_admin", "local:alice", "local:alice", "cli"),
        ("member.first_admin.denied", "local:bob", "local:bob", None),
        ("member.first_admin.denied", "local:alice", "local:alice", "cli"),
    ]


async def test_the_first_admin_can_be_named_and_only_from_the_terminal(
    herald: Herald,
) -> None:
    # a chat platform's admin of its own workspace is no admin of the local tenant
    await herald.sync_member(SLACK_ADMIN)
    with pytest.raises(PermissionDenied, match="Only the person at Herald's terminal"):
        await herald.init_admin(SLACK_ADMIN)
    assert await herald.admins_for(ALICE) == []
    assert await herald.init_admin(ALICE, "local:ops") == "local:ops"
    assert (await herald.actor("local:ops")).is_admin
    assert not (await herald.actor(ALICE)).is_admin


async def test_two_at_once_make_one_admin(
    db_url: str, store: Store, fresh: Settings, clock: ManualClock
) -> None:
    other = await Store.open(db_url)  # a second process's connection pool
    try:
        first, second = Herald(store, fresh, clock), Herald(other, fresh, clock)
        results = await asyncio.gather(
            first.init_admin("local:ann"),
            second.init_admin("local:ben"),
            return_exceptions=True,
        )
    finally:
        await other.close()
    made = [r for r in results if isinstance(r, str)]
    assert len(made) == 1, results
    assert isinstance(next(r for r in results if not isinstance(r, str)), PermissionDenied)
    assert await store.admins_of("local") == made


async def test_a_role_refusal_on_a_dead_letter_of_the_tenant_says_the_role(
    herald: Herald, clock: ManualClock
) -> None:
    await herald.create_schedule(BOB, to="log:", when="in 1 minute", text="lost")
    clock.advance(61)
    assert await deliver(herald, clock, fail=True, error="gone") == 1
    [letter] = await herald.dead_letters(BOB)
    # another member of the same tenant: refused for the role, not "not found"
    with pytest.raises(PermissionDenied) as refused:
        await herald.retry_dead_letters("local:carol", [letter.job_id])
    assert str(refused.value) == (
        f"Dead letter {letter.job_id} is another member's: only operators and admins can "
        "see or act on other members' dead letters."
    )
    with pytest.raises(PermissionDenied, match="another member's"):
        await herald.dead_letter("local:carol", letter.job_id)
    # another tenant's member learns nothing of it
    with pytest.raises(NotFound, match=f"No dead letter {letter.job_id} that you can see"):
        await herald.dead_letter(SLACK_ADMIN, letter.job_id)
    # the owner's request has nobody to answer it until the terminal makes an admin
    assert await herald.retry_dead_letters(BOB, [letter.job_id]) == ("requested", 1)
    assert await herald.admins_for(BOB) == []
    await herald.init_admin(ALICE)
    assert await herald.approve_dead_retry(ALICE, [letter.job_id]) == 1


def test_herald_dead_retry_says_no_admin_exists_and_herald_admin_init_makes_one(
    db_url: str, fresh: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    """The commands as typed, on a fresh database (the CLI's own composition root)."""

    async def dead_letter() -> int:
        store = await Store.open(db_url)
        try:
            clock = ManualClock(START)
            herald = Herald(store, fresh, clock)
            await herald.create_schedule(ALICE, to="log:", when="in 1 minute", text="lost")
            clock.advance(61)
            await deliver(herald, clock, fail=True, error="gone")
            [letter] = await herald.dead_letters(ALICE)
            return letter.job_id
        finally:
            await store.close()

    if db.backend(db_url) == "postgresql":  # PostgreSQL is migrated by `herald db upgrade`
        db.upgrade(db_url)
    job = asyncio.run(dead_letter())
    capsys.readouterr()
    assert main(["member", "role", "local:bob", "operator"], settings=fresh) == 2
    assert "There is none yet: become the first with `herald admin init`." in (
        capsys.readouterr().err
    )
    assert main(["dead", "retry", str(job)], settings=fresh) == 0
    assert capsys.readouterr().out.splitlines() == [
        "Asked an admin to approve retrying 1 dead letter(s).",
        "No admin is recorded in this database to answer it (and HERALD_ADMINS is unset "
        "here): `herald admin init` makes the first.",
    ]
    assert main(["admin", "init"], settings=fresh) == 0
    assert capsys.readouterr().out.startswith("local:alice is now an admin of this database")
    assert main(["admin", "init"], settings=fresh) == 2
    assert "local:alice is an admin already" in capsys.readouterr().err
    assert main(["dead", "retry", str(job)], settings=fresh) == 0
    assert capsys.readouterr().out == "Retrying 1 dead letter(s) now.\n"
