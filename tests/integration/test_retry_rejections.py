"""An admin turns a retry request down with a reason: it is audited and kept on the
dead letter, and whoever asked reads "rejected by X: reason" where they list their dead
letters (the CLI, Slack's Home tab, the console); a chat requester is also messaged
(tests/integration/test_retry_answers.py)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import sqlalchemy as sa

from bot.cli import main
from bot.slack.dead import Letter, letter_blocks
from core.actors import Principal, Surface
from core.cases import Herald
from core.clock import ManualClock
from core.errors import InvalidInput, PermissionDenied
from core.models import REJECT_REASON_CHARS, Approval
from core.settings import load_settings
from core.store import AuditFilter, DeadFilter
from tests.tui.conftest import ADMIN, MEMBER, OPERATOR, seed

WHY = "the hook is gone for good;   schedule it to #ops instead"
SAID = "the hook is gone for good; schedule it to #ops instead"


@pytest.fixture
async def asked(herald: Herald, clock: ManualClock) -> list[int]:
    """Bob's dead letters with his retry request waiting."""
    requested: list[int] = (await seed(herald, clock))["requested"]
    return requested


async def test_the_reason_is_audited_and_kept_for_whoever_asked(
    herald: Herald, asked: list[int]
) -> None:
    admin = Principal(ADMIN, surface=Surface.CONSOLE)
    assert await herald.reject_dead_retry(admin, asked, WHY) == 1
    [letter] = await herald.dead_letter(MEMBER, asked[0])
    assert letter.retry_requested_by is None
    assert (letter.retry_rejected_by, letter.retry_reject_reason) == (ADMIN, SAID)
    assert letter.retry_note == f"rejected by {ADMIN}: {SAID}"
    [row] = await herald.audit_log(ADMIN, AuditFilter(action="dead.retry_reject"))
    assert (row.object_id, row.details, row.surface) == (str(asked[0]), {"reason": SAID}, "console")
    # a new request replaces the answer; a retry clears both
    await herald.retry_dead_letters(MEMBER, asked)
    [letter] = await herald.dead_letter(MEMBER, asked[0])
    assert letter.retry_note == f"asked by {MEMBER}" and letter.retry_rejected_by is None
    await herald.reject_dead_retry(ADMIN, asked)  # the CLI may still say no reason
    [letter] = await herald.dead_letter(MEMBER, asked[0])
    assert letter.retry_note == f"rejected by {ADMIN}"
    await herald.retry_dead_letters(ADMIN, asked)
    job = await herald.store.get_job(asked[0])
    assert job is not None and job.state == "pending"
    # each answer is kept as its approval row; the retry leaves none shown
    assert await _approvals(herald, asked[0]) == [
        ("rejected", MEMBER, ADMIN, SAID, False),
        ("rejected", MEMBER, ADMIN, None, False),
    ]


async def test_a_request_is_one_approval_of_its_tenant_that_a_retry_or_discard_closes(
    herald: Herald, clock: ManualClock, asked: list[int]
) -> None:
    """A retry request is an approval row (kind retry, in the letter's tenant, where a
    tenant's pending approvals list it): asking again keeps the one pending row, now the
    latest asker's; approving it retries the letter; a discard withdraws a request."""
    [letter] = await herald.dead_letter(MEMBER, asked[0])
    assert letter.approval_id is not None
    assert await herald.retry_dead_letters(OPERATOR, asked) == ("requested", 1)
    [again] = await herald.dead_letter(MEMBER, asked[0])
    assert (again.approval_id, again.retry_requested_by) == (letter.approval_id, OPERATOR)
    assert await _approvals(herald, asked[0]) == [("pending", OPERATOR, None, None, True)]
    [pending] = await herald.store.approvals(tenant=letter.tenant, kind="retry")
    assert (pending.id, pending.job_id) == (letter.approval_id, asked[0])
    assert (await herald.store.queue_stats(now=clock.now())).dead_awaiting == 1
    assert await herald.approve_dead_retry(ADMIN, asked) == 1
    assert await _approvals(herald, asked[0]) == [("approved", OPERATOR, ADMIN, None, False)]
    assert (await herald.store.queue_stats(now=clock.now())).dead_awaiting == 0
    # another dead letter asked about, then discarded: the request is withdrawn
    [other] = [d.job_id for d in await herald.dead_letters(ADMIN) if d.owner == OPERATOR]
    await herald.retry_dead_letters(OPERATOR, [other])
    assert await herald.discard_dead_letters(OPERATOR, [other]) == 1
    assert await _approvals(herald, other) == [("withdrawn", OPERATOR, None, None, False)]


