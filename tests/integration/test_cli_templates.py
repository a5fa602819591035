"""``herald template add|edit|show|list|preview|remove`` and ``herald schedule|edit
--template`` (issue 39), on SQLite and PostgreSQL.

The commands run in process through the CLI's own handlers with the test's Herald (a
ManualClock, a drained dispatcher against recording channels), as the terminal's admin
or as a member of a Slack workspace; refusals run through ``main`` itself, as typed, to
hold them to one line on stderr, exit status 2 and nothing changed."""

from __future__ import annotations

import io
import json
import random
from datetime import timedelta
from pathlib import Path

import pytest

from bot.cli.commands import Cli
from bot.cli.main import COMMANDS, handler, main
from bot.cli.parser import build_parser
from bot.cli.templates import KINDS
from core import db, render
from core.actors import Principal, Surface
from core.cases import Herald
from core.clock import ManualClock
from core.dispatcher import Dispatcher, DispatcherConfig
from core.errors import Conflict, InvalidInput, PermissionDenied
from core.settings import Settings, load_settings
from tests.support.channels import RecordingChannel

ADMIN = "local:root-admin"  # HERALD_ADMINS of the conftest's settings
ANNA = Principal("slack:UANNA", "slack:TA", surface=Surface.CLI)  # a member of TA
ADA = Principal("slack:UADA", "slack:TA", platform_admin=True, surface=Surface.CLI)
DEPLOY = "Deploy {{ service }} v{{ version }} on {{ date | date: '%A' }} (#{{ schedule.id }})"
DISCORD = "discord:123456789012345678"


async def cli(
    herald: Herald, settings: Settings, *argv: str, actor: str | Principal = ADMIN
) -> str:
    """What ``herald <argv>`` prints, run in process by ``actor`` (a HeraldError is
    raised as the handler would print it)."""
    args = build_parser().parse_args(list(argv))
    out = io.StringIO()
    command = Cli(args, settings, out)
    command.actor = actor if isinstance(actor, Principal) else Principal(actor, surface=Surface.CLI)
    await handler(COMMANDS[args.command]).action.with_herald(command, herald)  # type: ignore[attr-defined]
    return out.getvalue()


async def add_deploy(herald: Herald, settings: Settings, *more: str) -> str:
    return await cli(
        herald, settings, "template", "add", "deploy", "--text", DEPLOY,
        "--var", "service", "--var", "version:number", *more,
    )  # fmt: skip


def dispatcher(herald: Herald, log: RecordingChannel, discord: RecordingChannel) -> Dispatcher:
    config = DispatcherConfig(max_attempts=2, backoff_base=5, backoff_cap=30, max_lateness=3600)
    return Dispatcher(
        herald.store,
        {"log": log, "discord": discord},
        clock=herald.clock,
        config=config,
        rng=random.Random(7),
    )


def test_the_grammar_knows_every_kind() -> None:
    assert KINDS == tuple(render.KINDS)


