"""What an attempt's provider did with it, in words (core.views.handoff): the one
sentence `herald show`, the API, the console's timeline and its delivery log say."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from core import views
from core.models import Attempt

AT = datetime(2026, 3, 2, 8, 0, 0, tzinfo=UTC)


def attempt(
    provider: str | None,
    *,
    outcome: str = "ok",
    receipt: str | None = None,
    after: float | None = None,
    detail: str | None = None,
) -> Attempt:
    return Attempt(
        job_id=7,
        started_at=AT,
        finished_at=AT + timedelta(seconds=1),
        outcome=outcome,
        worker="w1",
        provider=provider,
        provider_message_id="m-1" if provider else None,
        receipt=receipt,
        receipt_at=None if after is None else AT + timedelta(seconds=after),
        receipt_detail=detail,
    )


@pytest.mark.parametrize(
    ("provider", "receipt", "after", "detail", "words"),
    [
        ("twilio", "delivered", 4, None, "accepted by Twilio 08:00:01 · delivered 08:00:04"),
        (
            "twilio",
            "undelivered",
            30,
            "30003 Unreachable destination handset",
            "accepted by Twilio 08:00:01 · undelivered 08:00:30: "
            "30003 Unreachable destination handset",
        ),
        ("vonage", "delivered", 2, None, "accepted by Vonage 08:00:01 · delivered 08:00:02"),
        ("sendgrid", "delivered", 9, None, "accepted by SendGrid 08:00:01 · delivered 08:00:09"),
        (
            "sendgrid",
            "bounced",
            130,
            "550 5.1.1 mailbox unavailable",
            "accepted by SendGrid 08:00:01 · bounced 08:02:10: 550 5.1.1 mailbox unavailable",
        ),
        (
            "mailgun",
            "bounced",
            60,
            "550 No such user",
            "accepted by Mailgun 08:00:01 · bounced 08:01:00: 550 No such user",
        ),
        # receipts awaited only from providers that send them; never "delivered" before
        ("twilio", None, None, None, "accepted by Twilio 08:00:01 · no receipt yet"),
        ("vonage", None, None, None, "accepted by Vonage 08:00:01"),  # sends no receipts
        ("sendgrid", None, None, None, "accepted by SendGrid 08:00:01 · no receipt yet"),
        ("mailgun", None, None, None, "accepted by Mailgun 08:00:01 · no receipt yet"),
        ("smtp", None, None, None, "accepted by SMTP 08:00:01"),
        ("fcm", None, None, None, "accepted by Firebase Cloud Messaging 08:00:01"),
        ("ntfy", None, None, None, "accepted by ntfy 08:00:01"),
        # a receipt the next day says its date
        (
            "sendgrid",
            "bounced",
            86_400,
            "550 gone",
            "accepted by SendGrid 08:00:01 · bounced 03-03 08:00:00: 550 gone",
        ),
        # a receipt without a time (never written so, but read safely)
        ("twilio", "delivered", None, None, "accepted by Twilio 08:00:01 · delivered"),
    ],
)
def test_each_provider_and_receipt(
    provider: str, receipt: str | None, after: float | None, detail: str | None, words: str
) -> None:
    assert views.handoff(attempt(provider, receipt=receipt, after=after, detail=detail), "UTC") == (
        words
    )


def test_times_are_in_the_zone_asked_for() -> None:
    got = views.handoff(attempt("twilio", receipt="delivered", after=4), "Europe/Berlin")
    assert got == "accepted by Twilio 09:00:01 · delivered 09:00:04"
    # a receipt 8 hours later: the same day in Los Angeles (00:00 → 08:00), the next
    # one in Tokyo (17:00 → 01:00), which then says its date
    late = attempt("sendgrid", receipt="delivered", after=8 * 3600)
    assert views.handoff(late, "America/Los_Angeles") == (
        "accepted by SendGrid 00:00:01 · delivered 08:00:00"
    )
    assert views.handoff(late, "Asia/Tokyo") == (
        "accepted by SendGrid 17:00:01 · delivered 03-03 01:00:00"
    )


def test_a_try_the_provider_did_not_take() -> None:
    refused = attempt("mailgun", outcome="permanent")
    assert views.handoff(refused, "UTC") == "refused by Mailgun 08:00:01"
    down = attempt("sendgrid", outcome="retry")
    assert views.handoff(down, "UTC") == "not accepted by SendGrid 08:00:01"


@pytest.mark.parametrize("outcome", ["ok", "retry", "permanent"])
def test_channels_without_providers_keep_their_words(outcome: str) -> None:
    assert views.handoff(attempt(None, outcome=outcome), "UTC") is None


def test_a_failure_detail_is_one_bounded_scrubbed_line() -> None:
    long = "550 5.1.1 the mailbox\n\tis   unavailable " + "x" * 5_000
    words = views.handoff(attempt("sendgrid", receipt="bounced", after=5, detail=long), "UTC")
    assert words is not None and "\n" not in words and "\t" not in words
    detail = words.split(": ", 1)[1]
    assert detail.startswith("550 5.1.1 the mailbox is unavailable x")
    assert len(detail) == views.RECEIPT_DETAIL_CHARS and detail.endswith("…")
    secret = "Bearer abcdefghijklmnopqrstuvwxyz0123456789"
    words = views.handoff(attempt("twilio", receipt="undelivered", after=5, detail=secret), "UTC")
    assert words is not None and "abcdefghijklmnopqrstuvwxyz" not in words


def test_the_attempts_json_carries_the_fields_and_the_sentence() -> None:
    got = views.attempt_dict(attempt("twilio", receipt="delivered", after=4), "Europe/Berlin")
    assert got["provider"] == "twilio"
    assert got["receipt"] == "delivered"
    assert got["receipt_at"] == "2026-03-02T08:00:04Z"
    assert got["receipt_detail"] is None
    assert got["handoff"] == "accepted by Twilio 09:00:01 · delivered 09:00:04"
    plain = views.attempt_dict(attempt(None))
    assert (plain["provider"], plain["receipt"], plain["handoff"]) == (None, None, None)
