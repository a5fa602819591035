"""The table of verbs (core/verbs.py) and the surfaces that read it agree."""

from __future__ import annotations

import argparse
import inspect
import subprocess
import sys
import textwrap
from typing import Any

import pytest

from core import verbs
from core.cases import Herald
from core.errors import InvalidInput
from core.verbs import VERBS, Verb


def _words(surface: str, chosen: tuple[Verb, ...]) -> set[str]:
    return {word for v in verbs.offered(surface, chosen) for word in v.words}


@pytest.mark.parametrize("v", VERBS, ids=lambda v: v.name)
def test_every_verb_names_a_use_case_it_can_call(v: Verb) -> None:
    method = getattr(Herald, v.method, None)
    assert method is not None and inspect.iscoroutinefunction(method), v.method
    params = inspect.signature(method).parameters
    assert list(params)[:2] == ["self", "actor_id"]
    if v.takes == "schedule_id+version":
        assert "expected_version" in params
    if v.takes in ("schedule_id", "schedule_id+version"):
        assert list(params)[2] == "schedule_id"
    if v.takes == "job_ids":
        assert list(params)[2] == "job_ids"
    for option in v.options:
        assert option in params, (v.name, option)
    assert v.who in ("owner", "operator", "admin")
    assert v.surfaces and v.surfaces <= verbs.SURFACES
    assert v.help and v.past


def test_every_word_names_one_verb() -> None:
    words = [word for v in VERBS for word in v.words]
    assert len(words) == len(set(words))
    assert all(w == w.lower() and w.strip() == w for w in words)


def test_verb_reads_names_and_aliases_and_refuses_others_with_a_hint() -> None:
    assert verbs.verb("delete") is verbs.verb("cancel") is verbs.verb(" Remove ")
    assert verbs.verb("skip").method == "skip_next"
    with pytest.raises(InvalidInput, match='Did you mean "pause"'):
        verbs.verb("paus")
    with pytest.raises(InvalidInput, match="not something Herald does"):
        verbs.verb("xyzzy")


async def test_perform_calls_the_verbs_use_case() -> None:
    calls: list[tuple[str, Any, tuple[Any, ...], dict[str, Any]]] = []

    class Fake:
        def __getattr__(self, name: str) -> Any:
            async def call(actor: Any, *args: Any, **kwargs: Any) -> str:
                calls.append((name, actor, args, kwargs))
                return name

            return call

    assert await verbs.perform(Fake(), "delete", "me", 12, expected_version=3) == (
        "cancel_schedule"
    )
    assert calls == [("cancel_schedule", "me", (12,), {"expected_version": 3})]


def test_the_cli_offers_what_the_table_says() -> None:
    from bot.cli.parser import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    commands = set(sub.choices)
    schedule_verbs = tuple(v for v in VERBS if v.takes not in ("job_ids", "approval_ids"))
    table = _words(verbs.CLI, schedule_verbs)
    assert table <= commands
    others = {w for v in schedule_verbs if not v.offered_on(verbs.CLI) for w in v.words}
    assert not (others & commands)
    dead = sub.choices["dead"]
    dsub = next(a for a in dead._actions if isinstance(a, argparse._SubParsersAction))
    assert set(dsub.choices) - {"list", "show"} == _words(verbs.CLI, verbs.DEAD_VERBS)
    for v in verbs.offered(verbs.CLI, verbs.STATE_VERBS):
        for word in v.words:
            assert parser.parse_args([word, "1"]).command == v.name
    approvals = sub.choices["approvals"]
    asub = next(a for a in approvals._actions if isinstance(a, argparse._SubParsersAction))
    assert set(asub.choices) - {"list"} == _words(verbs.CLI, verbs.APPROVAL_VERBS)