async def test_add_show_list_preview_edit_and_remove(
    herald: Herald, settings: Settings, tmp_path: Path
) -> None:
    source = tmp_path / "deploy.liquid"
    source.write_text(DEPLOY + "\n", encoding="utf-8")
    said = await cli(
        herald, settings, "template", "add", "deploy", "--file", str(source),
        "--var", "service", "--var", "version:number", "--description", "release note",
    )  # fmt: skip
    assert said.splitlines()[0] == (
        "Template deploy saved as version 1; variables: service (text), version (number)."
    )
    listed = (await cli(herald, settings, "template", "list")).splitlines()
    assert listed[0].split() == ["NAME", "VERSION", "VARIABLES", "USED", "BY", "DESCRIPTION"]
    assert listed[1].split() == ["deploy", "1", "service:text,", "version:number", "0", "release",
                                 "note"]  # fmt: skip
    preview = await cli(herald, settings, "template", "preview", "deploy", "--data", "service=api")
    day = herald.clock.now().strftime("%A")
    assert preview == f"Deploy api v{{{{ version }}}} on {day} (#123)\n"

    made = json.loads(
        await cli(
            herald,
            settings,
            "schedule",
            "--to",
            "log:",
            "--when",
            "every day at 9am",
            "--template",
            "deploy",
            "--data",
            "service=api",
            "--data",
            "version=1.4",
            "--json",
        )  # fmt: skip
    )
    first = made["id"]
    assert made["template"] == {
        "name": "deploy",
        "version": 1,
        "data": {"service": "api", "version": 1.4},
        "data_by_recipient": {},
    }
    shown = (await cli(herald, settings, "template", "show", "deploy")).splitlines()
    assert shown[0] == "Template deploy (version 1)"
    assert "  variables: service (text), version (number)" in shown
    assert f"    {DEPLOY}" in shown
    assert any(line.startswith("    v1 ") and "by local:root-admin  (current)" in line
               for line in shown)  # fmt: skip
    assert shown[-1] == f"  used by 1 schedule: #{first}"

    # an edit that would leave the schedule without a value is refused, naming it
    region = ("--text", "{{ service }} {{ version }} in {{ region }}", "--var", "service",
              "--var", "version:number", "--var", "region")  # fmt: skip
    with pytest.raises(InvalidInput, match=rf"would break 1 schedule using it \(#{first}\)"):
        await cli(herald, settings, "template", "edit", "deploy", *region)
    assert (
        json.loads(await cli(herald, settings, "template", "show", "deploy", "--json"))["version"]
        == 1
    )
    with pytest.raises(Conflict, match="is at version 1, not 7"):
        await cli(herald, settings, "template", "edit", "deploy", *region, "--if-version", "7")
    kept = await cli(
        herald, settings, "template", "edit", "deploy", *region, "--force-version",
        "--if-version", "1",
    )  # fmt: skip
    assert kept.startswith(
        f"Version 2 of template deploy saved; kept #{first} on version 1 because: "
        "Template 'deploy' needs a value for 'region'"
    )
    second = json.loads(
        await cli(
            herald,
            settings,
            "schedule",
            "--to",
            "log:",
            "--when",
            "every day at 9am",
            "--template",
            "deploy",
            "--data",
            "service=web",
            "--data",
            "version=2",
            "--data",
            "region=eu",
            "--json",
        )  # fmt: skip
    )["id"]
    moved = await cli(
        herald, settings, "template", "edit", "deploy", "--text",
        "Deploying {{ service }} {{ version }} in {{ region }}",
    )  # fmt: skip
    assert moved == f"Version 3 of template deploy saved; moved 1 schedule #{second}.\n"
    described = await cli(herald, settings, "template", "edit", "deploy", "--description", "new")
    assert described == (
        "Template deploy's description saved; its text is unchanged (still version 3).\n"
    )
    shown = (await cli(herald, settings, "template", "show", "deploy")).splitlines()
    assert shown[-1] == f"  used by 2 schedules: #{first} (v1), #{second}"
    versions = json.loads(await cli(herald, settings, "template", "show", "deploy", "--json"))
    assert [v["version"] for v in versions["versions"]] == [3, 2, 1]
    assert versions["used_by"] == [first, second] and versions["description"] == "new"
    old = await cli(herald, settings, "template", "preview", "deploy", "--version", "1",
                    "--data", "service=a", "--data", "version=3", "--json")  # fmt: skip
    assert json.loads(old)["text"] == f"Deploy a v3 on {day} (#123)"

    with pytest.raises(InvalidInput, match=rf"used by 2 schedules \(#{first}, #{second}\)"):
        await cli(herald, settings, "template", "remove", "deploy")
    for schedule_id in (first, second):
        await cli(herald, settings, "cancel", str(schedule_id))
    removed = await cli(herald, settings, "template", "remove", "deploy")
    assert removed == "Template deploy is removed, with its 3 versions.\n"
    assert json.loads(await cli(herald, settings, "template", "list", "--json")) == []
    assert "No templates yet" in await cli(herald, settings, "template", "list")


async def test_a_templated_schedule_sends_its_text_filled_in_and_show_says_so(
    herald: Herald, settings: Settings, clock: ManualClock
) -> None:
    await add_deploy(herald, settings)
    said = await cli(
        herald, settings, "schedule", "--to", "log:", "--to", DISCORD, "--when", "in 1 hour",
        "--template", "deploy", "--data", "service=api", "--data", "version=1.4",
        "--data-for", DISCORD, "service=bot",
    )  # fmt: skip
    lines = said.splitlines()
    schedule_id = int(lines[0].split()[1].rstrip(":"))
    assert "  template: deploy v1" in lines
    assert "  data:     service=api, version=1.4" in lines
    assert f"  data for {DISCORD}: service=bot" in lines
    log, discord = RecordingChannel(), RecordingChannel(kind="discord")
    clock.advance(timedelta(hours=1))
    await dispatcher(herald, log, discord).drain(retry_window=60)
    day = clock.now().strftime("%A")
    [to_log] = log.deliveries
    [to_discord] = discord.deliveries
    assert to_log.body == f"Deploy api v1.4 on {day} (#{schedule_id})"
    assert to_discord.body == f"Deploy bot v1.4 on {day} (#{schedule_id})"
    shown = (await cli(herald, settings, "show", str(schedule_id))).splitlines()
    assert "  template: deploy v1" in shown
    assert "  data:     service=api, version=1.4" in shown
    assert f"  data for {DISCORD}: service=bot" in shown
    assert f"  template text: {DEPLOY}" in shown
    assert any(line.startswith("  next message:  Deploy api v1.4 on ") for line in shown)
    assert any(f'sent "{to_log.body}"' in line for line in shown)  # the text as sent
    record = json.loads(await cli(herald, settings, "show", str(schedule_id), "--json"))
    assert record["template"]["name"] == "deploy"
    assert list(record["template"]["data_by_recipient"].values()) == [{"service": "bot"}]


