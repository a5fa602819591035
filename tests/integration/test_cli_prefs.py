"""``herald prefs`` (issue 37): a member shows, sets and clears their preferences in
words; bad input is one sentence and changes nothing; another member's and the tenant's
defaults are an admin's; and ``--priority`` on ``herald schedule``, ``edit`` and
``import`` (imports bulk by default), shown by ``list`` and ``show``. Run through the
CLI's own commands in process, on SQLite and PostgreSQL."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from bot.cli.commands import Cli
from bot.cli.main import COMMANDS, handler, main
from bot.cli.parser import build_parser
from core.actors import Principal, Surface
from core.cases import Herald, ImportRejected
from core.errors import HeraldError, InvalidInput, PermissionDenied
from core.settings import Settings, load_settings

ALICE, BOB, ADMIN = "local:alice", "local:bob", "local:root-admin"


async def cli(
    herald: Herald, settings: Settings, *argv: str, actor: str | Principal = ALICE
) -> str:
    """What ``herald <argv>`` prints, run as ``actor`` through the CLI's own command."""
    args = build_parser().parse_args(list(argv))
    out = io.StringIO()
    command = Cli(args, settings, out)
    command.actor = actor if isinstance(actor, Principal) else Principal(actor, surface=Surface.CLI)
    await handler(COMMANDS[args.command]).action.with_herald(command, herald)  # type: ignore[attr-defined]
    return out.getvalue()


async def own(herald: Herald, settings: Settings, actor: str = ALICE) -> dict[str, object]:
    shown = json.loads(await cli(herald, settings, "prefs", "--json", actor=actor))
    return dict(shown["own"])


def sentence(exc: pytest.ExceptionInfo[HeraldError]) -> str:
    text = str(exc.value)
    assert "\n" not in text and text.endswith("."), text
    return text


async def test_show_set_and_clear_in_words(herald: Herald, settings: Settings) -> None:
    shown = await cli(herald, settings, "prefs")
    assert shown.splitlines() == [
        "Your preferences (local:alice, zone UTC):",
        "  reminders go to:    where the author sends them (Herald's default)",
        "  who may remind you: anyone in the tenant (Herald's default)",
        "  blocked:            nobody",
        "  quiet hours:        none (Herald's default)",
    ]
    said = await cli(
        herald, settings, "prefs", "set", "--place", "email:alice@example.com",
        "--accept", "admins", "--block", "local:bob", "--quiet", "22:00-08:00",
        "--quiet-days", "sat,sun",
    )  # fmt: skip
    assert said.splitlines() == [
        "Saved.",
        "Your preferences (local:alice, zone UTC):",
        "  reminders go to:    email:alice@example.com (yours)",
        "  who may remind you: only admins (yours)",
        "  blocked:            local:bob",
        "  quiet hours:        22:00–08:00 and weekends, UTC time (yours)",
    ]
    assert await own(herald, settings) == {
        "place": "email:alice@example.com",
        "accept_from": "admins",
        "blocked": ["local:bob"],
        "quiet": {"window": "22:00-08:00", "days": ["sat", "sun"]},
        "quiet_text": "22:00–08:00 and weekends",
        "hold_channels": None,
        "notices": None,
    }
    assert await own(herald, settings, actor=BOB) == {  # Bob's are his own
        "place": None, "accept_from": None, "blocked": [], "quiet": None,
        "quiet_text": None, "hold_channels": None, "notices": None,
    }  # fmt: skip
    await cli(
        herald, settings, "prefs", "set", "--place", "none", "--unblock", "local:bob",
        "--quiet", "none", "--quiet-days", "none",
    )  # fmt: skip
    cleared = await own(herald, settings)
    assert cleared["place"] is None and cleared["blocked"] == [] and cleared["quiet"] is None
    assert cleared["accept_from"] == "admins"  # not named: unchanged


#: Bad options, and what the sentence refusing them says.
BAD = [
    (("--quiet", "25:00-08:00"), "not a time of day"),
    (("--quiet", "22:00"), "not a window"),
    (("--quiet-days", "caturday"), "not a day"),
    (("--place", "slack:C0CHANNEL"), "place of yours"),
    (("--block", "local:alice"), "Nobody can block themselves"),
]


async def test_bad_input_is_one_sentence_and_changes_nothing(
    herald: Herald, settings: Settings
) -> None:
    await cli(herald, settings, "prefs", "set", "--accept", "admins", "--quiet", "22:00-07:00")
    before = await own(herald, settings)
    for argv, fragment in BAD:
        with pytest.raises(InvalidInput) as exc:
            # a good change beside the bad one is not kept either
            await cli(herald, settings, "prefs", "set", "--accept", "self", *argv)
        assert fragment in sentence(exc)
    with pytest.raises(InvalidInput) as exc:
        await cli(herald, settings, "prefs", "set")
    assert "Say what to change: --place" in sentence(exc)
    with pytest.raises(InvalidInput) as exc:
        await cli(herald, settings, "prefs", "tenant", "set", actor=ADMIN)
    assert "--hold-channels" in sentence(exc) and "--place" not in str(exc.value)
    assert await own(herald, settings) == before


