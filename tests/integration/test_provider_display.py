"""What the providers did, shown everywhere deliveries are (issue 36: "`herald show`,
the console timeline and the API show 'accepted by Twilio 09:00:01 · delivered
09:00:04'"; "the console shows provider health"): the store's reads of an attempt's
provider and receipt, `herald show`, the API's jobs answer, the timeline and the
providers' health, on SQLite and PostgreSQL. Attempts are recorded as the dispatcher
records them (Store.finish) and receipts taken as /receipts takes them
(Store.take_receipt)."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta

from aiohttp.test_utils import TestClient, TestServer

from bot.api import add_api
from bot.api.openapi import openapi_document
from bot.cli.commands import Cli
from bot.cli.main import COMMANDS, handler
from bot.cli.parser import build_parser
from bot.http_guard import HttpLimits, guarded_app
from core.actors import Principal, Surface
from core.cases import Herald
from core.clock import ManualClock
from core.receipts import ReceiptReport
from core.settings import Settings, load_settings
from core.store import AttemptFilter, AttemptRecord, Verdict

ADMIN = "local:root-admin"  # HERALD_ADMINS in the settings fixture
MEMBER = "local:bob"


async def send(
    herald: Herald, clock: ManualClock, to: str, provider: str | None, message_id: str | None
) -> tuple[int, int]:
    """A one-off to ``to``, due now, tried once and accepted through ``provider``:
    (schedule id, job id)."""
    s, _ = await herald.create_schedule(
        MEMBER, to=to, when="in 1 minute", text="Deploy at noon", tz="Europe/Berlin"
    )
    clock.advance(61)
    now = clock.now()
    [job] = await herald.store.claim_due(
        now=now, worker="w1", lease_until=now + timedelta(seconds=60), limit=10
    )
    tried = AttemptRecord(
        started_at=now,
        finished_at=now + timedelta(seconds=1),
        outcome="ok",
        status_code=202,
        message_id=message_id,
        body="Deploy at noon",
        provider=provider,
    )
    await herald.store.finish([Verdict(job, "delivered", attempt=tried)], worker="w1", now=now)
    assert s.id is not None
    return s.id, job.id


async def cli(herald: Herald, settings: Settings, *argv: str) -> str:
    """What ``herald <argv>`` prints, as the member, through the CLI's own command."""
    args = build_parser().parse_args(list(argv))
    out = io.StringIO()
    command = Cli(args, settings, out)
    command.actor = Principal(MEMBER, surface=Surface.CLI)
    await handler(COMMANDS[args.command]).action.with_herald(command, herald)  # type: ignore[attr-defined]
    return out.getvalue()


async def test_an_attempt_says_its_provider_and_receipt_everywhere(
    herald: Herald, settings: Settings, clock: ManualClock
) -> None:
    texted, _ = await send(herald, clock, "sms:+12025550123", "twilio", "SM0123")
    mailed, bounced_job = await send(herald, clock, "email:ops@example.com", "sendgrid", "sg-77")
    relayed, _ = await send(herald, clock, "email:dev@example.com", "smtp", "<m1@herald>")
    logged, _ = await send(herald, clock, "log:", None, None)
    now, store = clock.now(), herald.store
    # Twilio took it at 12:01:02 UTC and says delivered at 12:01:04; SendGrid took its
    # at 12:02:03 and reports a bounce at 12:05:03; SMTP never reports
    delivered = ReceiptReport("twilio", "SM0123", "delivered", _utc(12, 1, 4))
    assert (await store.take_receipt(delivered, now=now)).outcome == "applied"
    why = "550 5.1.1 mailbox unavailable"
    bounced = ReceiptReport("sendgrid", "sg-77", "bounced", _utc(12, 5, 3), why)
    assert (await store.take_receipt(bounced, now=now)).job_state == "dead"

    # the store's delivery log reads them
    rows = {r.schedule_id: r for r in await store.attempts_page(AttemptFilter(), limit=10)}
    assert (rows[texted].provider, rows[texted].receipt) == ("twilio", "delivered")
    assert rows[texted].receipt_at == delivered.at
    assert (rows[mailed].receipt, rows[mailed].receipt_detail) == (
        "bounced",
        "550 5.1.1 mailbox unavailable",
    )
    assert (rows[relayed].provider, rows[relayed].receipt) == ("smtp", None)
    assert (rows[logged].provider, rows[logged].receipt) == (None, None)

    # herald show: in the schedule's zone (Europe/Berlin, UTC+1 in March)
    shown = await cli(herald, settings, "show", str(texted))
    assert "attempts (providers' times in Europe/Berlin):" in shown
    [line] = [x for x in shown.splitlines() if "accepted by" in x]
    assert line.endswith(
        'ok 202  accepted by Twilio 13:01:02 · delivered 13:01:04  sent "Deploy at noon"'
    )
    shown = await cli(herald, settings, "show", str(mailed))
    assert (
        "accepted by SendGrid 13:02:03 · bounced 13:05:03: 550 5.1.1 mailbox unavailable" in shown
    )
    # the bounce made a dead letter: herald dead show says the provider's words
    dead = await cli(herald, settings, "dead", "show", str(bounced_job))
    assert "SendGrid reported it bounced: 550 5.1.1 mailbox unavailable." in dead
    assert (
        "try at 2026-03-02T12:02:02Z: ok 202 · accepted by SendGrid 13:02:03 · bounced "
        "13:05:03: 550 5.1.1 mailbox unavailable" in dead
    )
    assert "accepted by SMTP 13:03:04  sent" in await cli(herald, settings, "show", str(relayed))
    plain = await cli(herald, settings, "show", str(logged))
    assert "  attempts:" in plain and "accepted" not in plain  # a channel without providers

    # the console's timeline says the same words
    timeline = await herald.timeline(MEMBER, schedule_id=texted)
    [event] = [e for e in timeline.events if e.kind == "attempt"]
    assert (
        "ok 202 · accepted by Twilio 13:01:02 · delivered 13:01:04 (message SM0123)" in event.text
    )
    [event] = [
        e for e in (await herald.timeline(MEMBER, schedule_id=logged)).events if e.kind == "attempt"
    ]
    assert "accepted" not in event.text


