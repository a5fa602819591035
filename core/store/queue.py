"""Queries of the dispatcher: claim, finish, dead letters, housekeeping (heartbeats and
leases: core.store.workers; shared rate limits: core.store.rate_buckets).

The hot path is set-based plain SQL on the driver, one statement per database: one
claim statement per batch (``UPDATE … RETURNING``, with ``FOR UPDATE SKIP LOCKED`` on
PostgreSQL) and one transaction that records a whole batch of outcomes (on PostgreSQL
the batch as arrays, two statements). A claim with caps on rate-limited destinations
(:data:`_CAPPED`) is one statement on PostgreSQL, after its lock; on SQLite one that
puts off what is past a cap, then the claim, in one transaction.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import operator
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar, TypeAlias

import sqlalchemy as sa

import core.store.ladders as ladders
import core.store.outcomes as outcomes
from core import routing
from core.events import TOLD_STATES, EventRow, EventType, OutcomePolicy, late_ms
from core.models import (
    LEASED_SQL,
    OPEN_STATE_VALUES,
    OUTCOME_OF_JOB,
    WAITING_SQL,
    JobState,
    Outcome,
    sqlite_utc_text,
)
from core.preferences import NORMAL, RANK
from core.ratelimit import ClaimCaps
from core.store.base import (
    APPROVAL,
    ATTEMPT,
    JOB,
    SCHEDULE,
    Gateway,
    held_by,
    new_idempotency_key,
    sqlite_datetime,
)

CLAIMABLE = OPEN_STATE_VALUES
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)

#: What a batch tells when its caller gives no policy: failures only, as settings default.
DEFAULT_POLICY = OutcomePolicy()
TERMINAL_FOR_SCHEDULE = ("delivered", "dead", "expired", "skipped")
#: A schedule's priority as its jobs' rank, in SQL (core.preferences.RANK; anything
#: else reads as normal, as :func:`core.preferences.priority_name` does backwards).
_RANK_SQL = (
    "CASE schedule.priority "
    + " ".join(f"WHEN '{name}' THEN {rank}" for name, rank in RANK.items())
    + f" ELSE {RANK[NORMAL]} END"
)


@dataclass(slots=True)
class ClaimedJob:
    """A job this worker now holds a lease on, with what it needs to send it.

    This, :class:`AttemptRecord` and :class:`Verdict` are built once per delivery:
    they are slotted and read-only by convention, not frozen (a frozen dataclass takes
    five times as long to build)."""

    id: int
    schedule_id: int
    occurrence_at: datetime
    due_at: datetime
    attempts: int
    idempotency_key: str
    destination: str
    body: str
    rrule: str | None
    max_lateness_s: int | None
    options: dict[str, Any]
    #: The schedule's time zone (what ``{date}`` in its text means).
    timezone: str = "UTC"
    #: The schedule's tenant, and its owner's name as the members table has it ("" when
    #: Herald knows none): a delivered message may say who scheduled it.
    tenant: str = ""
    owner_name: str = ""
    #: The owner's member id (``slack:U0123``): what a message says when there is no name.
    owner: str = ""
    #: Which recipient of the schedule it is for, the step of its chain it is at, its
    #: recipient as JSON when more than a destination in the schedule's zone
    #: (core.routing), and when its step began (None: when it fell due).
    recipient: int = 0
    step: int = 0
    route: str | None = None
    step_since: datetime | None = None
    #: Its rank in the queue (core.preferences.RANK: 0 urgent, 1 normal, 2 bulk): what
    #: the feeder starts first and whose send slots go ahead (core.dispatcher.rates).
    priority: int = 1
    #: "" for an occurrence's message; a step of its ladder otherwise (core.until_done:
    #: ``nag 2``, ``escalate 1.0``, ``done``), the message it answers (``thread``) and,
    #: for the ``done`` edit, who marked it done and when.
    ladder: str = ""
    thread: str | None = None
    done_by: str | None = None
    done_at: datetime | None = None


@dataclass(slots=True)
class AttemptRecord:
    """One row of the delivery log."""

    started_at: datetime
    finished_at: datetime
    outcome: str
    status_code: int | None = None
    error: str | None = None
    message_id: str | None = None
    #: The text sent (the schedule's, its variables filled in); None: nothing was sent.
    body: str | None = None
    #: Where the try went (the job's step's destination).
    destination: str | None = None
    #: The provider that took it, when its channel goes through several.
    provider: str | None = None


@dataclass(slots=True)
class Verdict:
    """What the dispatcher decided for one claimed job it judged, to record.

    ``state`` is delivered, retrying, dead or expired. ``attempt`` is the try's row of
    the delivery log (None when the job was judged without a try: too late, or
    unsendable). ``next_run`` is a recurring schedule's next occurrence, computed by
    the dispatcher from ``rrule``; it is inserted only if the schedule is still active
    with that same rule. ``refund_attempt``: the try does not count towards the job's
    attempts (the provider asked to wait, with a 429).
    """

    job: ClaimedJob
    state: str
    attempt: AttemptRecord | None = None
    error: str | None = None
    retry_at: datetime | None = None
    next_run: datetime | None = None
    refund_attempt: bool = False
    #: Its recipient's next step (a destination): the job falls back to it, due at
    #: ``retry_at`` with its tries counted afresh (core.routing).
    next_step: str | None = None


@dataclass(slots=True)
class HandBack:
    """A claimed job the dispatcher hands back to the queue without trying it (its
    rate limit is too far off, or its lease lapsed before sending), to record: due
    again at ``retry_at`` (None: as it was), in ``state`` pending or retrying, its
    attempt refunded. ``error`` says why, for the console."""

    job: ClaimedJob
    state: str
    error: str
    retry_at: datetime | None = None
    #: What the store reads of every record, the same for every hand-back.
    attempt: ClassVar[None] = None
    next_run: ClassVar[None] = None
    refund_attempt: ClassVar[bool] = True
    next_step: ClassVar[None] = None


#: What the dispatcher records for one claimed job: a verdict or a hand-back.
Settled: TypeAlias = Verdict | HandBack


@dataclass(frozen=True)
class QueueStats:
    """What the metrics gauges show: jobs by state, retry requests awaiting an admin,
    and how long the oldest waiting job has been due."""

    counts: dict[str, int]
    dead_awaiting: int
    oldest_overdue_seconds: float
    #: Jobs waiting (pending or retrying) by rank (core.preferences.RANK).
    waiting: dict[int, int] = dataclasses.field(default_factory=dict)


#: What a claim returns, in this order, each labelled with the :class:`ClaimedJob`
#: field it fills: the job's columns, its schedule's, and its owner's name. Both claim
#: statements select this list (:func:`_claim_returning`) and :func:`_claimed` reads a
#: row by these names, so a column the dispatcher reads is one line here and one field
#: of ClaimedJob.
CLAIM_COLUMNS: tuple[tuple[str, str], ...] = (
    ("id", "job.id"),
    ("schedule_id", "job.schedule_id"),
    ("occurrence_at", "job.occurrence_at"),
    ("due_at", "job.due_at"),
    ("attempts", "job.attempts"),
    ("idempotency_key", "job.idempotency_key"),
    ("destination", "job.destination"),
    ("body", "schedule.body"),
    ("rrule", "schedule.rrule"),
    ("max_lateness_s", "schedule.max_lateness_s"),
    ("options", "schedule.options"),
    ("timezone", "schedule.timezone"),
    ("tenant", "schedule.tenant"),
    ("owner_name", "member.display_name"),
    ("owner", "schedule.owner"),
    ("recipient", "job.recipient"),
    ("step", "job.step"),
    ("route", "job.route"),
    ("step_since", "job.step_since"),
    ("priority", "job.priority"),
    ("ladder", "job.ladder"),
    ("thread", "job.thread"),
    ("done_by", "job.done_by"),
    ("done_at", "job.done_at"),
)
#: Where each label of :data:`CLAIM_COLUMNS` sits in a claim row.
CLAIM_INDEX = {label: i for i, (label, _) in enumerate(CLAIM_COLUMNS)}


def _claim_returning(backend: str) -> str:
    """The RETURNING list of a claim statement: :data:`CLAIM_COLUMNS`, labelled.

    On SQLite the job's schedule is read by scalar subqueries (the UPDATE has no
    join); on PostgreSQL the statement joins it, and reads its options as text (JSON,
    parsed by :func:`_claimed`). The owner's name is read by the member table's
    primary key (tenant, id)."""
    sqlite = backend == "sqlite"
    schedule = "FROM schedule WHERE schedule.id = job.schedule_id"
    owner = "member.tenant = schedule.tenant AND member.id = schedule.owner"
    parts = []
    for label, column in CLAIM_COLUMNS:
        table, name = column.split(".")
        if table == "member" and sqlite:
            expr = f"""(SELECT member.{name} FROM schedule JOIN member
        ON {owner}
        WHERE schedule.id = job.schedule_id)"""
        elif table == "member":
            expr = f"(SELECT member.{name} FROM member WHERE {owner})"
        elif table == "schedule" and sqlite:
            expr = f"(SELECT {name} {schedule})"
        elif column == "job.destination" and sqlite:
            # a job's own destination, else its schedule's (recipient 0's first step)
            expr = f"coalesce(job.destination, (SELECT destination {schedule}))"
        elif column == "job.destination":
            expr = "coalesce(job.destination, schedule.destination)"
        elif column == "schedule.options":
            expr = f"{column}::text"
        else:
            expr = column
        parts.append(f"{expr} AS {label}")
    return ",\n    ".join(parts)


#: How much of every claim batch goes to the oldest due bulk jobs when urgent and normal
#: ones would fill it (a tenth, for batches of ten or more): bulk is served last, but a
#: steady flood of urgent or normal work never stops an import outright; it goes on at
#: no less than a tenth of the claim rate (core.preferences: priorities).
BULK_SHARE = 0.1


def bulk_share(limit: int) -> int:
    """How many of a claim of ``limit`` jobs are the oldest due bulk ones first
    (:data:`BULK_SHARE`; none in a claim of fewer than ten: one would be a bulk job
    before every urgent one)."""
    return int(limit * BULK_SHARE)


# The claim's choice among due jobs: the bulk share (the oldest due bulk jobs, up to
# :func:`bulk_share`), then urgent, normal and the other bulk jobs, each rank read in due
# order from ``ix_job_waiting_priority (priority, due_at, id)`` as its own LIMITed range
# (``priority = k AND due_at <= now``): the range ends at the first job not yet due, so
# a claim never reads a rank's future jobs (a 10,000-job import due tomorrow costs the
# claim of an urgent job nothing). Ranks other than 0, 1, 2 are never written
# (core.preferences.priority_rank).
_SQLITE_RANK = """{name} AS MATERIALIZED (
    SELECT id FROM job INDEXED BY ix_job_waiting_priority
    WHERE {waiting} AND priority = {rank} AND due_at <= :now
    ORDER BY priority, due_at, id LIMIT {limit}
)"""
_SQLITE_TAKEN = "(SELECT count(*) FROM {name})"
#: The chosen jobs: each rank takes what the ranks before it left of the batch (a LIMIT
#: of the counts before it), so nothing is sorted; the bulk jobs after the share are
#: those past it in due order (an OFFSET: fewer due than the share, none).
_SQLITE_PICK_WITH = "WITH " + ",\n".join(
    (
        _SQLITE_RANK.format(name="share", rank=2, limit=":share", waiting=WAITING_SQL),
        _SQLITE_RANK.format(
            name="urgent",
            rank=0,
            limit=":limit - " + _SQLITE_TAKEN.format(name="share"),
            waiting=WAITING_SQL,
        ),
        _SQLITE_RANK.format(
            name="normal",
            rank=1,
            limit=":limit - "
            + " - ".join(_SQLITE_TAKEN.format(name=n) for n in ("share", "urgent")),
            waiting=WAITING_SQL,
        ),
        _SQLITE_RANK.format(
            name="bulk",
            rank=2,
            limit=":limit - "
            + " - ".join(_SQLITE_TAKEN.format(name=n) for n in ("share", "urgent", "normal"))
            + " OFFSET :share",
            waiting=WAITING_SQL,
        ),
    )
)
_SQLITE_PICKED = """SELECT id FROM share UNION ALL SELECT id FROM urgent
    UNION ALL SELECT id FROM normal UNION ALL SELECT id FROM bulk"""
_SQLITE_PICK = f"{_SQLITE_PICK_WITH}\n{_SQLITE_PICKED}"
# SQLite holds the only write lock (BEGIN IMMEDIATE), so the chosen rows need no second
# state test. ``{ids}``: the jobs chosen (:data:`_SQLITE_PICK`, or those of a capped
# claim's choice left after some were put off, as a JSON array).
_SQLITE_CLAIM = f"""
UPDATE job SET state = 'claimed', lease_owner = :worker, lease_expires_at = :until,
    attempts = attempts + 1, updated_at = :now