def test_slack_offers_what_the_table_says() -> None:
    from bot.slack import grammar

    schedule_verbs = tuple(v for v in VERBS if v.takes in ("schedule_id", "schedule_id+version"))
    table = _words(verbs.SLACK, schedule_verbs)
    assert set(grammar.VERBS) | set(grammar.ALIASES) == table
    for word in table:
        assert grammar.parse(f"{word} 7") == grammar.Act(verbs.verb(word).name, 7)
    assert "list" in grammar.KEYWORDS and verbs.verb("list").offered_on(verbs.SLACK)


def test_slacks_buttons_are_the_tables() -> None:
    from bot.slack import blocks, dead

    on_one = {
        v.name for v in verbs.offered(verbs.SLACK) if v.takes == "schedule_id+version" and v.label
    }
    assert {v.name for v in blocks.SCHEDULE_ACTIONS.values()} == on_one
    assert set(dead.DECISIONS.values()) == set(verbs.offered(verbs.SLACK, verbs.DECISIONS))
    [row] = [dead.decision_buttons([7])]
    labels = [e["text"]["text"] for e in row["elements"]]
    assert labels == [v.label for v in verbs.offered(verbs.SLACK, verbs.DECISIONS)]


def test_discord_offers_what_the_table_says() -> None:
    from bot.discord_bot import actions, components
    from bot.discord_bot.commands import ScheduleGroup

    group = ScheduleGroup()
    commands = {c.name for c in group.commands}
    schedule_verbs = tuple(v for v in VERBS if v.takes not in ("job_ids", "approval_ids"))
    assert _words(verbs.DISCORD, schedule_verbs) <= commands
    others = {w for v in schedule_verbs if not v.offered_on(verbs.DISCORD) for w in v.words}
    assert not (others & commands)
    for v in verbs.offered(verbs.DISCORD, verbs.STATE_VERBS):
        for word in v.words:
            command = group.get_command(word)
            assert command is not None and command.description.startswith(v.summary)
    on_one = [
        v.name for v in verbs.offered(verbs.DISCORD) if v.takes == "schedule_id+version" and v.label
    ]
    assert list(components.SCHEDULE_ACTIONS) == on_one
    dead = [v.name for v in verbs.offered(verbs.DISCORD, verbs.DECISIONS)]
    assert list(components.DEAD_ACTIONS) == list(actions.DECISIONS) == dead


def test_the_console_offers_what_the_table_says() -> None:
    from tui.screens import schedules

    actions = {b.action for b in schedules.SchedulesScreen.BINDINGS}  # type: ignore[union-attr]
    offered = set(schedules.BULK) | {
        a.removeprefix("bulk('").removesuffix("')") for a in actions if a.startswith("bulk(")
    }
    offered |= {a for a in actions if a in ("edit", "skip")}
    table = {
        v.name
        for v in verbs.offered(verbs.CONSOLE)
        if v.takes not in ("job_ids", "approval_ids") and v.name != "list"
    }
    assert offered == table
    for name in schedules.BULK:
        assert verbs.verb(name).offered_on(verbs.CONSOLE)


def test_the_console_offers_and_greys_out_dead_letter_actions_by_the_table() -> None:
    from core.cases.console import DEAD_ACTIONS
    from tui.screens import dead_letters, schedules

    table = verbs.offered(verbs.CONSOLE, verbs.DEAD_VERBS)
    assert DEAD_ACTIONS == tuple(v.name for v in table)
    screen = dead_letters.DeadLettersScreen
    actions = {b.action for b in screen.BINDINGS}  # type: ignore[union-attr]
    for v in table:
        assert {f"act('{v.name}')", f"act_all('{v.name}')"} <= actions
    gated = {f"{act}('{v.name}')" for v in table if v.who != "owner" for act in ("act", "act_all")}
    assert set(screen.GATED) == gated
    gated_schedules = {
        a
        for a in {b.action for b in schedules.SchedulesScreen.BINDINGS}  # type: ignore[union-attr]
        if (v := schedules._verb_of(a)) is not None and v.who != "owner"
    }
    assert set(schedules.SchedulesScreen.GATED) == gated_schedules


