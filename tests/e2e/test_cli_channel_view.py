"""The channel's view from the command line (issue 41), on SQLite and PostgreSQL:
``herald list --to CHANNEL`` (the channel's agenda, to a member Slack says is in it, an
operator; refused to anyone else), ``--private``, a save's warnings on stderr and
``--strict``'s refusal, ``herald send-now`` on a one-off and a recurring schedule,
``herald export ics --to`` and ``herald import``'s duplicates; and the same commands
through a running API (HERALD_API_URL, the CLI's remote mode).

The commands run in process through the CLI's own handlers with the test's Herald (a
ManualClock; Slack, outside the machine, a recording channel that says who is in which
channel), as a Slack member or the terminal's admin; the refusals a person sees run
through ``main`` itself, as typed (exit status 2, one line on stderr, nothing made)."""

from __future__ import annotations

import asyncio
import io
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp.test_utils import TestClient, TestServer

from bot.api import add_api
from bot.cli.commands import Cli
from bot.cli.main import COMMANDS, handler, main
from bot.cli.parser import build_parser
from bot.cli.remote import run_remote
from bot.http_guard import HttpLimits, guarded_app
from core import db
from core.actors import Principal, Surface
from core.cases import Herald
from core.destinations import Destination
from core.errors import Conflict, InvalidInput, PermissionDenied
from core.settings import Settings, load_settings
from tests.conftest import START
from tests.support.channels import RecordingChannel

ROOT = "local:root-admin"  # HERALD_ADMINS of the conftest's settings
TA = "slack:TA"
BOB = Principal("slack:UBOB", TA, surface=Surface.CLI)
ANNA = Principal("slack:UANNA", TA, surface=Surface.CLI)
CARL = Principal("slack:UCARL", TA, surface=Surface.CLI)
GENERAL = "slack:C0GENERAL"
STANDUP = "Stand-up in 5 minutes"
ALIKE = "stand-up IN 5   minutes"  # the same text, as people read it


class SlackMembers(RecordingChannel):
    """Slack as Herald asks it who can see a channel: the members of C0GENERAL."""

    def __init__(self) -> None:
        super().__init__(kind="slack")
        self.asked: list[str] = []

    async def member_sees(self, destination: Destination, user: str, *, tenant: str) -> bool:
        self.asked.append(user)
        return tenant == TA and destination.target == "C0GENERAL" and user in ("UANNA", "UBOB")


@pytest.fixture
async def slack(herald: Herald) -> SlackMembers:
    found = SlackMembers()
    herald.channels["slack"] = found
    await herald.store.save_member(TA, BOB.id, now=START, display_name="Bob")
    return found


async def cli(herald: Herald, settings: Settings, *argv: str, actor: str | Principal = ROOT) -> str:
    """What ``herald <argv>`` prints on stdout, run in process by ``actor`` (a
    HeraldError is raised as the handler would print it)."""
    args = build_parser().parse_args(list(argv))
    out = io.StringIO()
    command = Cli(args, settings, out)
    command.actor = actor if isinstance(actor, Principal) else Principal(actor, surface=Surface.CLI)
    await handler(COMMANDS[args.command]).action.with_herald(command, herald)  # type: ignore[attr-defined]
    return out.getvalue()


#: What ``herald schedule`` says of the machine here (core.send_check), not of the save.
MACHINE = ("warning: No Slack token is configured", "warning: No dispatcher has reported")


def stderr(capsys: pytest.CaptureFixture[str]) -> list[str]:
    """The lines on stderr since the last read, but what is said of the machine."""
    return [x for x in capsys.readouterr().err.splitlines() if not x.startswith(MACHINE)]


SCHEDULE = ("schedule", "--to", GENERAL, "--when")