WHERE id IN ({{ids}})
RETURNING {_claim_returning("sqlite")}
"""
_SQLITE_CLAIM_PICKED = _SQLITE_PICK_WITH + _SQLITE_CLAIM.format(ids=_SQLITE_PICKED)
_SQLITE_CLAIM_LISTED = _SQLITE_CLAIM.format(ids="SELECT value FROM json_each(:ids)")

# Recording outcomes on SQLite (PostgreSQL: _PG_RECORD and after), written with %s
# parameters; {ids} is a batch of ids as one parameter, a JSON array read by json_each.
_DELIVERED = """
UPDATE job SET state = 'delivered', lease_owner = NULL, lease_expires_at = NULL,
    last_error = NULL, finished_at = %s, updated_at = %s
WHERE id IN {ids} AND state = 'claimed' AND lease_owner = %s
RETURNING id
"""
_OWNED = """
SELECT id FROM job WHERE id IN {ids} AND state = 'claimed' AND lease_owner = %s
"""
_OTHER_STATE = """
UPDATE job SET state = %s, due_at = coalesce(%s, due_at), attempts = attempts - %s,
    last_error = %s, finished_at = %s, lease_owner = NULL, lease_expires_at = NULL,
    updated_at = %s
WHERE id = %s
"""
# A recurring schedule's next job, of its rank as the schedule says now (an edit of its
# priority reaches the next occurrence).
_NEXT_JOB = f"""
INSERT INTO job (schedule_id, recipient, occurrence_at, due_at, destination, route,
    state, attempts, idempotency_key, created_at, updated_at, priority)