@pytest.mark.parametrize(
    ("who", "member", "operator", "admin"),
    [("owner", True, True, True), ("operator", False, True, True), ("admin", False, False, True)],
)
def test_who_decides_what_the_console_greys_out(
    who: str, member: bool, operator: bool, admin: bool
) -> None:
    from core.actors import Actor
    from core.cases import unavailable, verb_rule
    from core.models import Role

    for v in VERBS:
        if v.who != who:
            continue
        for role, allowed in (
            (Role.MEMBER, member),
            (Role.OPERATOR, operator),
            (Role.ADMIN, admin),
        ):
            why = unavailable(Actor("local:x", role, None), verb_rule(v))
            assert (why is None) is allowed, (v.name, role)
            assert why is None or why == v.refused


# A verb added to the table, on schedules (``archive``, with an alias) and on dead
# letters (``park``): every surface offers it without a change of its own.
_ADDED = textwrap.dedent(
    """
    from core import verbs

    archive = verbs.Verb(
        "archive", ("shelve",), "archive_schedule", "schedule_id+version", "admin",
        past="archived", help="Archive a schedule.", label="Archive", done="Archived",
        heading="Archived.", summary="Put a schedule away", refused="Admins archive.",
        key="v",
    )
    park = verbs.Verb(
        "park", (), "park_dead_letters", "job_ids", "operator", past="parked",
        help="set aside", label="Park", done="Parked", key="k", refused="Operators park.",
        told="Parked {count} dead letter(s).",
    )
    verbs.VERBS = (*verbs.VERBS, archive, park)
    verbs.STATE_VERBS = (*verbs.STATE_VERBS, archive)
    verbs.DEAD_VERBS = (*verbs.DEAD_VERBS, park)
    verbs.DECISIONS = (*verbs.DECISIONS, park)
    verbs._BY_WORD.update({w: v for v in (archive, park) for w in v.words})

    from bot.cli.parser import build_parser
    from bot.slack import blocks, commands, dead, grammar
    from bot.discord_bot import actions, components
    from bot.discord_bot.commands import ScheduleGroup
    from core.actors import Actor
    from core.cases import console
    from core.models import Role
    from tui.screens.dead_letters import DeadLettersScreen
    from tui.screens.schedules import SchedulesScreen

    parser = build_parser()
    assert parser.parse_args(["shelve", "3"]).command == "archive"
    assert parser.parse_args(["dead", "park", "4"]).dead_command == "park"
    assert grammar.parse("shelve 7") == grammar.Act("archive", 7)
    assert commands.DONE["archive"] == "Archived"
    assert "herald_archive" in blocks.SCHEDULE_ACTIONS
    assert dead.DECISIONS["herald_dead_park"] is park
    group = ScheduleGroup()
    assert group.get_command("archive").description == "Put a schedule away"
    assert group.get_command("shelve").description == "Put a schedule away (as archive)"
    assert "archive" in components.SCHEDULE_ACTIONS and "park" in components.DEAD_ACTIONS
    assert "park" in actions.DECISIONS and "park" in console.DEAD_ACTIONS
    member = Actor("local:m", Role.MEMBER, None)
    assert console.unavailable(member, "dead.park") == "Operators park."
    keys = {b.key: b.action for b in DeadLettersScreen.BINDINGS}
    assert keys["k"] == "act('park')" and keys["K"] == "act_all('park')"
    assert DeadLettersScreen.GATED["act('park')"] == "dead.park"
    keys = {b.key: b.action for b in SchedulesScreen.BINDINGS}
    assert keys["v"] == "bulk('archive')" and "V" not in keys  # no bulk use case for it
    assert SchedulesScreen.GATED["bulk('archive')"] == "schedule.archive"
    print("offered everywhere")
    """
)


def test_a_verb_added_to_the_table_is_offered_by_every_surface() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _ADDED], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "offered everywhere" in done.stdout
