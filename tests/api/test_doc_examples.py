"""The documentation's HTTP API examples, run exactly as printed (issues 33 and 42):
the curl block of "## A tour with curl" is read from docs/surfaces/http-api-guide.md and
run by bash with the real ``curl`` and ``jq`` against a running ``herald run``, whose
Slack is a local fake knowing ``#deploys`` and ``#team``; ``$HERALD``, ``$TOKEN`` and
``$ADMIN_TOKEN`` are filled in (the block's own ``export`` line holds placeholders), and
the files it names (``holidays.ics``, ``schedules.jsonl``) are in the folder it runs in.
Every request must answer 2xx. The routing page's curl block runs the same way."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import subprocess
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, time, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from core.cases import Herald
from core.clock import ManualClock
from tests.api.conftest import ROOT, Service, start_service, stop_service, wait_for
from tests.fakes import FakeSlack

DOCS = Path(__file__).resolve().parents[2] / "docs"
API_GUIDE = DOCS / "surfaces" / "http-api-guide.md"
ROUTING = DOCS / "routing.md"
SLACK_TOKEN = "xoxb-readme-secret-token"
MEMBER = "local:ci"

HOLIDAYS = """BEGIN:VCALENDAR
VERSION:2.0
PRODID:-//herald tests//EN
BEGIN:VEVENT
UID:new-year@example.com
DTSTAMP:20260101T000000Z
DTSTART;VALUE=DATE:20270101
SUMMARY:New Year's Day
END:VEVENT
END:VCALENDAR
"""
SCHEDULES = "\n".join(
    json.dumps(line)
    for line in (
        {"to": "slack:#team", "when": "every monday at 10am", "text": "Planning", "key": "p-1"},
        {"to": "log:", "when": "tomorrow at 8am", "text": "Coffee", "key": "c-1"},
    )
)

#: Each request's status code and URL go to $WORK/codes; its body is printed, so that
#: ``ID=$(curl … | jq …)`` works as it does for a person.
WRAPPER = r"""
curl() {
  local n url code
  n=$(( $(wc -l < "$WORK/codes") + 1 ))
  for arg in "$@"; do case $arg in http*) url=$arg ;; esac; done
  code=$(command curl -o "$WORK/body.$n" -w '%{http_code}' "$@")
  printf '%s %s\n' "$code" "$url" >> "$WORK/codes"
  cat "$WORK/body.$n"
}
"""


def api_block(page: str) -> str:
    """The code block of "## A tour with curl" that calls the API with curl."""
    section = page.split("\n## A tour with curl\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"^```[a-z]*\n(.*?)^```", section, flags=re.S | re.M)
    [block] = [b for b in blocks if "curl " in b and "$HERALD/v1/schedules" in b]
    return str(block)


class ThreadedSlack:
    """The fake Slack on an event loop of its own thread: ``herald run`` (another
    process) asks it while this test waits on curl."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.fake = FakeSlack(token=SLACK_TOKEN)
        self.fake.add_channel("C0DEPLOYS", "deploys")
        self.fake.add_channel("C0TEAM", "team")
        self.fake.add_channel("C0RANDOM", "random")
        asyncio.run_coroutine_threadsafe(self.fake.start(), self.loop).result(30)

    def close(self) -> None:
        asyncio.run_coroutine_threadsafe(self.fake.stop(), self.loop).result(30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(30)
        self.loop.close()


@pytest.fixture
def slack() -> Iterator[FakeSlack]:
    threaded = ThreadedSlack()
    try:
        yield threaded.fake
    finally:
        threaded.close()


@pytest.fixture
def herald_run(slack: FakeSlack, tmp_path: Path) -> Iterator[Service]:
    svc = start_service(
        f"sqlite:///{tmp_path / 'herald.db'}",
        SLACK_BOT_TOKEN=SLACK_TOKEN,
        SLACK_API_URL=slack.api_url,
        HERALD_QUOTA_SCHEDULES_PER_MEMBER="20",
    )
    try:
        yield svc
    finally:
        stop_service(svc)


def _a_requested_dead_letter(service: Service, gone_url: str, token: str) -> int:
    """A delivery of the member's that died (a 410 receiver) and that they asked an
    admin to retry: what the API guide's reject example decides on."""

    async def already_due(herald: Herald) -> int:
        made, _ = await herald.create_schedule(
            MEMBER, to=gone_url, when="in 2 seconds", text="to a retired hook"
        )
        assert made.id is not None
        return made.id

    schedule_id = service.run(
        already_due, clock=ManualClock(datetime.now(UTC) - timedelta(minutes=1))
    )
    with service.client(token) as c:

        def dead() -> list[dict[str, Any]]:
            items = c.get("/v1/dead-letters").json()["items"]
            return [d for d in items if d["schedule_id"] == schedule_id]

        [letter] = wait_for(dead, what="the delivery to a 410 receiver dies")
        asked = c.post(f"/v1/dead-letters/{letter['job_id']}/retry")
        assert asked.json()["result"] == "requested", asked.text
        return int(letter["job_id"])


@pytest.mark.skipif(
    shutil.which("curl") is None or shutil.which("jq") is None or shutil.which("bash") is None,
    reason="the API guide's examples need curl, jq and bash",
)
def test_the_api_guide_examples_answer_as_printed(
    herald_run: Service, slack: FakeSlack, gone_url: str, tmp_path: Path
) -> None:
    token = herald_run.token(MEMBER)
    admin = herald_run.token(ROOT, scope="admin")
    job = _a_requested_dead_letter(herald_run, gone_url, token)
    work = tmp_path / "work"
    work.mkdir()
    (work / "codes").write_text("")
    (work / "holidays.ics").write_text(HOLIDAYS)
    (work / "schedules.jsonl").write_text(SCHEDULES + "\n")
    block = api_block(API_GUIDE.read_text(encoding="utf-8"))
    # the placeholders a person replaces with their own (the tokens, the address)
    lines = block.splitlines()
    assert lines[0].startswith("export HERALD=")
    script = WRAPPER + "\n".join(lines[1:]) + "\n"
    expected = len(re.findall(r"(?:^|\$\()curl ", block, flags=re.M))

    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": str(tmp_path),
        "WORK": str(work),
        "HERALD": herald_run.base,
        "TOKEN": token,
        "ADMIN_TOKEN": admin,
    }
    ran = subprocess.run(
        ["bash", "-c", script], cwd=work, env=env, capture_output=True, text=True, timeout=120
    )

    assert ran.returncode == 0, ran.stderr
    codes = (work / "codes").read_text().splitlines()
    answers = [(work / f"body.{n}").read_text() for n in range(1, len(codes) + 1)]
    assert len(codes) == expected >= 12, ran.stdout
    failed = [
        f"{url} answered {code}: {body}"
        for (code, url), body in zip((c.split(" ", 1) for c in codes), answers, strict=True)
        if not code.startswith("2")
    ]
    assert not failed, "\n".join(failed)
    # what a person reads in the answers: the channel named is kept as its id
    created = json.loads(answers[0])
    assert created["destination"] == "slack:C0DEPLOYS" and created["timezone"] == "Europe/Berlin"
    assert json.loads(answers[1])["occurrences"], answers[1]  # /v1/when read the phrase
    edited = [json.loads(a) for a in answers if '"Stand-up (10 min)"' in a]
    assert edited and edited[0]["id"] == created["id"]
    assert any(json.loads(a).get("result") == "rejected" and str(job) in a for a in answers)
    skipping = [json.loads(a) for a in answers if '"slack:C0TEAM"' in a]
    assert skipping and skipping[0]["text"] == "Stand-up"
    assert json.loads(answers[-1])["imported"] == 2
    assert len(slack.requests_to("conversations.list")) >= 2  # #deploys, #team (and the import)
    assert SLACK_TOKEN not in ran.stdout + ran.stderr