SELECT %s, %s, %s, %s, %s, %s, 'pending', 0, %s, %s, %s, {_RANK_SQL}
FROM schedule WHERE id = %s AND state = 'active' AND rrule = %s
    AND EXISTS (SELECT 1 FROM json_each(schedule.recipients) WHERE value ->> 'id' = %s
        UNION ALL SELECT 1 WHERE json_array_length(schedule.recipients) = 0)
ON CONFLICT (schedule_id, recipient, occurrence_at, ladder) DO NOTHING
"""
# A job falling back to its recipient's next step: its tries counted afresh.
# (after the job's own update: the step begins when it falls due, its due_at)
_NEXT_STEP = """
UPDATE job SET destination = %s, step = step + 1, attempts = 0, step_since = due_at
WHERE id = %s
"""
_NEXT_RUN = """
UPDATE schedule SET next_run_at = %s, updated_at = %s
WHERE id = %s AND state = 'active' AND rrule = %s
"""
_COMPLETED = f"""
UPDATE schedule SET state = 'completed', next_run_at = NULL, updated_at = %s
WHERE id IN {{ids}} AND state = 'active'
    AND NOT EXISTS (SELECT 1 FROM job WHERE job.schedule_id = schedule.id AND {WAITING_SQL})
"""
_OUTCOME = """
UPDATE schedule SET last_outcome = %s WHERE id IN {ids}
"""
_OUTCOME_DELIVERED = """
UPDATE schedule SET last_outcome = %s, failed_streak = 0 WHERE id IN {ids}
"""
_ATTEMPT_INSERT = """
INSERT INTO attempt (job_id, started_at, finished_at, outcome, status_code, error,
    provider_message_id, worker, body, destination, provider, late_ms, delayed)
    VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
"""


# PostgreSQL: the claim and the recording of a batch take the whole batch as arrays, one
# element per job, read with unnest(); every plan is then a join whose cost grows with
# the batch, whatever the planner's statistics say. A fresh schema has none, and the
# shared statements above (``IN (SELECT unnest(...))``, ``NOT EXISTS`` over the waiting
# index) became nested loops over the whole batch or every waiting row: 1.2 to 2.9 s
# per 2,000-job batch, measured with EXPLAIN ANALYZE.
#
# The claim: the waiting index holds jobs in due order, so the first ``limit`` are read
# in order and never sorted (``enable_sort`` is off for the claim's transaction; without
# statistics the planner sorted every waiting row), and each job's schedule comes back
# with it. The locked ids are an array looked up by primary key: joined instead, a
# batch the planner guessed at one row was matched against the whole waiting index once
# per job. Locked rows still wait (the lock re-reads a row another claim changed, and
# holds it from then on), so they are not tested again.
#
# Priorities: the due jobs are chosen as on SQLite (:data:`_SQLITE_PICK`), each rank its
# own LIMITed range of ``ix_job_waiting_priority`` locked as it is read, each taking
# what the ranks before it left of the batch (a LIMIT of a count of the CTEs before):
# no row is locked that the claim does not take, and none is sorted.
_PG_RANK = """{name} AS MATERIALIZED (
    SELECT id, due_at, schedule_id, destination, priority AS p FROM job
    WHERE {waiting} AND priority = {rank} AND due_at <= %(now)b{also}
    ORDER BY priority, due_at, id LIMIT {limit} FOR UPDATE SKIP LOCKED
)"""
_PG_TAKEN = "(SELECT count(*) FROM {name})"
_PG_PICK = ",\n".join(
    (
        _PG_RANK.format(name="share", rank=2, limit="%(share)b::int", also="", waiting=WAITING_SQL),
        _PG_RANK.format(
            name="urgent",
            rank=0,
            limit="%(limit)b::int - " + _PG_TAKEN.format(name="share"),
            also="",
            waiting=WAITING_SQL,
        ),
        _PG_RANK.format(
            name="normal",
            rank=1,
            limit="%(limit)b::int - "
            + " - ".join(_PG_TAKEN.format(name=n) for n in ("share", "urgent")),
            also="",
            waiting=WAITING_SQL,
        ),
        _PG_RANK.format(
            name="bulk",
            rank=2,
            limit="%(limit)b::int - "
            + " - ".join(_PG_TAKEN.format(name=n) for n in ("share", "urgent", "normal")),
            also="\n        AND id <> ALL(ARRAY(SELECT id FROM share))",
            waiting=WAITING_SQL,
        ),
        """cand AS MATERIALIZED (
    SELECT * FROM share UNION ALL SELECT * FROM urgent
    UNION ALL SELECT * FROM normal UNION ALL SELECT * FROM bulk
)""",
    )
)
_PG_CLAIM = f"""
WITH {_PG_PICK}
UPDATE job SET state = 'claimed', lease_owner = %(worker)b, lease_expires_at = %(until)b,
    attempts = job.attempts + 1, updated_at = %(now)b
FROM schedule
WHERE job.id = ANY(ARRAY(SELECT id FROM cand))
    AND schedule.id = job.schedule_id
