"""What a provider's answer means for a job: pure functions of the job, the answer and
the configuration (core/dispatcher/verdicts.py), so each case is one call."""

import random
from datetime import UTC, datetime, timedelta

from core.channels.base import DeliveryResult
from core.dispatcher import DispatcherConfig
from core.dispatcher.verdicts import asked_pause, before_sending, judge, lapsed, wait_for_limit
from core.store import ClaimedJob, HandBack, Verdict

NOW = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
CONFIG = DispatcherConfig(max_attempts=3, max_lateness=60)


def _job(attempts: int = 1, due: datetime = NOW, rrule: str | None = None) -> ClaimedJob:
    return ClaimedJob(
        id=1,
        schedule_id=2,
        occurrence_at=due,
        due_at=due,
        attempts=attempts,
        idempotency_key="k",
        destination="log:",
        body="hi",
        rrule=rrule,
        max_lateness_s=None,
        options={},
    )


def _judge(result: DeliveryResult, attempts: int = 1) -> Verdict:
    return judge(_job(attempts), result, NOW, NOW, CONFIG, random.Random(1), "hi")


def test_a_delivery_is_delivered_with_its_attempt_and_next_run() -> None:
    daily = _job(rrule="DTSTART:20260105T090000Z\nRRULE:FREQ=DAILY")
    verdict = judge(daily, DeliveryResult.ok(200), NOW, NOW, CONFIG, random.Random(1))
    assert verdict.state == "delivered" and verdict.attempt is not None
    assert verdict.next_run == NOW + timedelta(days=1)


def test_a_refusal_is_dead_and_a_failure_retries_until_the_last_try() -> None:
    assert _judge(DeliveryResult.permanent("404", 404)).state == "dead"
    retry = _judge(DeliveryResult.retry("503", 503))
    assert retry.state == "retrying" and retry.retry_at is not None and not retry.refund_attempt
    assert _judge(DeliveryResult.retry("503", 503), attempts=3).state == "dead"


def test_a_429_with_retry_after_retries_then_and_is_not_counted() -> None:
    answer = DeliveryResult.retry("slow down", 429, retry_after=30)
    verdict = _judge(answer, attempts=3)
    assert verdict.state == "retrying" and verdict.refund_attempt
    assert verdict.retry_at == NOW + timedelta(seconds=30)
    assert asked_pause(answer, NOW) == NOW + timedelta(seconds=30)
    assert asked_pause(DeliveryResult.ok(), NOW) is None


def test_a_job_too_late_expires_and_one_out_of_tries_is_dead_untried() -> None:
    late = before_sending(_job(due=NOW - timedelta(minutes=5)), NOW, CONFIG)
    assert late is not None and late.state == "expired" and late.attempt is None
    spent = before_sending(_job(attempts=4), NOW, CONFIG)
    assert spent is not None and spent.state == "dead"
    assert before_sending(_job(), NOW, CONFIG) is None


def test_a_hand_back_is_untried_refunded_and_due_again() -> None:
    waiting = wait_for_limit(_job(), NOW + timedelta(seconds=5), NOW, "webhook")
    assert isinstance(waiting, HandBack) and waiting.state == "pending"
    assert waiting.retry_at == NOW + timedelta(seconds=5) and "webhook" in waiting.error
    assert waiting.refund_attempt and waiting.attempt is None and waiting.next_run is None
    assert lapsed(_job(attempts=2)).state == "retrying"