async def test_list_to_a_channel_is_its_agenda(
    herald: Herald, settings: Settings, slack: SlackMembers
) -> None:
    made = await cli(
        herald, settings, *SCHEDULE, "every weekday at 9am", "--text", STANDUP, "--quiet",
        actor=BOB,
    )  # fmt: skip
    standup = int(made)
    secret = await cli(
        herald, settings, *SCHEDULE, "tomorrow at 10am", "--text", "secret", "--private",
        "--json", actor=BOB,
    )  # fmt: skip
    assert json.loads(secret)["private"] is True

    lines = (await cli(herald, settings, "list", "--to", GENERAL, actor=ANNA)).splitlines()
    assert lines[0].split() == ["ID", "STATE", "AUTHOR", "WHEN", "NEXT", "TEXT"]
    assert len(lines) == 2 and "secret" not in lines[1]
    assert lines[1].split()[:3] == [str(standup), "active", "Bob"]
    assert "every weekday at 09:00" in lines[1] and "2026-03-03 09:00 UTC" in lines[1]
    assert lines[1].endswith(STANDUP)
    listed = json.loads(await cli(herald, settings, "list", "--to", GENERAL, "--json", actor=ANNA))
    assert [(s["id"], s["author"]) for s in listed] == [(standup, "Bob")]
    assert listed[0]["when"].startswith("every weekday at 09:00")

    # his own agenda has his private one too
    mine = json.loads(await cli(herald, settings, "list", "--to", GENERAL, "--json", actor=BOB))
    assert [s["id"] for s in mine] == [standup, json.loads(secret)["id"]]

    with pytest.raises(PermissionDenied) as refused:
        await cli(herald, settings, "list", "--to", GENERAL, actor=CARL)
    assert str(refused.value) == (
        "You can see what is scheduled into a channel you can see: "
        "slack:C0GENERAL is not one of them."
    )
    # the terminal's admin (Herald-wide) sees it without asking Slack, private ones not
    asked = len(slack.asked)
    admin = await cli(herald, settings, "list", "--to", GENERAL, "--json")
    assert [s["id"] for s in json.loads(admin)] == [standup]
    assert len(slack.asked) == asked
    # with --state, the list filter as before: Anna's own into it (none)
    assert "No schedules" in await cli(
        herald, settings, "list", "--to", GENERAL, "--state", "active", actor=ANNA
    )
    # a direct message has no agenda: the list filter as before
    assert "No schedules" in await cli(herald, settings, "list", "--to", "slack:@UBOB", actor=ANNA)


async def test_an_operator_reads_a_channels_agenda_and_a_webhook_keeps_the_list(
    herald: Herald, settings: Settings, slack: SlackMembers
) -> None:
    await cli(herald, settings, *SCHEDULE, "tomorrow at 9am", "--text", "ops note")
    await cli(herald, settings, "schedule", "--to", "log:", "--when", "tomorrow at 9am",
              "--text", "to the log")  # fmt: skip
    await herald.set_role(ROOT, "local:olga", "operator")
    olga = Principal("local:olga", surface=Surface.CLI)
    lines = (await cli(herald, settings, "list", "--to", GENERAL, actor=olga)).splitlines()
    assert lines[0].split() == ["ID", "STATE", "AUTHOR", "WHEN", "NEXT", "TEXT"]
    assert "local:root-admin" in lines[1] and lines[1].endswith("ops note")
    plain = (await cli(herald, settings, "list", "--to", "log:")).splitlines()
    assert plain[0].split() == ["ID", "STATE", "WHEN", "NEXT", "TO", "TEXT"]
    assert plain[1].endswith("to the log")
    assert "Nothing is scheduled into slack:C0OTHER." in await cli(
        herald, settings, "list", "--to", "slack:C0OTHER", actor=olga
    )