RETURNING {_claim_returning("postgresql")}
"""
# A claim with caps (core.ratelimit.ClaimCaps): no destination with a rate limit has
# more jobs claimed, by every dispatcher together, than its cap. The claim looks at the
# first ``limit`` due jobs (locked, as above), finds each distinct destination's cap
# (the first matching prefix) and how many of its jobs are claimed already (read
# through the claimed jobs, not the destination's schedules, which include every past
# one), and ranks a destination's jobs here only where they could pass its cap. A job
# past its cap is not claimed: it is due again ``step`` seconds later for each place
# past it (when its slot would be a claim horizon away), rounded up to a tenth of the
# horizon (those put off come due a part of the cap at a time, not one claim per
# slot), so later claims need not read it again until then; the others are claimed.
# Without caps the claim is the statement above, unchanged; a destination without a
# limit costs its jobs' reading of their destination and a prefix test per claim.
# Priorities: a destination's jobs pass its cap in rank order, and a job's room is its
# cap less the claimed jobs of its rank or a higher one (``p``): an urgent job is not
# put off because bulk ones fill the cap (their slots are then passed too, see
# core.dispatcher.rates).
_CAPPED = """
held AS MATERIALIZED (
    SELECT h.d, h.p, count(*) AS n FROM ({held}) AS h
    WHERE h.d IN (SELECT d FROM capped)
    GROUP BY h.d, h.p
),
over AS MATERIALIZED (
    SELECT capped.d, capped.cap, capped.step
    FROM capped
    WHERE capped.n > capped.cap - coalesce((SELECT sum(held.n) FROM held
        WHERE held.d = capped.d), 0)
),
past AS MATERIALIZED (
    SELECT p.id, p.past, p.step FROM (
        SELECT ranked.id, row_number() OVER (
            PARTITION BY over.d ORDER BY ranked.p, ranked.due_at, ranked.id
        ) - over.cap + coalesce((SELECT sum(held.n) FROM held
            WHERE held.d = over.d AND held.p <= ranked.p), 0) AS past, over.step
        FROM ({ranked}) AS ranked JOIN over ON over.d = ranked.d
        WHERE EXISTS (SELECT 1 FROM over)
    ) AS p
    WHERE p.past > 0
)"""
#: The claimed jobs' destinations (``held``), and the jobs looked at with theirs
#: (``past``, only when a destination is past its cap; PostgreSQL has them in ``dest``
#: already): each by its schedule's primary key, the claimed or looked-at jobs first (a
#: plan starting from the destination would read every schedule that ever had it).
#: SQLite keeps a CROSS JOIN's order; PostgreSQL keeps a LATERAL subquery with OFFSET.
_SQLITE_HELD = f"""SELECT coalesce(job.destination, schedule.destination) AS d,
            job.priority AS p
        FROM job CROSS JOIN schedule ON schedule.id = job.schedule_id
        WHERE job.{LEASED_SQL} AND EXISTS (SELECT 1 FROM capped)"""
_SQLITE_RANKED = """SELECT cand.id, cand.due_at, cand.p,
                coalesce(cand.destination, schedule.destination) AS d
            FROM cand CROSS JOIN schedule ON schedule.id = cand.schedule_id"""
_PG_HELD = f"""SELECT coalesce(job.destination, s.d) AS d, job.priority AS p
        FROM job CROSS JOIN LATERAL (
            SELECT destination AS d FROM schedule WHERE schedule.id = job.schedule_id OFFSET 0
        ) AS s
        WHERE job.{LEASED_SQL} AND EXISTS (SELECT 1 FROM capped)"""
_PG_RANKED = "SELECT id, due_at, p, d FROM dest"
#: Why a job past its destination's cap was not claimed (its last error until it is).
CAPPED_ERROR = "Waiting for its destination's rate limit."
_SQLITE_PUT_OFF = f"""
WITH cand AS MATERIALIZED (
    SELECT id, due_at, schedule_id, destination, priority AS p FROM job
    WHERE id IN (SELECT value FROM json_each(:ids))
),
capped AS MATERIALIZED (
    SELECT d, n, json_extract(:caps, '$[' || k || '][1]') AS cap,
        json_extract(:caps, '$[' || k || '][2]') AS step
    FROM (
        SELECT dest.d, count(*) AS n, (
            SELECT min(key) FROM json_each(:caps)
            WHERE substr(dest.d, 1, length(value ->> 0)) = value ->> 0
        ) AS k
        FROM (
            SELECT coalesce(cand.destination, schedule.destination) AS d
            FROM cand CROSS JOIN schedule ON schedule.id = cand.schedule_id
        ) AS dest
        GROUP BY dest.d
    )
    WHERE k IS NOT NULL
),{_CAPPED.format(held=_SQLITE_HELD, ranked=_SQLITE_RANKED)}
UPDATE job SET
    due_at = strftime('%Y-%m-%d %H:%M:%S', past.us / 1000000, 'unixepoch')
        || printf('.%06d', past.us % 1000000),
    last_error = :error, updated_at = :now
FROM (
    SELECT id, :now_us + (CAST(round(past * step * 1e6) AS INTEGER) + :quantum_us - 1)
        / :quantum_us * :quantum_us AS us
    FROM past
) AS past
WHERE job.id = past.id
RETURNING job.id
"""
# On PostgreSQL a claim with caps first takes a transaction-level advisory lock, in a
# statement before the claim's (whose snapshot then sees every claim made before it):
# such claims are made one at a time, or four at once each counted the others' jobs
# as not yet claimed and together held four caps. The same round trip sets the claim's
# settings: without JIT, as its window's sort (which enable_sort = off prices out of
# every plan) made it cost enough for a JIT compilation of 1.5 s.
_PG_CAPPED_SETUP = (
    "SET LOCAL enable_sort = off; SET LOCAL jit = off; "
    "SELECT pg_advisory_xact_lock(7161258402917851137)"
)
_PG_CAPPED_CLAIM = f"""
WITH {_PG_PICK},
dest AS MATERIALIZED (
    SELECT cand.id, cand.due_at, cand.p, coalesce(cand.destination,
        (SELECT destination FROM schedule WHERE schedule.id = cand.schedule_id)) AS d
    FROM cand
),
capped AS MATERIALIZED (
    SELECT u.d, u.n, c.cap, c.step
    FROM (SELECT d, count(*) AS n FROM dest GROUP BY d) AS u
    CROSS JOIN LATERAL (
        SELECT c.cap, c.step
        FROM unnest(%(prefixes)b::text[], %(caps)b::int[], %(steps)b::float8[])
            WITH ORDINALITY AS c(prefix, cap, step, at)
        WHERE starts_with(u.d, c.prefix) ORDER BY c.at LIMIT 1
    ) AS c
),{_CAPPED.format(held=_PG_HELD, ranked=_PG_RANKED)},
later AS (
    UPDATE job SET due_at = %(now)b + make_interval(secs => (
            (round(past.past * past.step * 1e6)::bigint + %(quantum_us)b::bigint - 1)
            / %(quantum_us)b::bigint * %(quantum_us)b::bigint
        ) / 1e6),
        last_error = %(error)b, updated_at = %(now)b
    FROM past WHERE job.id = past.id
)
UPDATE job SET state = 'claimed', lease_owner = %(worker)b, lease_expires_at = %(until)b,
    attempts = job.attempts + 1, updated_at = %(now)b
FROM schedule
WHERE job.id = ANY(ARRAY(
        SELECT id FROM cand WHERE id NOT IN (SELECT id FROM past)
    ))
    AND schedule.id = job.schedule_id
RETURNING {_claim_returning("postgresql")}
"""
# Recording, in one statement: every attempt, and every job's new state where this
# worker still holds it (the ids returned).
_PG_RECORD = """
WITH tried AS (
    INSERT INTO attempt (job_id, started_at, finished_at, outcome, status_code, error,
        provider_message_id, worker, body, destination, provider, late_ms, delayed)
    SELECT a.job_id, a.started_at, a.finished_at, a.outcome, a.status_code, a.error,
        a.message_id, %(worker)b, a.body, a.destination, a.provider, a.late_ms, a.delayed
    FROM unnest(%(a_job)b::bigint[], %(a_started)b::timestamptz[],
        %(a_finished)b::timestamptz[], %(a_outcome)b::text[], %(a_status)b::int[],
        %(a_error)b::text[], %(a_message)b::text[], %(a_body)b::text[],
        %(a_dest)b::text[], %(a_provider)b::text[], %(a_late)b::int[], %(a_delayed)b::bool[])
        AS a(job_id, started_at, finished_at, outcome, status_code, error, message_id, body,
            destination, provider, late_ms, delayed)
)
UPDATE job SET state = o.state, due_at = coalesce(o.retry_at, job.due_at),
    attempts = job.attempts - o.refund, last_error = o.error, finished_at = o.finished_at,
    lease_owner = NULL, lease_expires_at = NULL, updated_at = %(now)b