async def test_the_consoles_reject_all_matching_says_it_too(
    herald: Herald, asked: list[int]
) -> None:
    assert await herald.dead_letter_action(ADMIN, "reject", f=DeadFilter(), reason=WHY) == (
        "rejected",
        1,
    )
    [letter] = await herald.dead_letter(MEMBER, asked[0])
    assert letter.retry_note == f"rejected by {ADMIN}: {SAID}"


async def test_a_reason_too_long_or_a_member_changes_nothing(
    herald: Herald, asked: list[int]
) -> None:
    with pytest.raises(InvalidInput, match=f"keep it to {REJECT_REASON_CHARS}"):
        await herald.reject_dead_retry(ADMIN, asked, "x" * (REJECT_REASON_CHARS + 1))
    with pytest.raises(PermissionDenied):
        await herald.reject_dead_retry(OPERATOR, asked, "no")
    [letter] = await herald.dead_letter(MEMBER, asked[0])
    assert letter.retry_note == f"asked by {MEMBER}"


async def test_whoever_asked_reads_it_in_the_cli_and_in_slack(
    herald: Herald, asked: list[int], db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    await herald.reject_dead_retry(ADMIN, asked, WHY)
    bob = load_settings(
        HERALD_DATABASE_URL=db_url, USER="bob", HERALD_DEFAULT_TZ="UTC", _env_file=None
    )

    async def cli(*argv: str) -> str:
        capsys.readouterr()
        code: Any = await asyncio.to_thread(main, list(argv), settings=bob)
        assert code == 0
        return capsys.readouterr().out

    listed = await cli("dead", "list")
    # the list fits 100 columns, so it says what happened; `dead show` gives the reason whole
    assert "RETRY" in listed and "rejected by local:" in listed
    assert max(len(line) for line in listed.splitlines()) <= 100
    shown = await cli("dead", "show", str(asked[0]))
    assert f"retry:              rejected by {ADMIN}: {SAID}" in shown
    [letter] = await herald.dead_letter(MEMBER, asked[0])
    blocks = letter_blocks(Letter.from_dead(letter), buttons=False)
    assert f"Retry rejected by {ADMIN}: {SAID}" in str(blocks)


async def test_the_clis_dead_letter_verbs_say_what_they_did(
    herald: Herald, asked: list[int], db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """retry, reject and discard (core/verbs.py's rows, as the CLI offers them)."""

    def as_(user: str, *admins: str) -> Any:
        return load_settings(
            HERALD_DATABASE_URL=db_url,
            USER=user,
            HERALD_ADMINS=",".join(admins),
            HERALD_DEFAULT_TZ="UTC",
            _env_file=None,
        )

    async def cli(settings: Any, *argv: str) -> tuple[int, str]:
        capsys.readouterr()
        code: Any = await asyncio.to_thread(main, list(argv), settings=settings)
        taken = capsys.readouterr()
        return code, taken.out + taken.err

    bob, admin = as_("bob"), as_("root-admin", ADMIN)
    letters = await herald.dead_letters(ADMIN)
    [gone] = [d.job_id for d in letters if d.destination == "slack:C0GONE"]
    [olives] = [d.job_id for d in letters if d.owner == OPERATOR]
    said = "Asked an admin to approve retrying 1 dead letter(s)."
    # root-admin is an admin only in their own process's HERALD_ADMINS: bob's is told
    # that none is recorded, and how to make one
    hint = (
        "No admin is recorded in this database to answer it (and HERALD_ADMINS is unset "
        "here): `herald admin init` makes the first."
    )
    assert await cli(bob, "dead", "retry", str(gone)) == (0, f"{said}\n{hint}\n")
    code, out = await cli(bob, "dead", "discard", str(gone))
    assert code != 0 and "Only operators and admins can discard" in out
    assert await cli(admin, "dead", "reject", str(asked[0]), "--reason", "no") == (
        0,
        "Rejected 1 request(s).\n",
    )
    assert await cli(admin, "dead", "retry", str(asked[0])) == (
        0,
        "Retrying 1 dead letter(s) now.\n",
    )
    assert await cli(admin, "dead", "discard", str(olives)) == (
        0,
        "Discarded 1 dead letter(s).\n",
    )
    [letter] = await herald.dead_letter(MEMBER, gone)
    assert letter.retry_note == f"asked by {MEMBER}"


async def _approvals(herald: Herald, job_id: int) -> list[tuple[object, ...]]:
    approval = Approval.__table__  # type: ignore[attr-defined]
    q = (
        sa.select(
            approval.c.state,
            approval.c.requested_by,
            approval.c.decided_by,
            approval.c.reason,
            approval.c.shown,
        )
        .where(approval.c.job_id == job_id)
        .order_by(approval.c.id)
    )
    async with herald.store._read() as conn:
        return [tuple(row) for row in await conn.execute(q)]