async def test_another_members_and_the_tenants_are_an_admins(
    herald: Herald, settings: Settings
) -> None:
    with pytest.raises(PermissionDenied) as exc:
        await cli(
            herald, settings, "prefs", "set", "--member", ALICE, "--accept", "self", actor=BOB
        )
    assert "Only an admin" in sentence(exc)
    with pytest.raises(PermissionDenied):
        await cli(herald, settings, "prefs", "--member", ALICE, actor=BOB)
    with pytest.raises(PermissionDenied) as exc:
        await cli(herald, settings, "prefs", "tenant", actor=BOB)
    assert "Only an admin" in sentence(exc)
    with pytest.raises(PermissionDenied):
        await cli(herald, settings, "prefs", "tenant", "set", "--quiet", "22:00-08:00", actor=BOB)

    said = await cli(
        herald, settings, "prefs", "set", "--member", ALICE, "--accept", "admins", actor=ADMIN
    )
    assert "local:alice's preferences" in said and "only admins (their own)" in said
    said = await cli(
        herald, settings, "prefs", "tenant", "set", "--quiet", "22:00-08:00",
        "--quiet-days", "weekends", "--block", "local:mallory", "--hold-channels", "yes",
        actor=ADMIN,
    )  # fmt: skip
    assert said.splitlines() == [
        "The tenant's defaults are saved.",
        "The tenant's defaults (a member's own preferences override them):",
        "  who may remind:     anyone in the tenant",
        "  blocked:            local:mallory",
        "  quiet hours:        22:00–08:00 and weekends, in each member's zone",
        "  channels held too:  yes",
    ]
    shown = json.loads(await cli(herald, settings, "prefs", "tenant", "--json", actor=ADMIN))
    assert shown["hold_channels"] is True and shown["blocked"] == ["local:mallory"]
    # Alice inherits the tenant's quiet hours and block; her own accept stays hers
    mine = await cli(herald, settings, "prefs")
    assert "22:00–08:00 and weekends, UTC time (the tenant's default)" in mine
    assert "local:mallory (the tenant's)" in mine
    assert "only admins (yours)" in mine


async def test_priority_through_schedule_edit_import_list_and_show(
    herald: Herald, settings: Settings, tmp_path: Path
) -> None:
    made = await cli(
        herald, settings, "schedule", "--to", "log:", "--when", "tomorrow at 9am",
        "--text", "page", "--priority", "urgent",
    )  # fmt: skip
    assert "  priority: urgent" in made
    urgent = int(made.split()[1].rstrip(":"))
    normal = int(
        await cli(
            herald,
            settings,
            "schedule",
            "--to",
            "log:",
            "--when",
            "tomorrow at 9am",
            "--text",
            "hello",
            "-q",
        )  # fmt: skip
    )
    lines = tmp_path / "lines.jsonl"
    lines.write_text(
        json.dumps({"to": "log:", "when": "tomorrow at 9am", "text": "digest"})
        + "\n"
        + json.dumps({"to": "log:", "when": "tomorrow at 9am", "text": "own", "priority": "urgent"})
        + "\n"
    )
    imported = json.loads(await cli(herald, settings, "import", str(lines), "--json"))
    bulk, own_line = imported["ids"]
    listed = await cli(herald, settings, "list")
    rows = {int(line.split()[0]): line for line in listed.splitlines()[1:]}
    assert "pending !urgent" in rows[urgent] and "pending !urgent" in rows[own_line]
    assert "pending bulk" in rows[bulk]
    assert "!urgent" not in rows[normal] and " bulk " not in rows[normal]
    assert "  priority: bulk" in await cli(herald, settings, "show", str(bulk))
    assert "  priority: normal" in await cli(herald, settings, "show", str(normal))
    await cli(herald, settings, "edit", str(bulk), "--priority", "normal")
    assert (
        json.loads(await cli(herald, settings, "show", str(bulk), "--json"))["priority"] == "normal"
    )
    # an import given its priority: lines without their own take it
    lines.write_text(json.dumps({"to": "log:", "when": "tomorrow at 10am", "text": "n"}) + "\n")
    again = json.loads(await cli(herald, settings, "import", str(lines), "--priority", "normal",
                                 "--json"))  # fmt: skip
    shown = json.loads(await cli(herald, settings, "show", str(again["ids"][0]), "--json"))
    assert shown["priority"] == "normal"


def test_a_refusal_exits_2_with_one_line(
    sqlite_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = load_settings(HERALD_DATABASE_URL=sqlite_url, _env_file=None)
    assert main(["prefs", "set", "--quiet", "25:00-08:00"], settings=settings) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and err.startswith("herald: error: ")
    assert main(["prefs", "tenant"], settings=settings) == 2
    assert "Only an admin" in capsys.readouterr().err
    assert main(["prefs"], settings=settings) == 0
    assert "Your preferences" in capsys.readouterr().out


async def test_a_blocked_author_is_refused_through_the_cli(
    herald: Herald, settings: Settings, tmp_path: Path
) -> None:
    """The use case's save-time sentence, as the CLI says it: herald schedule, import."""
    tenant = "slack:T0AAA"
    alice = Principal("slack:U0ALICE", tenant, surface=Surface.CLI)
    bob = Principal("slack:U0BOB", tenant, surface=Surface.CLI)
    await herald.set_role(ADMIN, alice.id, "member", tenant=tenant)  # she has used Herald
    await cli(herald, settings, "prefs", "set", "--block", "@U0BOB", actor=alice)
    reminder = ("schedule", "--to", "slack:@U0ALICE", "--when", "tomorrow at 9am", "--text")
    with pytest.raises(PermissionDenied) as exc:
        await cli(herald, settings, *reminder, "Hi", actor=bob)
    assert "does not accept reminders from you" in sentence(exc)
    lines = tmp_path / "lines.jsonl"
    lines.write_text(json.dumps({"to": "slack:@U0ALICE", "when": "tomorrow", "text": "Hi"}) + "\n")
    with pytest.raises(ImportRejected) as rejected:
        await cli(herald, settings, "import", str(lines), actor=bob)
    assert "does not accept reminders from you" in str(rejected.value.invalid)
    assert await herald.list_schedules(bob) == []
    assert "Schedule " in await cli(herald, settings, *reminder, "Mine", actor=alice)