async def test_edit_moves_a_schedule_onto_a_template_and_back_off(
    herald: Herald, settings: Settings
) -> None:
    await add_deploy(herald, settings)
    made = await cli(herald, settings, "schedule", "--to", "log:", "--when", "every day at 9am",
                     "--text", "plain", "--quiet")  # fmt: skip
    schedule_id = made.strip()
    edited = await cli(
        herald, settings, "edit", schedule_id, "--template", "deploy",
        "--data", "service=api", "--data", "version=2",
    )  # fmt: skip
    assert "  template: deploy v1" in edited.splitlines()
    again = await cli(herald, settings, "edit", schedule_id, "--data", "service=web",
                      "--data", "version=3")  # fmt: skip
    assert "  data:     service=web, version=3" in again.splitlines()
    with pytest.raises(
        InvalidInput, match=r"stop using it \(template none\) and give the new text"
    ):
        await cli(herald, settings, "edit", schedule_id, "--text", "words")
    off = await cli(herald, settings, "edit", schedule_id, "--template", "none", "--text", "own")
    assert "template:" not in off
    record = json.loads(await cli(herald, settings, "show", schedule_id, "--json"))
    assert (record["template"], record["text"]) == (None, "own")


def _refused(settings: Settings, capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """``herald <argv>`` as typed: exit status 2, nothing on stdout, one line on stderr."""
    capsys.readouterr()
    assert main(list(argv), settings=settings) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and err.startswith("herald: error: "), err
    return err.removeprefix("herald: error: ").rstrip("\n")


def _json(settings: Settings, capsys: pytest.CaptureFixture[str], *argv: str) -> object:
    capsys.readouterr()
    assert main([*argv, "--json"], settings=settings) == 0
    return json.loads(capsys.readouterr().out)


def _as(db_url: str, user: str) -> Settings:
    return load_settings(
        HERALD_DATABASE_URL=db_url, HERALD_ADMINS="local:root-admin", HERALD_DEFAULT_TZ="UTC",
        USER=user, _env_file=None,
    )  # fmt: skip


@pytest.fixture
def migrated(db_url: str) -> str:
    if db.backend(db_url) == "postgresql":  # the conftest's store fixture does this itself
        db.upgrade(db_url)
    return db_url


SCHEDULE = ("schedule", "--to", "log:", "--when", "2099-01-01 08:00")


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (
            (*SCHEDULE, "--template", "deploy", "--data", "service=api", "--data", "version=1",
             "--data", "region=eu"),
            "Template 'deploy' has no variable 'region' (its variables: service, version).",
        ),
        (
            (*SCHEDULE, "--template", "deploy", "--data", "service=api", "--data", "version=1.x"),
            "'version' must be a number, not '1.x'.",
        ),
        (
            (*SCHEDULE, "--template", "deploy", "--data", "service=api"),
            "Template 'deploy' needs a value for 'version'",
        ),
        (
            (*SCHEDULE, "--template", "deploy", "--text", "hi", "--data", "service=api"),
            "Give --text or --template, not both: the template is the message.",
        ),
        (SCHEDULE, "Give the message with --text, or a template with --template NAME."),
        (
            (*SCHEDULE, "--text", "hi", "--data", "service=api"),
            "--data fills in a template's variables: name it with --template.",
        ),
        (
            (*SCHEDULE, "--template", "deploy", "--data", "service"),
            "--data takes NAME=VALUE (e.g. --data service=api), not 'service'.",
        ),
        (
            (*SCHEDULE, "--template", "deploy", "--data", "service=a", "--data", "version=1",
             "--data-for", "log:elsewhere", "service=b"),
            "Data is given for log:elsewhere, which is not one of this schedule's recipients",
        ),
        (
            (*SCHEDULE, "--template", "nope", "--data", "service=api"),
            "There is no template named 'nope' here",
        ),
        (
            ("template", "add", "other", "--text", "Hi {{ who }}"),
            "The template uses {{ who }}, which is not declared (declared: none)",
        ),
        (
            ("template", "add", "other", "--text", "Hi {{ who }}", "--var", "who:colour"),
            "Variable 'who' has kind 'colour': use text, number, date.",
        ),
        (
            ("template", "add", "Bad Name", "--text", "Hi"),
            "A template's name is 1 to 64 lower-case letters, digits, - and _",
        ),
        (("template", "add", "other"), "Give the template's text with --text, or --file PATH"),
        (
            ("template", "add", "other", "--text", "Hi", "--blocks", "[1"),
            "--blocks is not valid JSON",
        ),
        (
            ("template", "add", "deploy", "--text", "Hi"),
            "There is a template named 'deploy' already",
        ),
        (("template", "edit", "deploy"), "Nothing to change"),
        (("template", "show", "nope"), "There is no template named 'nope' here"),
        (("template", "preview", "deploy", "--version", "9"), "has no version 9"),
    ],
)  # fmt: skip
def test_bad_input_is_one_sentence_and_changes_nothing(
    migrated: str, capsys: pytest.CaptureFixture[str], argv: tuple[str, ...], said: str
) -> None:
    admin = _as(migrated, "root-admin")
    assert main(["template", "add", "deploy", "--text", DEPLOY, "--var", "service",
                 "--var", "version:number"], settings=admin) == 0  # fmt: skip
    before = _json(admin, capsys, "template", "list")
    assert said in _refused(admin, capsys, *argv)
    assert _json(admin, capsys, "list") == []
    assert _json(admin, capsys, "template", "list") == before