async def test_warnings_on_stderr_strict_refuses_and_edit_private(
    herald: Herald, settings: Settings, slack: SlackMembers, capsys: pytest.CaptureFixture[str]
) -> None:
    first = int(await cli(
        herald, settings, *SCHEDULE, "every weekday at 9am", "--text", STANDUP, "--quiet",
        actor=BOB,
    ))  # fmt: skip
    capsys.readouterr()
    with pytest.raises(Conflict) as refused:
        await cli(
            herald, settings, *SCHEDULE, "every weekday at 9:05am", "--text", ALIKE,
            "--strict", actor=ANNA,
        )  # fmt: skip
    assert str(refused.value).startswith(f"Bob already scheduled '{STANDUP}' into slack:C0GENERAL")
    assert str(refused.value).endswith(f"(id {first}).")
    assert json.loads(await cli(herald, settings, "list", "--json", actor=ANNA)) == []

    said = await cli(
        herald, settings, *SCHEDULE, "every weekday at 9:05am", "--text", ALIKE,
        actor=ANNA,
    )  # fmt: skip
    assert said.startswith("Schedule ")  # created, read back on stdout
    [warning] = stderr(capsys)
    assert warning == f"warning: {str(refused.value).rstrip('.')}"
    anna = json.loads(await cli(herald, settings, "list", "--json", actor=ANNA))
    assert len(anna) == 1

    # --json carries them too (and stderr still says them)
    made = json.loads(await cli(
        herald, settings, *SCHEDULE, "every weekday at 9am", "--text", STANDUP, "--json",
        actor=ANNA,
    ))  # fmt: skip
    assert [w["schedule_id"] for w in made["warnings"]] == [first, anna[0]["id"]]
    assert len(stderr(capsys)) == 2

    edited = await cli(herald, settings, "edit", str(first), "--private", "--json", actor=BOB)
    assert json.loads(edited)["private"] is True
    seen = json.loads(await cli(herald, settings, "list", "--to", GENERAL, "--json", actor=ANNA))
    assert first not in [s["id"] for s in seen]
    await cli(herald, settings, "edit", str(first), "--no-private", actor=BOB)
    seen = json.loads(await cli(herald, settings, "list", "--to", GENERAL, "--json", actor=ANNA))
    assert first in [s["id"] for s in seen]


async def test_a_crowded_channel_is_said_on_stderr(
    herald: Herald, settings: Settings, slack: SlackMembers, capsys: pytest.CaptureFixture[str]
) -> None:
    for i in range(40):
        await herald.create_schedule(
            ROOT, to=GENERAL, when="tomorrow at 9am", text=f"m{i}", duplicates="ignore"
        )
    capsys.readouterr()
    await cli(herald, settings, *SCHEDULE, "tomorrow at 9am", "--text", "me", actor=ANNA)
    [warning] = stderr(capsys)
    assert warning.startswith("warning: 41 messages are due into slack:C0GENERAL at 09:00")
    assert "Slack sends about 1 a second there" in warning


async def test_send_now_a_one_off_and_a_recurring_schedule(
    herald: Herald, settings: Settings, slack: SlackMembers
) -> None:
    once = await cli(herald, settings, *SCHEDULE, "in 2 hours", "--text", "once", "-q", actor=BOB)
    said = await cli(herald, settings, "send-now", once.strip(), actor=BOB)
    assert said == f"Schedule {once.strip()}: sending now.\n"
    [job] = await herald.store.schedule_jobs(int(once))
    assert job.due_at == START

    daily = (await cli(
        herald, settings, *SCHEDULE, "every day at 9am", "--text", "daily", "-q", actor=BOB,
    )).strip()  # fmt: skip
    with pytest.raises(Conflict, match="version"):
        await cli(herald, settings, "send-now", daily, "--version", "7", actor=BOB)
    with pytest.raises(PermissionDenied):
        await cli(herald, settings, "send-now", daily, actor=ANNA)
    said = await cli(herald, settings, "now", daily, "--version", "1", actor=BOB)  # the alias
    assert said == (
        f"Schedule {daily}: sending its Tue 03 Mar 2026 09:00 occurrence now; the next ones "
        "stay as planned.\n"
    )
    [job] = await herald.store.schedule_jobs(int(daily))
    assert job.due_at == START and job.occurrence_at is not None
    assert job.occurrence_at.isoformat() == "2026-03-03T09:00:00+00:00"
    shown = json.loads(await cli(herald, settings, "show", daily, "--json", actor=BOB))
    assert shown["next_run_at"] is not None

    await cli(herald, settings, "pause", daily, actor=BOB)
    with pytest.raises(InvalidInput) as paused:
        await cli(herald, settings, "send-now", daily, actor=BOB)
    assert str(paused.value) == f"Schedule {daily} is paused: resume it to send it now."