async def test_the_apis_attempts_carry_the_fields_and_the_sentence(
    herald: Herald, clock: ManualClock
) -> None:
    texted, _ = await send(herald, clock, "sms:+12025550123", "twilio", "SM0456")
    logged, _ = await send(herald, clock, "log:", None, None)
    minted = await herald.create_token(ADMIN, MEMBER, tenant="local", scope="read", expires="90d")
    auth = {"Authorization": f"Bearer {minted.secret}"}
    app = guarded_app()
    add_api(app, herald, HttpLimits.from_settings(herald.settings))
    async with TestClient(TestServer(app)) as client:
        got = await client.get(f"/v1/schedules/{texted}/jobs", headers=auth)
        assert got.status == 200, await got.text()
        [attempt] = (await got.json())["attempts"]
        plain = await client.get(f"/v1/schedules/{logged}/jobs", headers=auth)
        [other] = (await plain.json())["attempts"]
    assert attempt["provider"] == "twilio"
    assert attempt["provider_message_id"] == "SM0456"
    assert (attempt["receipt"], attempt["receipt_at"], attempt["receipt_detail"]) == (
        None,
        None,
        None,
    )
    assert attempt["handoff"] == "accepted by Twilio 13:01:02 · no receipt yet"
    assert (other["provider"], other["handoff"]) == (None, None)
    fields = openapi_document()["components"]["schemas"]["AttemptOut"]["properties"]
    assert {"provider", "receipt", "receipt_at", "receipt_detail", "handoff"} <= set(fields)
    assert set(attempt) <= set(fields)


async def test_providers_health_each_listed_one_and_each_found_down(
    db_url: str, herald: Herald, clock: ManualClock
) -> None:
    settings = load_settings(
        HERALD_DATABASE_URL=db_url,
        HERALD_ADMINS=ADMIN,
        HERALD_DEFAULT_TZ="UTC",
        HERALD_EMAIL_PROVIDERS="sendgrid,smtp",
        HERALD_SMS_PROVIDERS="twilio",
        SENDGRID_API_KEY="SG.not-a-real-key",
        HERALD_SMTP_HOST="127.0.0.1",
        _env_file=None,
    )
    cases = Herald(herald.store, settings, clock)
    now = clock.now()
    await herald.store.mark_provider_down(
        "sendgrid",
        now + timedelta(minutes=5),
        "SendGrid answered HTTP 503 Service Unavailable: upstream connect error or "
        "disconnect/reset before headers (Bearer sk_live_abcdefghijklmnopqrstuvwxyz).",
    )
    await herald.store.mark_provider_down("fcm", now - timedelta(minutes=1), "timed out")
    states = await cases.provider_health(MEMBER)
    seen = [(p.label, p.serves, p.health("UTC")) for p in states]
    assert seen[0][:2] == ("SendGrid", "email 1st")
    assert seen[0][2].startswith("down until 12:05 (SendGrid answered HTTP 503")
    assert "abcdefghijklmnopqrstuvwxyz" not in seen[0][2]  # scrubbed
    assert seen[0][2].endswith("…)") and len(states[0].reason) <= 80
    assert seen[1:3] == [
        ("SMTP", "email 2nd", "up"),
        ("Twilio", "sms", "not configured"),  # no TWILIO_* set
    ]
    # a provider no list names, found down once and up again (its cool-down over)
    assert seen[3][:2] == ("Firebase Cloud Messaging", "push")
    assert seen[3][2].startswith("up since ")
    assert states[0].down and not states[1].down and not states[3].down
    clock.advance(120)  # SendGrid answers a probe again at 12:02
    await herald.store.mark_provider_up("sendgrid", now=clock.now())
    [sendgrid, *_] = await cases.provider_health(MEMBER)
    assert sendgrid.health("UTC") == "up since 12:02" and not sendgrid.down
    overview = await cases.overview(MEMBER)
    assert [p.name for p in overview.providers] == ["sendgrid", "smtp", "twilio", "fcm"]


def _utc(hour: int, minute: int, second: int) -> datetime:
    return datetime(2026, 3, 2, hour, minute, second, tzinfo=UTC)