def test_a_repeated_request_naming_a_channel_answers_the_first_result(
    herald_run: Service, slack: FakeSlack
) -> None:
    body = {"to": "slack:#random", "when": "every friday at 4pm", "text": "Weekly notes"}
    key = {"Idempotency-Key": "notes-1"}
    with herald_run.client(herald_run.token(MEMBER)) as c:
        first = c.post("/v1/schedules", json=body, headers=key)
        again = c.post("/v1/schedules", json=body, headers=key)
        other = c.post("/v1/schedules", json={**body, "to": "slack:#team"}, headers=key)

    assert first.status_code == 201, first.text
    assert first.json()["destination"] == "slack:C0RANDOM"
    assert again.status_code == 200, again.text
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.json()["id"] == first.json()["id"]
    assert other.status_code == 422 and "different schedule" in other.json()["detail"]


def routing_block(page: str) -> str:
    """The curl block of the routing page's "## Several recipients" section."""
    section = page.split("\n## Several recipients", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"^```sh\n(.*?)^```", section, flags=re.S | re.M)
    [block] = [b for b in blocks if "curl " in b]
    return str(block)


@pytest.mark.skipif(
    shutil.which("curl") is None or shutil.which("bash") is None,
    reason="the routing page's examples need curl and bash",
)
def test_the_routing_page_examples_answer_as_printed(slack: FakeSlack, tmp_path: Path) -> None:
    """The routing section's requests, as printed: several recipients and a chain, each
    person's hour, then an edit adding and removing recipients of the first."""
    for channel, name in (("C0123OPS", "ops"), ("C0456DEV", "dev"), ("C0789QA", "qa")):
        slack.add_channel(channel, name)
    slack.add_person("U0123ABC")
    svc = start_service(
        f"sqlite:///{tmp_path / 'herald.db'}",
        SLACK_BOT_TOKEN=SLACK_TOKEN,
        SLACK_API_URL=slack.api_url,
    )
    try:

        async def people(herald: Herald) -> None:
            now = herald.clock.now()
            save = herald.store.save_member
            await save("local", "slack:U0123ABC", now=now, timezone="Europe/Berlin")
            await save("local", "email:bob@example.com", now=now, timezone="America/New_York")
            await save("local", "email:alice@example.com", now=now)

        svc.run(people)
        work = tmp_path / "work"
        work.mkdir()
        (work / "codes").write_text("")
        env = {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": str(tmp_path),
            "WORK": str(work),
            "HERALD": svc.base,
            "TOKEN": svc.token(ROOT, scope="admin"),
        }
        script = WRAPPER + "ID=1\n" + routing_block(ROUTING.read_text(encoding="utf-8"))
        ran = subprocess.run(
            ["bash", "-c", script], cwd=work, env=env, capture_output=True, text=True, timeout=120
        )
    finally:
        stop_service(svc)

    assert ran.returncode == 0, ran.stderr
    codes = [c.split(" ", 1)[0] for c in (work / "codes").read_text().splitlines()]
    answers = [json.loads((work / f"body.{n}").read_text()) for n in range(1, len(codes) + 1)]
    assert codes == ["201", "201", "200"], answers
    first, zoned, edited = answers
    assert [r["to"] for r in first["recipients"]] == [
        ["slack:C0123OPS"],
        ["slack:C0456DEV"],
        ["slack:@U0123ABC", "email:alice@example.com"],
    ]
    # each person's 9am of the next run's day, in UTC (the hours the page prints in
    # winter: 08:00Z and 14:00Z)
    day = datetime.fromisoformat(zoned["next_run_at"]).astimezone(ZoneInfo("UTC")).date()
    utc = [
        datetime.combine(day, time(9), ZoneInfo(zone)).astimezone(UTC).strftime("%H:%MZ")
        for zone in ("Europe/Berlin", "America/New_York")
    ]
    assert zoned["recipient_times"] == (
        f"slack:@U0123ABC 09:00 Europe/Berlin = {utc[0]}, "
        f"email:bob@example.com 09:00 America/New_York = {utc[1]}"
    )
    assert [r["to"][0] for r in edited["recipients"]] == [
        "slack:C0123OPS",
        "slack:@U0123ABC",
        "slack:C0789QA",
    ]