FROM unnest(%(ids)b::bigint[], %(states)b::text[], %(retry_at)b::timestamptz[],
    %(refund)b::int[], %(errors)b::text[], %(finished)b::timestamptz[])
    AS o(id, state, retry_at, refund, error, finished_at)
WHERE job.id = o.id AND job.state = 'claimed' AND job.lease_owner = %(worker)b
RETURNING job.id
"""
# Recurring schedules' next occurrences (see _NEXT_JOB and _NEXT_RUN).
_PG_NEXT_JOBS = f"""
INSERT INTO job (schedule_id, recipient, occurrence_at, due_at, destination, route, state,
    attempts, idempotency_key, created_at, updated_at, priority)
SELECT n.schedule_id, n.recipient, n.occurrence, n.due, n.destination, n.route, 'pending',
    0, n.key, %(now)b, %(now)b, s.rank
FROM unnest(%(ids)b::int[], %(recipient)b::int[], %(occurrence)b::timestamptz[],
    %(due)b::timestamptz[], %(destination)b::text[], %(route)b::text[], %(rule)b::text[],
    %(key)b::text[])
    AS n(schedule_id, recipient, occurrence, due, destination, route, rule, key)
CROSS JOIN LATERAL (
    SELECT {_RANK_SQL} AS rank FROM schedule
    WHERE id = n.schedule_id AND state = 'active' AND rrule = n.rule
        AND (schedule.recipients::jsonb @> jsonb_build_array(jsonb_build_object('id', n.recipient))
            OR json_array_length(schedule.recipients) = 0)
) AS s
ON CONFLICT (schedule_id, recipient, occurrence_at, ladder) DO NOTHING
"""
_PG_NEXT_STEPS = """
UPDATE job SET destination = n.destination, step = job.step + 1, attempts = 0,
    step_since = job.due_at
FROM unnest(%(ids)b::bigint[], %(destination)b::text[]) AS n(id, destination)
WHERE job.id = n.id
"""
_PG_NEXT_RUNS = """
UPDATE schedule SET next_run_at = n.occurrence, updated_at = %(now)b
FROM unnest(%(ids)b::int[], %(occurrence)b::timestamptz[], %(rule)b::text[])
    AS n(schedule_id, occurrence, rule)
WHERE schedule.id = n.schedule_id AND schedule.state = 'active' AND schedule.rrule = n.rule
"""
# Each schedule of the batch once: its last outcome, and completed if it ended and
# nothing of it still waits (one new row version, not one per change). Whether a job
# waits is read from the schedule's own jobs (its index), never from the waiting index.
_PG_SCHEDULES = f"""
WITH s AS MATERIALIZED (
    SELECT s.id, s.outcome, s.ended AND NOT coalesce((
        SELECT bool_or(job.{WAITING_SQL}) FROM job
        WHERE job.schedule_id = s.id
    ), false) AS done
    FROM unnest(%(ids)b::int[], %(outcome)b::text[], %(ended)b::bool[]) AS s(id, outcome, ended)
)
UPDATE schedule SET last_outcome = coalesce(s.outcome, schedule.last_outcome),
    failed_streak = CASE WHEN s.outcome = 'delivered' THEN 0 ELSE schedule.failed_streak END,
    state = CASE WHEN s.done AND schedule.state = 'active' THEN 'completed'
        ELSE schedule.state END,
    next_run_at = CASE WHEN s.done AND schedule.state = 'active' THEN NULL
        ELSE schedule.next_run_at END,
    updated_at = CASE WHEN s.done AND schedule.state = 'active' THEN %(now)b
        ELSE schedule.updated_at END
FROM s WHERE schedule.id = s.id AND (s.outcome IS NOT NULL OR s.done)
"""
# The same when a hook hears schedule.ended: which schedules it completed (their state
# before it read in the CTE, so only when someone listens).
_PG_SCHEDULES_ENDED = (
    _PG_SCHEDULES.replace(
        ") AS done\n",
        ") AS done,\n        (SELECT state FROM schedule WHERE id = s.id) AS was\n",
    )
    + "RETURNING schedule.id, s.was = 'active' AND schedule.state = 'completed'\n"
)


class _Recorder:
    """Runs the recording statements on SQLite's connection, on the driver's thread, in
    the transaction it was given (:meth:`Gateway._sqlite_run`). PostgreSQL records a
    batch with its own statements (:meth:`QueueQueries._finish_postgres`)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    @staticmethod
    def sql(statement: str) -> str:
        return statement.format(ids="(SELECT value FROM json_each(%s))").replace("%s", "?")

    @staticmethod
    def ids(ids: Sequence[int]) -> Any:
        return json.dumps(list(ids))

    @staticmethod
    def at(value: datetime | None) -> Any:
        return sqlite_utc_text(value) if value is not None else value

    def rows(self, statement: str, params: tuple[Any, ...]) -> list[Any]:
        return self.conn.execute(self.sql(statement), params).fetchall()

    def run(self, statement: str, params: tuple[Any, ...]) -> None:
        """A statement that returns no rows."""
        self.conn.execute(self.sql(statement), params)

    def many(self, statement: str, rows: list[tuple[Any, ...]]) -> None:
        if rows:
            self.conn.executemany(self.sql(statement), rows)


_COUNTS = sa.select(JOB.c.state, sa.func.count()).group_by(JOB.c.state)
_NEXT_DUE = sa.select(sa.func.min(JOB.c.due_at)).where(JOB.c.state.in_(CLAIMABLE))
#: The same on SQLite, in the words of the partial index of waiting jobs (which SQLite
#: uses only for a query that repeats its condition): the first entry of that index.
_SQLITE_NEXT_DUE = f"SELECT min(due_at) FROM job WHERE {WAITING_SQL}"
#: Waiting jobs by rank, read from the waiting index by rank (its leading column).
_WAITING_BY_RANK = (
    sa.select(JOB.c.priority, sa.func.count())
    .where(JOB.c.state.in_(CLAIMABLE))
    .group_by(JOB.c.priority)
)
_AWAITING = sa.select(sa.func.count()).where(
    JOB.c.state == JobState.DEAD.value,
    sa.exists().where(
        APPROVAL.c.job_id == JOB.c.id,
        APPROVAL.c.shown,
        APPROVAL.c.state == "pending",
        APPROVAL.c.kind == "retry",
    ),
)


