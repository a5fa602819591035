"""A claim row is read by name: the claim statements select one labelled list, and
every field of ClaimedJob is one of its labels."""

import dataclasses
from datetime import UTC, datetime

from core.store import CLAIM_COLUMNS, ClaimedJob, queue
from core.store.base import sqlite_datetime


def test_every_claimed_job_field_is_a_claim_column_and_back() -> None:
    labels = [label for label, _ in CLAIM_COLUMNS]
    assert len(labels) == len(set(labels))
    assert set(labels) == {f.name for f in dataclasses.fields(ClaimedJob)}


def test_both_claim_statements_select_the_labelled_list() -> None:
    for statement in (
        queue._SQLITE_CLAIM_PICKED,
        queue._SQLITE_CLAIM_LISTED,
        queue._PG_CLAIM,
        queue._PG_CAPPED_CLAIM,
    ):
        returning = statement.split("RETURNING", 1)[1]
        positions = [returning.index(f" AS {label}") for label, _ in CLAIM_COLUMNS]
        assert positions == sorted(positions)


def test_a_row_is_read_by_its_labels() -> None:
    values = {
        "id": 7,
        "schedule_id": 3,
        "occurrence_at": "2026-01-02 10:00:00.000000",
        "due_at": "2026-01-02 10:00:05.000000",
        "attempts": 2,
        "idempotency_key": "key",
        "destination": "slack:C0123",
        "body": "hello",
        "rrule": "FREQ=DAILY",
        "max_lateness_s": 60,
        "options": '{"username": "Herald"}',
        "timezone": "Europe/Paris",
        "tenant": None,
        "owner_name": None,
        "owner": "slack:U1",
        "recipient": 2,
        "step": 1,
        "route": '{"id":2,"to":["slack:@U1","email:a@example.com"]}',
        "step_since": "2026-01-02 10:00:07.000000",
        "priority": 0,
        "ladder": "nag 2",
        "thread": "C0123/1700000000.000100",
        "done_by": "slack:U2",
        "done_at": "2026-01-02 10:20:00.000000",
    }
    row = tuple(values[label] for label, _ in CLAIM_COLUMNS)
    job = queue._claimed(row, sqlite_datetime)
    assert job == ClaimedJob(
        7,
        3,
        datetime(2026, 1, 2, 10, tzinfo=UTC),
        datetime(2026, 1, 2, 10, 0, 5, tzinfo=UTC),
        2,
        "key",
        "slack:C0123",
        "hello",
        "FREQ=DAILY",
        60,
        {"username": "Herald"},
        "Europe/Paris",
        "",
        "",
        "slack:U1",
        2,
        1,
        '{"id":2,"to":["slack:@U1","email:a@example.com"]}',
        datetime(2026, 1, 2, 10, 0, 7, tzinfo=UTC),
        0,
        "nag 2",
        "C0123/1700000000.000100",
        "slack:U2",
        datetime(2026, 1, 2, 10, 20, tzinfo=UTC),
    )
    at = datetime(2026, 1, 2, tzinfo=UTC)
    pg_row = tuple(
        {
            **values,
            "occurrence_at": at,
            "due_at": at,
            "options": "{}",
            "step_since": at,
            "done_at": at,
        }[label]
        for label, _ in CLAIM_COLUMNS
    )
    pg_job = queue._claimed(pg_row)
    assert (pg_job.occurrence_at, pg_job.due_at, pg_job.options) == (at, at, {})
    assert pg_job.priority == 0  # its rank: urgent
