"""The console shows the providers' health (issue 36) where it shows the system's, on
the overview beside the dispatchers, and what each attempt's provider did with it: the
delivery log's pane and a message's timeline say "accepted by Twilio 12:01:02 ·
delivered 12:01:04". Driven through Textual's pilot at 80x24, asserting what a person
sees."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from core.cases import Herald
from core.clock import ManualClock
from core.receipts import ReceiptReport
from core.settings import Settings, load_settings
from core.store import AttemptRecord, Store, Verdict
from tests.tui.conftest import ADMIN, MEMBER, OPERATOR, flat, run, screen_text, settle, table
from tui.app import HeraldConsole, make_app


@pytest.fixture
def provided(sqlite_url: str) -> Settings:
    """Email through SendGrid then SMTP, SMS through Twilio (not configured)."""
    return load_settings(
        HERALD_DATABASE_URL=sqlite_url,
        HERALD_ADMINS=ADMIN,
        HERALD_DEFAULT_TZ="UTC",
        HERALD_EMAIL_PROVIDERS="sendgrid,smtp",
        HERALD_SMS_PROVIDERS="twilio",
        SENDGRID_API_KEY="SG.not-a-real-key",
        HERALD_SMTP_HOST="127.0.0.1",
        _env_file=None,
    )


@pytest.fixture
def console_of(
    provided: Settings, store: Store, clock: ManualClock
) -> Callable[..., HeraldConsole]:
    herald = Herald(store, provided, clock)

    def build(actor_id: str, mode: str) -> HeraldConsole:
        return make_app(provided, herald, actor_id, refresh_interval=3600, mode=mode)

    return build


async def test_the_overview_shows_each_providers_health(
    console_of: Callable[..., HeraldConsole], store: Store, clock: ManualClock
) -> None:
    now = clock.now()
    await store.mark_provider_down("sendgrid", now + timedelta(minutes=5), "503 from SendGrid")
    app = console_of(MEMBER, "overview")
    async with run(app) as pilot:
        await settle(pilot)
        shown = screen_text(app)
        rows = providers_rows(app)
    assert "Providers" in shown and "Dispatchers" in shown
    lines = shown.splitlines()
    [sendgrid] = [line for line in lines if "SendGrid" in line and "down" in line]
    assert "SendGrid  down until 12:05 (503 from SendGrid)" in flat_cells(sendgrid)
    [smtp] = [line for line in lines if "SMTP" in line]
    assert "SMTP  up" in flat_cells(smtp)
    [twilio] = [line for line in lines if "Twilio" in line]
    assert "Twilio  not configured" in flat_cells(twilio)
    # the columns the 80-column screen cuts are in the table's rows
    assert [rows[p][2] for p in ("sendgrid", "smtp", "twilio")] == ["email 1st", "email 2nd", "sms"]
    # when its health last changed (the store stamps a mark with the wall clock, not
    # the test's: only that one is said), and nothing for one never marked
    assert rows["sendgrid"][3] != "-" and rows["smtp"][3] == "-"


async def test_the_providers_answering_again_say_since_when(
    console_of: Callable[..., HeraldConsole], store: Store, clock: ManualClock
) -> None:
    await store.mark_provider_down("smtp", clock.now() - timedelta(minutes=1), "timed out")
    app = console_of(OPERATOR, "overview")
    async with run(app, size=(120, 40)) as pilot:
        await settle(pilot)
        rows = providers_rows(app)
    assert rows["smtp"][1].startswith("up since ")
    assert rows["smtp"][3] != "-"


async def test_the_delivery_log_and_the_timeline_say_the_receipt(
    console_of: Callable[..., HeraldConsole], store: Store, clock: ManualClock
) -> None:
    herald = console_of(MEMBER, "deliveries").herald
    s, _ = await herald.create_schedule(
        MEMBER, to="sms:+12025550123", when="in 1 minute", text="Deploy at noon", tz="UTC"
    )
    clock.advance(61)
    now = clock.now()
    [job] = await store.claim_due(
        now=now, worker="w1", lease_until=now + timedelta(seconds=60), limit=10
    )
    tried = AttemptRecord(
        started_at=now,
        finished_at=now + timedelta(seconds=1),
        outcome="ok",
        status_code=201,
        message_id="SM0123",
        body="Deploy at noon",
        provider="twilio",
    )
    await store.finish([Verdict(job, "delivered", attempt=tried)], worker="w1", now=now)
    at = datetime(2026, 3, 2, 12, 1, 4, tzinfo=UTC)
    await store.take_receipt(ReceiptReport("twilio", "SM0123", "delivered", at), now=now)
    words = "accepted by Twilio 12:01:02 · delivered 12:01:04"

    app = console_of(MEMBER, "deliveries")
    async with run(app) as pilot:
        await settle(pilot)
        assert words in flat(screen_text(app))  # the highlighted attempt's pane
        await pilot.press("enter")  # its timeline
        await settle(pilot)
        timeline = table(app, "#timeline")
        kinds = [str(timeline.get_row_at(i)[1]) for i in range(timeline.row_count)]
        assert kinds[-2:] == ["delivered", "receipt"]  # the provider's word, later
        said = {}
        for kind in ("attempt", "receipt"):
            timeline.move_cursor(row=kinds.index(kind))
            await settle(pilot)
            said[kind] = flat(screen_text(app))
    # the highlighted event in full under the timeline: the attempt with its provider's
    # id of the message, then the receipt as its own moment, in the same words
    assert f"ok 201 · {words} (message SM0123)" in said["attempt"], said["attempt"]
    assert said["receipt"].count(words) >= 1 and "12:01:04 receipt" in said["receipt"]
    assert s.id is not None


def providers_rows(app: Any) -> dict[str, list[str]]:
    """The providers table's rows by provider name: provider, health, sends, changed."""
    providers = app.screen.query_one("#providers")
    return {str(key.value): [str(c) for c in providers.get_row(key)] for key in providers.rows}


def flat_cells(line: str) -> str:
    """A table line with its cells' padding made two spaces."""
    return "  ".join(part.strip() for part in line.strip("│ ").split("  ") if part.strip())