@dataclass(slots=True)
class _Plan:
    """What recording a batch (of outcomes still this worker's) changes besides the
    jobs delivered: jobs in other states, recurring schedules' next occurrences, and
    schedules that may have ended (completed unless something still waits)."""

    others: list[Settled]
    with_next: list[Settled]
    ended: list[int]
    #: Jobs falling back to their recipient's next step.
    stepping: list[Settled]
    #: Schedules by what their occurrence did (the latest occurrence wins).
    outcomes: dict[str, list[int]]
    #: Whether a job of the batch died or expired (something to tell even unheard).
    failures: bool = False

    @property
    def failed(self) -> list[int]:
        """The schedules whose latest occurrence in the batch failed."""
        return self.outcomes.get(Outcome.FAILED.value, [])

    def tells(self, policy: OutcomePolicy) -> bool:
        """Whether core.store.outcomes has anything to write for this batch: a
        failure, or a tenant with hooks (what they hear is sorted out there)."""
        return self.failures or bool(policy.listening)

    def ended_heard(
        self, policy: OutcomePolicy, results: Sequence[Settled]
    ) -> dict[int, tuple[str, str]]:
        """The schedules that may have ended whose tenant hears ``schedule.ended``, with
        their tenant and owner (empty, at no cost, when no hook of theirs listens)."""
        if not policy.listening or not self.ended:
            return {}
        ended = set(self.ended)
        return {
            r.job.schedule_id: (r.job.tenant, r.job.owner)
            for r in results
            if r.job.schedule_id in ended
            and policy.wants(r.job.tenant, EventType.SCHEDULE_ENDED.value)
        }

    @staticmethod
    def ended_events(
        done: Sequence[Any], heard: dict[int, tuple[str, str]], now: datetime
    ) -> list[EventRow]:
        """The ``schedule.ended`` events of the schedules completed (``done``: rows
        whose first column is the id) among those heard."""
        return outcomes.ended_events(
            [(int(row[0]), *heard[int(row[0])]) for row in done if int(row[0]) in heard], now
        )

    @classmethod
    def of(cls, mine: Sequence[Settled]) -> _Plan:
        # a ladder's step (a nag, an escalation) is no occurrence: it neither plans the
        # next one nor ends the schedule nor says what its occurrence did
        done = [r for r in mine if r.state in TERMINAL_FOR_SCHEDULE and not r.job.ladder]
        latest: dict[int, Settled] = {}
        for r in mine:
            if r.state in OUTCOME_OF_JOB and not r.job.ladder:
                seen = latest.get(r.job.schedule_id)
                if seen is None or seen.job.occurrence_at <= r.job.occurrence_at:
                    latest[r.job.schedule_id] = r
        outcomes: dict[str, list[int]] = {}
        for schedule_id, r in latest.items():
            outcomes.setdefault(OUTCOME_OF_JOB[r.state], []).append(schedule_id)
        return cls(
            outcomes=outcomes,
            others=[r for r in mine if r.state != JobState.DELIVERED.value],
            stepping=[r for r in mine if r.next_step is not None],
            with_next=[r for r in done if r.job.rrule is not None and r.next_run is not None],
            ended=sorted(
                {r.job.schedule_id for r in done if r.job.rrule is None or r.next_run is None}
            ),
            failures=any(r.state in TOLD_STATES for r in mine),
        )


@dataclass(slots=True)
class _NextJob:
    """A recurring schedule's next job for one recipient: the schedule's next occurrence,
    due at that wall time in the recipient's zone, at the first step of its chain."""

    schedule_id: int
    recipient: int
    occurrence: datetime
    due: datetime
    destination: str | None
    route: str | None
    rule: str | None

    @classmethod
    def of(cls, r: Settled) -> _NextJob:
        job = r.job
        assert r.next_run is not None
        if job.route is None:  # one destination in the schedule's zone
            destination = None if job.recipient == 0 else job.destination
            return cls(
                job.schedule_id, job.recipient, r.next_run, r.next_run, destination, None, job.rrule
            )
        route = routing.parse_route(job.route)
        due = routing.due_for(r.next_run, job.timezone, route.zone)
        return cls(
            job.schedule_id, job.recipient, r.next_run, due, route.first, job.route, job.rrule
        )


def _claim_order(job: ClaimedJob) -> tuple[int, datetime, int]:
    """The order of a claim's jobs: by rank, then due time (the feeder starts them so)."""
    return (job.priority, job.due_at, job.id)


#: A claim row's values in :class:`ClaimedJob`'s field order, picked by label (a
#: field no claim statement selects fails here, at import).
_AS_CLAIMED = operator.itemgetter(*(CLAIM_INDEX[f.name] for f in dataclasses.fields(ClaimedJob)))


def _claimed(row: Sequence[Any], at: Callable[[Any], datetime] | None = None) -> ClaimedJob:
    """The one builder of a claimed job, from a row of either claim statement, by the
    labels of :data:`CLAIM_COLUMNS`: the options column arrives as JSON text, a missing
    tenant or owner name reads as "", and ``at`` reads a timestamp as the driver
    returns it (None: already a datetime). Per row it costs no more than building the
    job by position."""
    job = ClaimedJob(*_AS_CLAIMED(row))
    if at is not None:
        job.occurrence_at = at(job.occurrence_at)
        job.due_at = at(job.due_at)
        if job.step_since is not None:
            job.step_since = at(job.step_since)
        if job.done_at is not None:
            job.done_at = at(job.done_at)
    job.options = _options(job.options)  # type: ignore[arg-type]
    if job.tenant is None:
        job.tenant = ""
    if job.owner_name is None:
        job.owner_name = ""
    if job.owner is None:
        job.owner = ""
    return job


def _options(text: str | None) -> dict[str, Any]:
    """A schedule's options column read as text (JSON), as a fresh dict (its values
    shared with every job of the same options: nothing changes them in place)."""
    if not text or text in ("{}", "null"):
        return {}
    return dict(_decoded(text))


@functools.lru_cache(maxsize=256)
def _decoded(text: str) -> dict[str, Any]:
    """Options decoded once per distinct text: a burst's jobs share their schedules'
    options, and a templated schedule's hold its data (up to 32 KB)."""
    value = json.loads(text)
    return value if isinstance(value, dict) else {}


