"""Migration 0019 moves dead letters' retry requests and rejections from four job columns
into ``approval`` rows, which the dead-letter desk reads as it read the columns; going
down puts them back in the columns."""

from __future__ import annotations

from datetime import UTC, datetime

import sqlalchemy as sa

from core import db
from core.store import AuditEntry, DeadFilter, Store

_AT = "2026-03-02 12:00:00"
_ASKED_AT = "2026-03-02 13:00:00"
_SCHEDULE = (
    "INSERT INTO schedule (id, tenant, owner, destination, body, expression, timezone,"
    " starts_at, state, version, created_at, updated_at)"
    " VALUES (:id, :tenant, :owner, 'slack:C0OPS', 'x', 'x', 'UTC', :at, 'active', 1, :at, :at)"
)
_JOB = (
    "INSERT INTO job (id, schedule_id, occurrence_at, due_at, state, attempts,"
    " idempotency_key, last_error, retry_requested_by, retry_requested_at,"
    " retry_rejected_by, retry_reject_reason, created_at, updated_at, finished_at)"
    " VALUES (:id, :sid, :occ, :occ, 'dead', 5, :key, 'HTTP 410 Gone', :asked_by, :asked_at,"
    " :rejected_by, :reason, :at, :at, :occ)"
)
#: job id: (schedule, who asked and when, who turned it down and why)
_LETTERS = {
    1: (1, ("slack:U2", _ASKED_AT), (None, None)),
    2: (2, (None, None), ("local:root", "the hook is gone")),
    3: (2, (None, None), (None, None)),
}


def _seed_0018(url: str) -> None:
    engine = db.make_sync_engine(url)
    try:
        with engine.begin() as conn:
            for sid, tenant, owner in ((1, "acme", "slack:U1"), (2, "local", "local:bob")):
                values = {"id": sid, "tenant": tenant, "owner": owner, "at": _AT}
                conn.execute(sa.text(_SCHEDULE), values)
            for jid, (sid, (asked_by, asked_at), (rejected_by, reason)) in _LETTERS.items():
                conn.execute(
                    sa.text(_JOB),
                    {
                        "id": jid,
                        "sid": sid,
                        "occ": f"2026-03-0{jid} 09:00:00",
                        "key": f"k{jid}",
                        "asked_by": asked_by,
                        "asked_at": asked_at,
                        "rejected_by": rejected_by,
                        "reason": reason,
                        "at": _AT,
                    },
                )
    finally:
        engine.dispose()


def _rows(url: str, query: str) -> list[tuple[object, ...]]:
    """Rows of ``query``, times as ``YYYY-MM-DD HH:MM:SS`` on both databases."""
    engine = db.make_sync_engine(url)
    try:
        with engine.connect() as conn:
            return [tuple(_second(v) for v in row) for row in conn.execute(sa.text(query))]
    finally:
        engine.dispose()


def _second(value: object) -> object:
    if isinstance(value, datetime):
        return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")
    if isinstance(value, str) and value[:2] == "20" and value[10:11] in (" ", "T"):
        return value[:19].replace("T", " ")
    return value


async def test_retry_requests_move_to_approvals_and_back(db_url: str) -> None:
    db.upgrade(db_url, "0018")
    _seed_0018(db_url)

    db.upgrade(db_url, "0019")
    approvals = _rows(
        db_url,
        "SELECT id, tenant, kind, job_id, state, requested_by, requested_at, why,"
        " decided_by, decided_at, reason, shown FROM approval ORDER BY job_id",
    )
    pending_id = approvals[0][0]
    assert [row[1:] for row in approvals] == [
        ("acme", "retry", 1, "pending", "slack:U2", _ASKED_AT, "a dead letter sent again")
        + (None, None, None, True),
        # a rejection keeps no requester; it reads as decided when the job last changed
        ("local", "retry", 2, "rejected", "", _AT, "a dead letter sent again")
        + ("local:root", _AT, "the hook is gone", True),
    ]

    db.upgrade(db_url)  # the store reads the head schema (later migrations leave these)
    store = await Store.open(db_url)
    try:
        letters = {d.job_id: d for d in await store.dead_letters()}
        asked, rejected, untouched = letters[1], letters[2], letters[3]
        assert (asked.tenant, asked.retry_requested_by, asked.approval_id) == (
            "acme",
            "slack:U2",
            pending_id,
        )
        assert asked.retry_requested_at == datetime(2026, 3, 2, 13, tzinfo=UTC)
        assert asked.retry_note == "asked by slack:U2"
        assert (rejected.retry_requested_by, rejected.approval_id) == (None, None)
        assert rejected.retry_note == "rejected by local:root: the hook is gone"
        assert untouched.retry_note is None and untouched.approval_id is None
        assert [d.job_id for d in await store.dead_page(DeadFilter(requested=True))] == [1]
        assert await store.count_dead(DeadFilter(requested=False)) == 2
        assert await store.count_dead(DeadFilter(tenant="acme", requested=True)) == 1
        # a request made on the new schema goes down too
        audit = AuditEntry("local:bob", "dead.retry_request", "job")
        now = datetime(2026, 3, 4, 8, tzinfo=UTC)
        assert await store.request_dead_retry([3], actor="local:bob", now=now, audit=audit) == 1
    finally:
        await store.close()

    db.downgrade(db_url, "0018")
    assert _rows(
        db_url,
        "SELECT id, retry_requested_by, retry_requested_at, retry_rejected_by,"
        " retry_reject_reason FROM job ORDER BY id",
    ) == [
        (1, "slack:U2", _ASKED_AT, None, None),
        (2, None, None, "local:root", "the hook is gone"),
        (3, "local:bob", "2026-03-04 08:00:00", None, None),
    ]