def test_a_member_uses_templates_and_cannot_manage_them(
    migrated: str, capsys: pytest.CaptureFixture[str]
) -> None:
    admin, member = _as(migrated, "root-admin"), _as(migrated, "alice")
    for argv in (
        ("template", "add", "hello", "--text", "Hello {{ who }}", "--var", "who"),
        ("template", "remove", "hello"),
    ):
        said = _refused(member, capsys, *argv)
        assert said == "Only operators and admins add, edit and remove templates; members use them."
    assert main(["template", "add", "hello", "--text", "Hello {{ who }}", "--var", "who"],
                settings=admin) == 0  # fmt: skip
    assert "Only operators and admins" in _refused(
        member, capsys, "template", "edit", "hello", "--text", "Hi {{ who }}"
    )
    [listed] = _json(member, capsys, "template", "list")  # type: ignore[misc]
    assert (listed["name"], listed["version"], listed["used_by"]) == ("hello", 1, 0)
    made = _json(member, capsys, *SCHEDULE, "--template", "hello", "--data", "who=team")
    assert made["template"]["data"] == {"who": "team"}  # type: ignore[index]
    shown = _json(member, capsys, "template", "show", "hello")
    assert shown["used_by"] == [made["id"]]  # type: ignore[index]


async def test_a_workspaces_templates_follow_its_roles_and_stay_in_it(
    herald: Herald, settings: Settings
) -> None:
    """Acting as members of a Slack workspace (the terminal itself acts in ``local``)."""
    with pytest.raises(PermissionDenied):
        await cli(herald, settings, "template", "add", "standup", "--text", "Stand-up!",
                  actor=ANNA)  # fmt: skip
    await cli(herald, settings, "template", "add", "standup", "--text", "Stand-up!", actor=ADA)
    assert "standup" in await cli(herald, settings, "template", "list", actor=ANNA)
    assert json.loads(await cli(herald, settings, "template", "list", "--json")) == []
    preview = await cli(herald, settings, "template", "preview", "standup", actor=ANNA)
    assert preview == "Stand-up!\n"


async def test_the_text_of_a_template_may_come_from_standard_input(
    herald: Herald, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("Hello {{ who }}\nsee you at {{ time }}\n"))
    await cli(herald, settings, "template", "add", "hello", "--file", "-", "--var", "who")
    record = json.loads(await cli(herald, settings, "template", "show", "hello", "--json"))
    assert record["text"] == "Hello {{ who }}\nsee you at {{ time }}"  # the last newline dropped
