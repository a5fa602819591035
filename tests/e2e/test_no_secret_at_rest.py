"""Providers that echo Herald's secrets in their errors leave no trace of them at rest.

A careless SMTP server quotes the password (and the ``AUTH PLAIN`` data) in its 535; a
Slack API quotes the bot token in its error code and in a non-JSON body, and leaks a user
token Herald never had. Delivered by the service's own composition (``bot.service``),
logged by the service's own logging, then read back from every table of the database and
through the real ``herald show`` / ``herald dead list`` / ``herald dead show``.
"""

from __future__ import annotations

import base64
import io
import json
import logging
import os
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from urllib.parse import quote

import pytest
import sqlalchemy as sa

from bot.logs import QUIETED_LOGGERS, configure_logging
from bot.service import drain
from core import db
from core.cases import Herald
from core.clock import ManualClock
from core.settings import load_settings
from core.store import Store
from tests.fakes import FakeSlack, FakeSMTP
from tests.fakes.http import Scripted
from tests.support.herald_cli import herald as run_herald

PASSWORD = "hunter2-Sm7p-pass"
TOKEN = "xoxb-1234567890-0987654321-AbCdEfGhIjKlMnOpQrStUvWx"
#: A credential no setting names: scrubbed by its shape.
FOREIGN = "xoxp-5555555555-6666666666-7777777777-0123456789abcdef0123456789abcdef"


def traces() -> list[str]:
    """Every form of the secrets a leak could take."""
    plain = base64.b64encode(f"\0herald\0{PASSWORD}".encode()).decode()
    return [
        PASSWORD,
        quote(PASSWORD, safe=""),
        base64.b64encode(PASSWORD.encode()).decode().rstrip("="),
        plain.rstrip("="),
        TOKEN,
        TOKEN.split("-", 1)[1],  # the token's body, whatever prefix is kept
        FOREIGN.split("-", 1)[1],
    ]


def assert_clean(text: str, where: str) -> None:
    for trace in traces():
        assert trace not in text, f"{trace!r} in {where}:\n{text}"


def database_dump(url: str) -> str:
    """Every row of every table, as text."""
    engine = db.make_sync_engine(url)
    try:
        meta = sa.MetaData()
        meta.reflect(engine)
        with engine.connect() as conn:
            return "\n".join(
                f"{table.name}: {row}"
                for table in meta.sorted_tables
                for row in conn.execute(sa.select(table))
            )
    finally:
        engine.dispose()


def cli(url: str, *args: str) -> str:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("HERALD_", "SLACK_"))},
        "HERALD_DATABASE_URL": url,
        "HERALD_ADMINS": "local:boss",
        "USER": "boss",
    }
    proc = run_herald(*args, env=env)
    assert proc.returncode == 0, proc.stderr
    assert_clean(proc.stderr, f"the stderr of herald {' '.join(args)}")
    return proc.stdout


@pytest.fixture
def captured_logs() -> Iterator[io.StringIO]:
    # configure_logging sets the root logger and the quieted libraries' loggers
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    quieted = {name: logging.getLogger(name).level for name in QUIETED_LOGGERS}
    out = io.StringIO()
    yield out
    for handler in list(root.handlers):
        root.removeHandler(handler)
    for handler in handlers:
        root.addHandler(handler)
    root.setLevel(level)
    for logger, was in quieted.items():
        logging.getLogger(logger).setLevel(was)


async def test_echoed_password_and_token_leave_no_trace(
    db_url: str, captured_logs: io.StringIO
) -> None:
    if db.backend(db_url) == "postgresql":
        db.upgrade(db_url)
    async with (
        FakeSMTP(
            user="herald", password="what-the-server-wants", auth_require_tls=False, echo_login=True
        ) as smtp,
        FakeSlack(token=TOKEN) as slack,
    ):
        slack.add_channel("C0123ABC")
        slack.script(
            # a permanent refusal whose code quotes the token and a user token
            Scripted(json={"ok": False, "error": f"invalid_auth: {TOKEN} (user {FOREIGN})"}),
            # a retryable non-JSON answer that quotes the Authorization header
            Scripted(body=f"Unauthorized. Authorization: Bearer {TOKEN}"),
            on="chat.postMessage",
        )
        settings = load_settings(
            _env_file=None,
            HERALD_DATABASE_URL=db_url,
            HERALD_ADMINS="local:boss",
            SLACK_BOT_TOKEN=TOKEN,
            SLACK_API_URL=slack.api_url,
            HERALD_SMTP_HOST="127.0.0.1",
            HERALD_SMTP_PORT=str(smtp.port),
            HERALD_SMTP_USER="herald",
            HERALD_SMTP_PASSWORD=PASSWORD,
            HERALD_SMTP_TLS="none",
            HERALD_MAX_ATTEMPTS="1",
            HERALD_LOG_LEVEL="DEBUG",
        )
        configure_logging(settings, stream=captured_logs)
        store = await Store.open(db_url)
        # a clock a minute behind: what it schedules "in 30 seconds" is due now
        herald = Herald(store, settings, ManualClock(datetime.now(UTC) - timedelta(minutes=1)))
        try:
            ids = [
                (await herald.create_schedule("local:boss", to=to, when="in 30 seconds", text=t))[
                    0
                ].id
                for to, t in (
                    ("email:ops@example.com", "Subject\nbody"),
                    ("slack:C0123ABC", "first"),
                    ("slack:C0123ABC", "second"),
                )
            ]
        finally:
            await store.close()

        summary = await drain(settings, retry_window=0)

    assert summary.as_dict()["dead"] == 3
    # the providers did echo the secrets, so the test is not empty
    assert len(slack.requests_to("chat.postMessage")) == 2

    dump = database_dump(db_url)
    assert_clean(dump, "the database")
    # what is left still says what went wrong
    assert "The mail server refused Herald's login: 535" in dump
    assert "Slack refused the message (invalid_auth" in dump
    # a non-JSON answer is told by what it was, never by its body (which echoed the token)
    assert "not JSON: check SLACK_API_URL" in dump

    logs = captured_logs.getvalue()
    assert "job dead" in logs
    assert_clean(logs, "the logs")

    # the views, as a person runs them: the full texts are in the JSON and `dead show`
    assert_clean(cli(db_url, "show", str(ids[0])), f"herald show {ids[0]}")
    listed = cli(db_url, "dead", "list")
    assert listed.count("\n") == 4, listed  # a header and the three dead letters
    header, *rows = listed.splitlines()
    at = header.index("TO")  # columns line up under their headings
    assert all(row[at:].startswith(("email:", "slack:")) for row in rows), listed
    assert_clean(listed, "herald dead list")
    as_json = cli(db_url, "dead", "list", "--json")
    assert_clean(as_json, "herald dead list --json")
    letters = {letter["schedule_id"]: letter for letter in json.loads(as_json)}
    assert "AUTH PLAIN ***" in letters[ids[0]]["last_error"]
    # the two Slack messages are sent at once: either may get the scripted refusal
    [refused] = [letters[i] for i in ids[1:] if "invalid_auth" in (letters[i]["last_error"] or "")]
    shown = cli(db_url, "dead", "show", str(refused["job_id"]))
    assert "Slack refused the message (invalid_auth: *** (user xoxp-***))" in shown
    assert "None" not in shown, shown  # a missing value reads "-"
    assert_clean(shown, "herald dead show")