async def test_export_ics_to_a_channel(
    herald: Herald, settings: Settings, slack: SlackMembers, tmp_path: Path
) -> None:
    await cli(herald, settings, *SCHEDULE, "every weekday at 9am", "--text", STANDUP, actor=BOB)
    await cli(herald, settings, *SCHEDULE, "tomorrow at 9am", "--text", "secret", "--private",
              actor=BOB)  # fmt: skip
    calendar = await cli(herald, settings, "export", "ics", "--to", GENERAL, actor=ANNA)
    assert calendar.startswith("BEGIN:VCALENDAR")
    assert STANDUP in calendar and "secret" not in calendar
    assert "RRULE:FREQ=WEEKLY" in calendar
    path = tmp_path / "general.ics"
    await cli(herald, settings, "export", "ics", "--to", GENERAL, "-o", str(path), actor=ANNA)
    assert path.read_bytes() == calendar.encode()
    with pytest.raises(PermissionDenied):
        await cli(herald, settings, "export", "ics", "--to", GENERAL, actor=CARL)
    with pytest.raises(InvalidInput, match="not both"):
        await cli(herald, settings, "export", "ics", "--to", GENERAL, "--owner", BOB.id)


async def test_import_reports_duplicates_on_stderr(
    herald: Herald, settings: Settings, slack: SlackMembers, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    first = int(await cli(
        herald, settings, *SCHEDULE, "every weekday at 9am", "--text", STANDUP, "-q", actor=BOB
    ))  # fmt: skip
    lines = [
        {"to": GENERAL, "when": "every weekday at 9:05am", "text": STANDUP},
        {"to": GENERAL, "when": "every weekday at 11am", "text": STANDUP},
        {"to": "log:", "when": "tomorrow at 8am", "text": "Plants"},
        {"to": "log:", "when": "tomorrow at 8:10am", "text": "plants"},
    ]
    source = tmp_path / "lines.jsonl"
    source.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    capsys.readouterr()
    said = await cli(herald, settings, "import", str(source), actor=ANNA)
    assert said.startswith("Imported 4;")
    assert "2 imported with a duplicate" in said
    assert stderr(capsys) == [
        f"warning: line 1: Bob already scheduled '{STANDUP}' into slack:C0GENERAL every weekday "
        f"at 09:00 (UTC) (id {first})",
        "warning: line 4: line 3 of this import already schedules 'Plants' into log: once, "
        "Tue 3 Mar 2026 08:00 (UTC)",
    ]
    again = tmp_path / "again.jsonl"
    again.write_text(json.dumps(lines[2]) + "\n")
    report = json.loads(await cli(herald, settings, "import", str(again), "--json", actor=ANNA))
    assert report["imported"] == 1 and report["duplicates"] == 1
    [line] = report["duplicate_lines"]
    assert line["line"] == 1 and line["message"].startswith("line 1: You already scheduled")


# --- as typed ----------------------------------------------------------------------------


@pytest.fixture
def migrated(db_url: str) -> str:
    if db.backend(db_url) == "postgresql":
        db.upgrade(db_url)
    return db_url


def _as(db_url: str, user: str) -> Settings:
    return load_settings(
        HERALD_DATABASE_URL=db_url, HERALD_ADMINS="local:root-admin", HERALD_DEFAULT_TZ="UTC",
        USER=user, _env_file=None,
    )  # fmt: skip


def test_strict_as_typed_refuses_in_one_line_and_creates_nothing(
    migrated: str, capsys: pytest.CaptureFixture[str]
) -> None:
    alice = _as(migrated, "alice")
    argv = ["schedule", "--to", "log:", "--when", "tomorrow at 9am", "--text", "Stand-up"]
    assert main([*argv, "--quiet"], settings=alice) == 0
    first = capsys.readouterr().out.strip()
    assert main([*argv, "--strict"], settings=alice) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    assert err.startswith("herald: error: You already scheduled 'Stand-up' into log: ")
    assert err.rstrip().endswith(f"(id {first}).")
    assert main(["list", "--json"], settings=alice) == 0
    assert len(json.loads(capsys.readouterr().out)) == 1
    assert main([*argv, "--quiet"], settings=alice) == 0
    out, err = capsys.readouterr()
    assert out.strip().isdigit() and err.startswith("warning: You already scheduled")
    # a member at the terminal, in no Slack channel Herald can ask about, lists her own
    # schedules into a channel as before; its agenda as a calendar is refused in a sentence
    assert main(["schedule", "--to", GENERAL, "--when", "tomorrow at 9am", "--text", "mine"],
                settings=alice) == 0  # fmt: skip
    capsys.readouterr()
    assert main(["list", "--to", GENERAL], settings=alice) == 0
    header, row = capsys.readouterr().out.splitlines()
    assert header.split() == ["ID", "STATE", "WHEN", "NEXT", "TO", "TEXT"]
    assert row.endswith("mine")
    assert main(["export", "ics", "--to", GENERAL], settings=alice) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    assert "Herald cannot ask Slack whether local:alice sees slack:C0GENERAL" in err


# --- through the API (HERALD_API_URL) -----------------------------------------------------


@pytest.fixture
async def api(herald: Herald, slack: SlackMembers) -> AsyncIterator[str]:
    app = guarded_app()
    add_api(app, herald, HttpLimits.from_settings(herald.settings))
    async with TestClient(TestServer(app)) as c:
        yield str(c.make_url("")).rstrip("/")


async def remote(url: str, token: str, *argv: str) -> int:
    """``herald <argv>`` in the CLI's remote mode against ``url``, in a thread: the test's
    event loop serves the API meanwhile."""
    args = build_parser().parse_args(list(argv))
    return await asyncio.to_thread(run_remote, args, url, token)


async def test_the_same_through_the_api(
    herald: Herald, api: str, capsys: pytest.CaptureFixture[str]
) -> None:
    bob, anna, carl = [
        (await herald.create_token(ROOT, who.id, tenant=TA, scope="write")).secret
        for who in (BOB, ANNA, CARL)
    ]
    assert await remote(api, bob, *SCHEDULE, "every weekday at 9am", "--text", STANDUP, "-q") == 0
    first = capsys.readouterr().out.strip()
    assert await remote(api, bob, *SCHEDULE, "tomorrow at 10am", "--text", "secret",
                        "--private", "-q") == 0  # fmt: skip
    secret = capsys.readouterr().out.strip()

    assert await remote(api, anna, "list", "--to", GENERAL) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:3] == ["ID", "STATE", "AUTHOR"]
    assert len(lines) == 2 and lines[1].split()[:3] == [first, "active", "Bob"]
    assert await remote(api, carl, "list", "--to", GENERAL) == 2
    assert "is not one of them" in capsys.readouterr().err

    argv = (*SCHEDULE, "every weekday at 9:05am", "--text", STANDUP)
    assert await remote(api, anna, *argv, "--strict") == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("herald: error: Bob already scheduled")
    assert await remote(api, anna, *argv, "-q") == 0
    out, err = capsys.readouterr()
    assert out.strip().isdigit()
    assert err.startswith(f"warning: Bob already scheduled '{STANDUP}'")

    assert await remote(api, bob, "edit", secret, "--no-private", "--json") == 0
    assert json.loads(capsys.readouterr().out)["private"] is False
    assert await remote(api, bob, "send-now", first) == 0
    assert capsys.readouterr().out == (
        f"Schedule {first}: sending its Tue 03 Mar 2026 09:00 occurrence now; the next ones "
        "stay as planned.\n"
    )
    assert await remote(api, bob, "send-now", secret, "--version", "1") == 2
    assert "version" in capsys.readouterr().err