class QueueQueries(Gateway):
    """The job queue as the dispatcher and the dead-letter desk see it."""

    # --- claim ----------------------------------------------------------------------

    async def claim_due(
        self,
        *,
        now: datetime,
        worker: str,
        lease_until: datetime,
        limit: int,
        caps: ClaimCaps | None = None,
    ) -> list[ClaimedJob]:
        """Atomically lease up to ``limit`` due jobs: the bulk share (:func:`bulk_share`),
        then by rank (urgent, normal, bulk), oldest due first; returned in that order
        of rank and due time. With ``caps``, a
        job whose destination already has its cap of jobs claimed (by any worker) is
        not claimed but due again when it could be sent within the claim horizon (see
        :data:`_CAPPED`); the claim then returns fewer than ``limit`` although more
        may be due."""
        if self.backend == "sqlite":
            return await self._claim_sqlite(now, worker, lease_until, limit, caps)
        params: dict[str, Any] = {
            "now": now,
            "limit": limit,
            "share": bulk_share(limit),
            "worker": worker,
            "until": lease_until,
        }
        statement, setup = _PG_CLAIM, "SET LOCAL enable_sort = off"
        if caps:
            statement, setup = _PG_CAPPED_CLAIM, _PG_CAPPED_SETUP
            params.update(caps.columns)
            params.update(
                quantum_us=caps.quantum_us,
                error=CAPPED_ERROR,
            )
        async with self._tx() as conn:
            await conn.exec_driver_sql(setup)
            rows: list[Any] = list(await conn.exec_driver_sql(statement, params))
        claimed = [_claimed(row) for row in rows]
        claimed.sort(key=_claim_order)
        return claimed

    async def _claim_sqlite(
        self,
        now: datetime,
        worker: str,
        lease_until: datetime,
        limit: int,
        caps: ClaimCaps | None = None,
    ) -> list[ClaimedJob]:
        """The claim on SQLite: one statement that also returns each job's schedule,
        in one round trip to the driver's thread (see :meth:`Gateway._sqlite_run`).

        With caps, the jobs are chosen first (:data:`_SQLITE_PICK`), one statement puts
        off those past their destinations' caps, and the claim takes the others (the
        write lock holds from the first statement to the commit)."""
        text_now = sqlite_utc_text(now)
        params = {
            "worker": worker,
            "until": sqlite_utc_text(lease_until),
            "now": text_now,
            "limit": limit,
            "share": bulk_share(limit),
        }
        put_off = (
            {
                "now": text_now,
                "now_us": (now - _EPOCH) // _MICROSECOND,
                "caps": caps.as_json,
                "quantum_us": caps.quantum_us,
                "error": CAPPED_ERROR,
            }
            if caps
            else None
        )

        def claim(sqlite: sqlite3.Connection) -> list[Any]:
            if put_off is None:
                return sqlite.execute(_SQLITE_CLAIM_PICKED, params).fetchall()
            picked = [row[0] for row in sqlite.execute(_SQLITE_PICK, params)]
            if not picked:
                return []
            ids = json.dumps(picked)
            later = {row[0] for row in sqlite.execute(_SQLITE_PUT_OFF, {**put_off, "ids": ids})}
            if later:
                ids = json.dumps([i for i in picked if i not in later])
            return sqlite.execute(_SQLITE_CLAIM_LISTED, {**params, "ids": ids}).fetchall()

        rows = await self._sqlite_run(claim)
        claimed = [_claimed(row, sqlite_datetime) for row in rows]
        claimed.sort(key=_claim_order)
        return claimed

    async def next_due_at(self) -> datetime | None:
        """When the earliest waiting job falls due (None when nothing waits). On SQLite
        one round trip to the driver's thread (the service asks after every claim)."""
        if self.backend == "sqlite":
            found = await self._sqlite_read(
                lambda sqlite: sqlite.execute(_SQLITE_NEXT_DUE).fetchone()[0]
            )
            return sqlite_datetime(found) if found is not None else None
        async with self._read() as conn:
            value = (await conn.execute(_NEXT_DUE)).scalar()
        return value if isinstance(value, datetime) else None

    # --- finish ---------------------------------------------------------------------

    async def finish(
        self,
        results: Sequence[Settled],
        *,
        worker: str,
        now: datetime,
        policy: OutcomePolicy | None = None,
    ) -> set[int]:
        """Record a batch of outcomes in one transaction: attempts, job states, the next
        occurrence of recurring schedules, and completed one-offs. Outcomes for jobs
        whose lease this worker lost are recorded as attempts only. Returns the ids of
        the jobs that were still this worker's.

        The statements are plain SQL run on the driver: per row, SQLAlchemy's parameter
        processing cost more than the database's work. On SQLite (:class:`_Recorder`)
        the whole transaction is one round trip to the driver's thread
        (:meth:`Gateway._sqlite_run`); PostgreSQL takes the batch as arrays
        (:meth:`_finish_postgres`).

        In the same transaction, what ``policy`` says is told of the batch
        (core.store.outcomes): events, notices, failure streaks, auto-pauses; and each
        attempt's lateness (``delayed`` past ``policy.late_after``)."""
        if not results:
            return set()
        policy = policy or DEFAULT_POLICY
        late_after_ms = policy.late_after * 1000
        if self.backend == "postgresql":
            return await self._finish_postgres(results, worker, now, policy)
        done = JobState.DELIVERED.value
        delivered = [r.job.id for r in results if r.state == done]
        others = [r.job.id for r in results if r.state != done]

        def record(sqlite: sqlite3.Connection) -> set[int]:
            db = _Recorder(sqlite)
            at = db.at(now)
            owned: set[int] = set()
            if delivered:
                rows = db.rows(_DELIVERED, (at, at, db.ids(delivered), worker))
                owned.update(row[0] for row in rows)
            if others:
                owned.update(row[0] for row in db.rows(_OWNED, (db.ids(others), worker)))
            db.many(
                _ATTEMPT_INSERT,
                [
                    (
                        r.job.id,
                        db.at(a.started_at),
                        db.at(a.finished_at),
                        a.outcome,
                        a.status_code,
                        a.error,
                        a.message_id,
                        worker,
                        a.body,
                        a.destination,
                        a.provider,
                        (late := late_ms(a.started_at, r.job.due_at)),
                        late > late_after_ms,
                    )
                    for r in results
                    if (a := r.attempt) is not None
                ],
            )
            plan = _Plan.of([r for r in results if r.job.id in owned])
            terminal = {JobState.DEAD.value, JobState.EXPIRED.value, JobState.SKIPPED.value}
            db.many(
                _OTHER_STATE,
                [
                    (
                        r.state,
                        db.at(r.retry_at),
                        1 if r.refund_attempt else 0,
                        r.error,
                        at if r.state in terminal else None,
                        at,
                        r.job.id,
                    )
                    for r in plan.others
                ],
            )
            nexts = [_NextJob.of(r) for r in plan.with_next]
            db.many(
                _NEXT_JOB,
                [
                    (
                        n.schedule_id,
                        n.recipient,
                        db.at(n.occurrence),
                        db.at(n.due),
                        n.destination,
                        n.route,
                        new_idempotency_key(),
                        at,
                        at,
                        n.schedule_id,
                        n.rule,
                        n.recipient,
                    )
                    for n in nexts
                ],
            )
            db.many(_NEXT_RUN, [(db.at(n.occurrence), at, n.schedule_id, n.rule) for n in nexts])
            db.many(_NEXT_STEP, [(r.next_step, r.job.id) for r in plan.stepping])
            for outcome, schedule_ids in plan.outcomes.items():
                said = _OUTCOME_DELIVERED if outcome == Outcome.DELIVERED.value else _OUTCOME
                db.run(said, (outcome, db.ids(schedule_ids)))
            if plan.ended:
                heard = plan.ended_heard(policy, results)
                if heard:
                    done = db.rows(_COMPLETED + "RETURNING id", (at, db.ids(plan.ended)))
                    outcomes.write_events(db, plan.ended_events(done, heard, now))
                else:
                    db.run(_COMPLETED, (at, db.ids(plan.ended)))
            if plan.tells(policy):
                outcomes.record(db, results, owned, plan.failed, now, policy)
            sent = ladders.sent_until_done(results, owned)
            if sent:
                ladders.write_sqlite(db, sent, now)
            retried = ladders.retried_steps(results, owned)
            if retried:
                ladders.stop_after_done_sqlite(db, retried, now)
            return owned

        return await self._sqlite_run(record)

    async def _finish_postgres(
        self, results: Sequence[Settled], worker: str, now: datetime, policy: OutcomePolicy
    ) -> set[int]:
        """:meth:`finish` on PostgreSQL: the batch as arrays, in two statements (attempts
        and jobs; then what the jobs still this worker's change in their schedules), three
        with recurring schedules' next occurrences."""
        terminal = (JobState.DEAD.value, JobState.EXPIRED.value, JobState.SKIPPED.value)
        done = JobState.DELIVERED.value
        tried = [(r.job.id, a) for r in results if (a := r.attempt) is not None]
        late = [
            late_ms(a.started_at, r.job.due_at) for r in results if (a := r.attempt) is not None
        ]
        late_after_ms = policy.late_after * 1000
        record = {
            "worker": worker,
            "now": now,
            "a_job": [job_id for job_id, _ in tried],
            "a_started": [a.started_at for _, a in tried],
            "a_finished": [a.finished_at for _, a in tried],
            "a_outcome": [a.outcome for _, a in tried],
            "a_status": [a.status_code for _, a in tried],
            "a_error": [a.error for _, a in tried],
            "a_message": [a.message_id for _, a in tried],
            "a_body": [a.body for _, a in tried],
            "a_dest": [a.destination for _, a in tried],
            "a_provider": [a.provider for _, a in tried],
            "a_late": late,
            "a_delayed": [ms > late_after_ms for ms in late],
            "ids": [r.job.id for r in results],
            "states": [r.state for r in results],
            "retry_at": [None if r.state == done else r.retry_at for r in results],
            "refund": [1 if r.refund_attempt and r.state != done else 0 for r in results],
            "errors": [None if r.state == done else r.error for r in results],
            "finished": [now if r.state == done or r.state in terminal else None for r in results],
        }
        async with self._tx() as conn:
            owned = {row[0] for row in await conn.exec_driver_sql(_PG_RECORD, record)}
            plan = _Plan.of([r for r in results if r.job.id in owned])
            if plan.with_next:
                planned = [_NextJob.of(r) for r in plan.with_next]
                nexts = {
                    "now": now,
                    "ids": [n.schedule_id for n in planned],
                    "occurrence": [n.occurrence for n in planned],
                    "rule": [n.rule for n in planned],
                }
                # the schedules' rows first, then their next jobs: an edit locks a schedule
                # and then arms its recipients' jobs, so the other order deadlocked with it
                # (each waiting for the other's row or uncommitted job)
                await conn.exec_driver_sql(_PG_NEXT_RUNS, nexts)
                await conn.exec_driver_sql(
                    _PG_NEXT_JOBS,
                    {
                        **nexts,
                        "recipient": [n.recipient for n in planned],
                        "due": [n.due for n in planned],
                        "destination": [n.destination for n in planned],
                        "route": [n.route for n in planned],
                        "key": [new_idempotency_key() for _ in planned],
                    },
                )
            if plan.stepping:
                await conn.exec_driver_sql(
                    _PG_NEXT_STEPS,
                    {
                        "ids": [r.job.id for r in plan.stepping],
                        "destination": [r.next_step for r in plan.stepping],
                    },
                )
            outcome_of = {sid: o for o, sids in plan.outcomes.items() for sid in sids}
            ended = set(plan.ended)
            schedule_ids = sorted(outcome_of.keys() | ended)
            if schedule_ids:
                heard = plan.ended_heard(policy, results)
                changed: Any = await conn.exec_driver_sql(
                    _PG_SCHEDULES_ENDED if heard else _PG_SCHEDULES,
                    {
                        "now": now,
                        "ids": schedule_ids,
                        "outcome": [outcome_of.get(sid) for sid in schedule_ids],
                        "ended": [sid in ended for sid in schedule_ids],
                    },
                )
                if heard:
                    completed = [row for row in changed if row[1]]
                    await outcomes.write_events_pg(conn, plan.ended_events(completed, heard, now))
            if plan.tells(policy):
                await outcomes.record_pg(conn, results, owned, plan.failed, now, policy)
            sent = ladders.sent_until_done(results, owned)
            if sent:
                await ladders.write_pg(conn, sent, now)
            retried = ladders.retried_steps(results, owned)
            if retried:
                await ladders.stop_after_done_pg(conn, retried, now)
        return owned

    async def release(self, job_ids: Sequence[int], *, worker: str, now: datetime) -> int:
        """Hand back claimed jobs that were never tried (shutdown), refunding the attempt."""
        if not job_ids:
            return 0
        async with self._tx() as conn:
            result = await conn.execute(
                sa.update(JOB)
                .where(held_by(worker, job_ids))
                .values(
                    state=sa.case(
                        (JOB.c.attempts > 1, JobState.RETRYING.value),
                        else_=JobState.PENDING.value,
                    ),
                    attempts=JOB.c.attempts - 1,
                    lease_owner=None,
                    lease_expires_at=None,
                    updated_at=now,
                )
            )
            return int(result.rowcount)

    # --- housekeeping ---------------------------------------------------------------

    async def prune_finished(self, *, before: datetime, batch: int = 5000) -> dict[str, int]:
        """Delete attempts and finished jobs older than ``before``, ``batch`` rows per
        transaction so no lock is held long. Dead letters are not touched here."""
        finished = [
            JobState.DELIVERED.value,
            JobState.EXPIRED.value,
            JobState.CANCELLED.value,
            JobState.DISCARDED.value,
        ]
        counts = {"attempts": 0, "jobs": 0}
        old_attempts = sa.select(ATTEMPT.c.id).where(ATTEMPT.c.started_at < before).limit(batch)
        old_jobs = (
            sa.select(JOB.c.id)
            .where(JOB.c.state.in_(finished), JOB.c.finished_at < before)
            .limit(batch)
        )
        for key, table, subquery in (
            ("attempts", ATTEMPT, old_attempts),
            ("jobs", JOB, old_jobs),
        ):
            while True:
                async with self._tx() as conn:
                    result = await conn.execute(
                        sa.delete(table).where(table.c.id.in_(subquery.scalar_subquery()))
                    )
                deleted = int(result.rowcount)
                counts[key] += deleted
                if deleted < batch:
                    break
        return counts

    # --- counts ---------------------------------------------------------------------

    async def queue_stats(self, *, now: datetime) -> QueueStats:
        """Jobs by state, dead letters awaiting a decision, the oldest overdue job (one
        read, every sweep)."""
        async with self._read() as conn:
            counts = {state: int(n) for state, n in await conn.execute(_COUNTS)}
            awaiting = (await conn.execute(_AWAITING)).scalar() or 0
            oldest = (await conn.execute(_NEXT_DUE)).scalar()
            waiting = {int(p): int(n) for p, n in await conn.execute(_WAITING_BY_RANK)}
        overdue = max(0.0, (now - oldest).total_seconds()) if oldest is not None else 0.0
        return QueueStats(counts, int(awaiting), overdue, waiting)

    async def job_counts(self, *, tenant: str | None = None) -> dict[str, int]:
        """How many jobs are in each state (of one tenant's schedules, when given)."""
        q = _COUNTS
        if tenant is not None:
            mine = sa.select(SCHEDULE.c.id).where(SCHEDULE.c.tenant == tenant)
            q = q.where(JOB.c.schedule_id.in_(mine))
        async with self._read() as conn:
            return {state: int(count) for state, count in await conn.execute(q)}
